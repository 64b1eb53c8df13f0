"""`Robot`: a blocking Python API over a running mango stack, as nav2_simple_commander is
over Nav2.

Every tool the stack offers is one call: `execute_chunk`, `execute_motion`, `run_policy` wait
for their outcome (`mango.client.tasks.Outcome`); `start_chunk`, `start_motion`,
`start_policy` return an `ActionTask` to poll (`done()`, `feedback`), cancel or wait on.
`halt`, `load_oracle`, `reset_oracle`, `finish_oracle` and `wait_for_task_verdict` talk to the
control and oracle nodes.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rcl_interfaces.srv import GetParameters
from rclpy.node import Node
from rclpy.parameter import parameter_value_to_python
from std_srvs.srv import Trigger

from mango.client.session import VerdictFollower, request_reply, spun_node, wait_until
from mango.client.tasks import POLL, ActionTask, Outcome, TaskResult
from mango.control.motion import MotionCommand
from mango.control.trajectory import JointTrajectory, chunk_to_trajectory
from mango.nodes.actions import ActionClient
from mango.nodes.common import holds_within
from mango.ros.motion_msg import command_to_msg
from mango.ros.trajectory_msg import chunk_goal
from mango_ros.action import ExecuteChunk, ExecuteMotion, RunPolicy
from mango_ros.msg import StepVerdict, TaskVerdict
from mango_ros.srv import Halt, LoadOracle, ResetScene

FR3_JOINTS: tuple[str, ...] = tuple(f"fr3_joint{i}" for i in range(1, 8))


@dataclass(frozen=True)
class Reply:
    """A service's answer: whether it did what was asked, and what it said."""

    success: bool
    message: str


@dataclass(frozen=True)
class OracleLoaded:
    success: bool
    message: str
    problems: tuple[str, ...]
    num_actions: int


@dataclass(frozen=True)
class SceneReset:
    success: bool
    message: str
    instruction: str  # the scene's task


@dataclass(frozen=True)
class RobotNames:
    """Action, service and topic names, relative to the robot's namespace."""

    execute_chunk: str = "execute_chunk"
    execute_motion: str = "execute_motion"
    halt: str = "halt"
    run_policy: str = "run_policy"
    oracle_node: str = "oracle_node"
    sim_node: str = "sim_node"


class Robot:
    """The stack's tools as blocking calls, on a node someone spins (or `Robot.connect()`).

    `watch` is called on every wait (e.g. a stack session's check that raises when one of its
    nodes died), so a caller learns at once that no answer will come.
    """

    def __init__(self, node: Node, namespace: str = "", *, names: RobotNames | None = None,
                 watch: Callable[[], None] | None = None,
                 on_step: Callable[[StepVerdict], None] | None = None,
                 server_timeout: float = 10.0, server_lost_after: float = 2.0) -> None:
        self.node = node
        self.namespace = "/" + namespace.strip("/") if namespace.strip("/") else ""
        self.names = names or RobotNames()
        self.server_timeout = server_timeout  # s a goal or a call waits for its server
        self.server_lost_after = server_lost_after  # s a server may vanish mid-goal
        self._watch = watch
        self._actions: dict[str, ActionClient] = {}
        self._services: dict[str, Any] = {}
        self._tasks: list[ActionTask] = []
        self._answered: set[str] = set()  # services that have answered this client
        self._lock = threading.Lock()
        self.verdicts = VerdictFollower(node, self.namespace, on_step=on_step)

    @classmethod
    @contextmanager
    def connect(cls, namespace: str = "", **kwargs: Any) -> Iterator[Robot]:
        """A robot with its own ROS context, client node and executor thread."""
        with spun_node("mango_robot") as node:
            yield cls(node, namespace, **kwargs)

    # ------------------------------------------------------------------ plumbing

    def name(self, relative: str) -> str:
        return f"{self.namespace}/{relative}"

    def check(self) -> None:
        if self._watch is not None:
            self._watch()

    def _wait(self, pred: Callable[[], Any], timeout: float, what: str) -> Any:
        return wait_until(pred, timeout, what, self.check, POLL)

    def wait_quietly(self, pred: Callable[[], Any], timeout: float) -> bool:
        """Like `_wait`, but says whether it held instead of raising."""
        return holds_within(pred, timeout, self.check, POLL)

    def _action(self, action: type, relative: str) -> ActionClient:
        with self._lock:
            if relative not in self._actions:
                self._actions[relative] = ActionClient(self.node, action, self.name(relative))
            return self._actions[relative]

    def _client(self, srv: type, relative: str) -> Any:
        """This robot's one client of a service, made on first use."""
        with self._lock:
            if relative not in self._services:
                self._services[relative] = self.node.create_client(srv, self.name(relative))
            return self._services[relative]

    def _call(self, srv: type, relative: str, request: Any, timeout: float,
              repeatable: bool = True) -> Any:
        """The service's reply. A `repeatable` request (the same effect when done twice) is
        sent again while this client was never answered (see `request_reply`)."""
        client = self._client(srv, relative)
        # The service's discovery may take as long as a server's (a loaded machine, a node's
        # participant re-announced); `timeout` is the reply's.
        self._wait(client.service_is_ready, max(timeout, self.server_timeout),
                   f"service {self.name(relative)}")
        reply = request_reply(client, request, timeout, f"the reply of {self.name(relative)}",
                              self.check, repeatable and relative not in self._answered)
        self._answered.add(relative)
        return reply

    def wait_for_servers(self, *tools: str, timeout: float = 30.0) -> None:
        """Wait until the named tools' servers are up: "execute_chunk", "execute_motion",
        "run_policy" (actions), "halt", "oracle" (services)."""
        for tool in tools or ("execute_chunk", "execute_motion"):
            if tool in {"execute_chunk", "execute_motion", "run_policy"}:
                action = {"execute_chunk": ExecuteChunk, "execute_motion": ExecuteMotion,
                          "run_policy": RunPolicy}[tool]
                relative = getattr(self.names, tool)
                client = self._action(action, relative)
                self._wait(client.server_is_ready, timeout, f"the {tool} action server")
                self._ping(relative, timeout)
            elif tool in {"halt", "oracle"}:
                srv, relative = ((Halt, self.names.halt) if tool == "halt" else
                                 (LoadOracle, f"{self.names.oracle_node}/load_oracle"))
                client = self.node.create_client(srv, self.name(relative))
                try:
                    self._wait(client.service_is_ready, timeout, f"service {self.name(relative)}")
                finally:
                    self.node.destroy_client(client)
            else:
                raise ValueError(f"unknown tool {tool!r}")

    def _ping(self, relative: str, timeout: float) -> None:
        """The action server has answered this client once (`ActionClient.make_contact`):
        the answer to a goal request is then not lost to discovery."""
        client = self._actions[relative]
        if not client.make_contact(timeout, self.wait_quietly):
            raise TimeoutError(f"timed out after {timeout:g} s waiting for the {relative} "
                               "action server to answer")

    def _start(self, action: type, relative: str, goal: Any, what: str,
               feedback: Callable[[Any], None] | None) -> ActionTask:
        client = self._action(action, relative)
        if client.server_is_ready():
            with contextlib.suppress(TimeoutError):  # no answer: the task says so itself
                self._ping(relative, self.server_timeout)
        task = ActionTask(self, client, action, goal, what, feedback)
        with self._lock:
            self._tasks = [t for t in self._tasks if not t.done()] + [task]
        return task

    @staticmethod
    def _finish(task: ActionTask, timeout: float | None) -> Outcome:
        """A blocking call's outcome; past its timeout the goal is cancelled, and the outcome
        says so."""
        try:
            return task.result(timeout)
        except TimeoutError as exc:
            task.cancel()
            try:
                out = task.result(10.0)
            except TimeoutError:
                return Outcome(TaskResult.ABORTED, f"{exc}; the cancel got no answer either")
            return Outcome(out.result, f"{exc}, cancelled: {out.message}", out.response)

    # ------------------------------------------------------------------ control node

    def start_chunk(self, chunk: JointTrajectory | np.ndarray | Sequence[Sequence[float]], *,
                    rate: float = 15.0, joint_names: Sequence[str] = FR3_JOINTS,
                    feedback: Callable[[ExecuteChunk.Feedback], None] | None = None
                    ) -> ActionTask:
        """Send a chunk: a core trajectory, or rows of 7 joint targets (+ gripper width as an
        8th column) played at `rate`, row k at (k + 1) / rate."""
        if not isinstance(chunk, JointTrajectory):
            rows = np.asarray(chunk, float)
            if rows.ndim == 2 and rows.shape[1] == 7 and rate > 0:
                times = np.arange(1, len(rows) + 1) / rate
                chunk = JointTrajectory(tuple(joint_names), times, rows.copy())
            else:
                chunk = chunk_to_trajectory(rows, rate, joint_names)
        return self._start(ExecuteChunk, self.names.execute_chunk, chunk_goal(chunk),
                           f"{self.name(self.names.execute_chunk)} ({len(chunk)} points)",
                           feedback)

    def execute_chunk(self, chunk: JointTrajectory | np.ndarray | Sequence[Sequence[float]], *,
                      rate: float = 15.0, joint_names: Sequence[str] = FR3_JOINTS,
                      feedback: Callable[[ExecuteChunk.Feedback], None] | None = None,
                      timeout: float | None = None) -> Outcome:
        """Execute a chunk and wait for its outcome (the result holds points executed, max
        joint error and the final measured state)."""
        task = self.start_chunk(chunk, rate=rate, joint_names=joint_names, feedback=feedback)
        return self._finish(task, timeout)

    def start_motion(self, commands: Sequence[MotionCommand],
                     feedback: Callable[[ExecuteMotion.Feedback], None] | None = None
                     ) -> ActionTask:
        """Send a batch of mid-level commands (move mm, rotate deg, gripper, wait, home)."""
        goal = ExecuteMotion.Goal(commands=[command_to_msg(c) for c in commands])
        return self._start(ExecuteMotion, self.names.execute_motion, goal,
                           f"{self.name(self.names.execute_motion)} ({len(commands)} commands)",
                           feedback)

    def execute_motion(self, commands: Sequence[MotionCommand],
                       feedback: Callable[[ExecuteMotion.Feedback], None] | None = None,
                       timeout: float | None = None) -> Outcome:
        """Execute a batch of motion commands and wait (the result holds the commands executed
        and the measured hand pose and gripper width after each)."""
        return self._finish(self.start_motion(commands, feedback), timeout)

    def halt(self, timeout: float = 10.0) -> Reply:
        """Stop all motion now and hold position."""
        reply = self._call(Halt, self.names.halt, Halt.Request(), timeout)
        return Reply(reply.success, reply.message)

    # ------------------------------------------------------------------ vla node

    def start_policy(self, instruction: str, *, max_steps: int = 0, steps_per_chunk: int = 0,
                     feedback: Callable[[RunPolicy.Feedback], None] | None = None
                     ) -> ActionTask:
        """Run the VLA policy on an instruction (0 = no step limit / whole chunks)."""
        goal = RunPolicy.Goal(instruction=instruction, max_steps=max_steps,
                              steps_per_chunk=steps_per_chunk)
        return self._start(RunPolicy, self.names.run_policy, goal,
                           f"{self.name(self.names.run_policy)} ({instruction!r})", feedback)

    def run_policy(self, instruction: str, *, max_steps: int = 0, steps_per_chunk: int = 0,
                   feedback: Callable[[RunPolicy.Feedback], None] | None = None,
                   timeout: float | None = None) -> Outcome:
        """Run the policy until it is done, reaches `max_steps` or fails, and wait."""
        task = self.start_policy(instruction, max_steps=max_steps,
                                 steps_per_chunk=steps_per_chunk, feedback=feedback)
        return self._finish(task, timeout)

    def cancel(self) -> int:
        """Cancel every goal this robot sent that is still running; returns how many."""
        with self._lock:
            running = [t for t in self._tasks if not t.done()]
        for task in running:
            task.cancel()
        return len(running)

    # ------------------------------------------------------------------ oracle node

    def load_oracle(self, oracle: str | Path | dict[str, Any], timeout: float = 30.0
                    ) -> OracleLoaded:
        """Load an oracle into the oracle node: a path, or the oracle itself (a dict or JSON
        text). A refused oracle keeps the previous one active; `problems` says why."""
        if isinstance(oracle, dict):
            request = LoadOracle.Request(oracle_json=json.dumps(oracle))
        elif isinstance(oracle, str) and oracle.lstrip().startswith("{"):
            request = LoadOracle.Request(oracle_json=oracle)
        else:
            request = LoadOracle.Request(oracle_path=str(Path(oracle).resolve()))
        # the episode's other oracle services are discovered while it runs, not at its end
        for service in ("reset", "finish"):
            self._client(Trigger, f"{self.names.oracle_node}/{service}")
        reply = self._call(LoadOracle, f"{self.names.oracle_node}/load_oracle", request, timeout)
        return OracleLoaded(reply.success, reply.message, tuple(reply.problems),
                            reply.num_actions)

    def reset_oracle(self, timeout: float = 10.0) -> Reply:
        """Start a new episode in the oracle node."""
        # not repeated: a late copy would restart an episode the caller has begun
        reply = self._call(Trigger, f"{self.names.oracle_node}/reset", Trigger.Request(),
                           timeout, repeatable=False)
        return Reply(reply.success, reply.message)

    def finish_oracle(self, timeout: float = 10.0) -> Reply:
        """End the episode now: the oracle node publishes its final task verdict."""
        reply = self._call(Trigger, f"{self.names.oracle_node}/finish", Trigger.Request(),
                           timeout)
        return Reply(reply.success, reply.message)

    def task_verdicts_seen(self) -> int:
        """How many task verdicts arrived so far (pass it to `wait_for_task_verdict`)."""
        return len(self.verdicts.tasks)

    def wait_for_task_verdict(self, timeout: float = 10.0, after: int | None = None
                              ) -> TaskVerdict:
        """The first task verdict after `after` of them were seen (default: the next one)."""
        seen = self.task_verdicts_seen() if after is None else after
        return self._wait(lambda: self.verdicts.task_after(seen), timeout, "the task verdict")

    # ------------------------------------------------------------------ any node

    def reset_scene(self, scene: str = "", seed: int = 0, timeout: float = 120.0
                    ) -> SceneReset:
        """Reset the embedded simulator (world time restarts, which starts the oracle node's
        next episode); `scene` "" keeps the current scene."""
        # resent while unanswered: the id makes the node reset once for all copies
        request = ResetScene.Request(scene=scene, seed=seed, request_id=uuid.uuid4().hex)
        reply = self._call(ResetScene, f"{self.names.sim_node}/reset", request, timeout)
        return SceneReset(reply.success, reply.message, reply.instruction)

    def parameters(self, node: str, names: Sequence[str], timeout: float = 10.0
                   ) -> dict[str, Any]:
        """Parameters of one of the stack's nodes (a name relative to the namespace), through
        its standard `get_parameters` service; a parameter the node lacks is left out."""
        reply = self._call(GetParameters, f"{node}/get_parameters",
                           GetParameters.Request(names=list(names)), timeout)
        values = [parameter_value_to_python(v) for v in reply.values]
        return {k: v for k, v in zip(names, values, strict=False) if v is not None}


def verdict_report(verdict: TaskVerdict) -> dict[str, Any]:
    """The oracle's spec §6 report a task verdict carries."""
    return json.loads(verdict.report_json)


__all__ = ["OracleLoaded", "Reply", "Robot", "RobotNames", "SceneReset", "verdict_report"]
