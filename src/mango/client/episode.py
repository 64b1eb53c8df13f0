"""One closed-loop episode in the embedded sim, judged live: the Python API behind
`mango policy run` and `mango demo`.

Brings up `config/stacks/sim.yaml` (sim_node, franka_control_node, vla_node, oracle_node and,
with a bag, the recorder) under its own namespace, loads the oracle, resets the scene (world
time restarts, which starts the oracle's episode, so the live verdict and a replay of the
bag's last episode see the same states), sends `RunPolicy` (→ `ExecuteChunk` → sim), waits,
finishes the oracle and shuts everything down. With `attach` it does the same on a stack that
is already running (`mango bringup sim`) and leaves that stack running: the policy, fault and
recorder are the stack's.

`views=True` records what `config/rviz/mango.rviz` and `config/foxglove/mango_layout.json`
show (cameras on, markers, `/tf`, `/tf_static`, `/robot_description`) and runs the stack in
the root namespace: the layouts name topics without a run's random `/mango_<id>` prefix, so
such a run must be the only one in its ROS domain.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mango.bringup import NodeDied
from mango.client.robot import Robot, TaskResult
from mango.client.session import StackSession
from mango.client.tasks import Outcome
from mango.errors import InputError, open_user_file
from mango.policy.registry import BACKENDS
from mango.sim.faults import parse_fault
from mango.sim.scene import REPO_ROOT, SceneSpec, load_scene, resolve_scene
from mango.stack import absolute_namespace, load_stack
from mango_ros.msg import StepVerdict, TaskVerdict

POLICY_RATE = 15.0
# What the rviz and Foxglove layouts show, recorded by a `views` run besides the stack's topics.
VIEW_TOPICS = ("/oracle/markers", "/tf", "/tf_static", "/robot_description",
               "/camera/front/image_raw", "/camera/wrist/image_raw", "/camera/front/depth",
               "/camera/front/camera_info", "/camera/wrist/camera_info")
FIND_STACK_TIMEOUT = 15.0  # s an attached run looks for the running stack (found in ~1 s)


class RunFailed(RuntimeError):
    """The episode could not run (a node died, the policy never executed, a timeout)."""


@dataclass
class Episode:
    scene: str | None  # with `attach`, None: the scene the running stack simulates
    oracle: str | None = None  # default: the fine-grained oracle the scene names
    backend: str = "expert"
    fault: str | None = None
    seed: int = 0
    bag: str | None = None
    namespace: str | None = None  # default: a fresh one
    options: dict[str, Any] = field(default_factory=dict)  # vla_node backend options
    views: bool = False  # record what the layouts show, in the root namespace
    attach: bool = False  # run on the stack already up under `namespace` (default: the root)
    max_steps: int | None = None  # stop after this many actions (default: the scene's horizon)


def _episode_only(
    on_step: Callable[[StepVerdict], None] | None,
) -> Callable[[StepVerdict], None] | None:
    """Forward step verdicts from the episode the scene reset starts (its plan announcement
    comes with world time gone back), not those of the oracle's load before it."""
    if on_step is None:
        return None
    state = {"armed": False, "last_t": -1.0}

    def forward(msg: StepVerdict) -> None:
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        if not state["armed"] and msg.status == "pending" and t < state["last_t"]:
            state["armed"] = True
        state["last_t"] = max(state["last_t"], t)
        if state["armed"]:
            on_step(msg)

    return forward


def run_episode(
    episode: Episode,
    output: Callable[[str, str], None] | None = None,
    on_step: Callable[[StepVerdict], None] | None = None,
    startup_timeout: float = 90.0,
) -> dict[str, Any]:
    """Run one episode; returns the oracle's spec §6 report with a `run` entry.

    Raises `InputError` on bad input and `RunFailed` when the episode could not run (with
    `attach`: also when no stack answers under the namespace within `startup_timeout`).
    """
    if episode.attach:
        return _run_attached(episode, on_step, min(startup_timeout, FIND_STACK_TIMEOUT))
    entry = BACKENDS.get(episode.backend)
    if entry is None:
        raise InputError(f"unknown backend {episode.backend!r} (known: "
                         f"{', '.join(BACKENDS)})", field="backend")
    if episode.scene is None:
        raise InputError("give a scene (or attach to a running stack)", field="scene")
    scene_path = resolve_scene(episode.scene).resolve()
    spec = load_scene(scene_path)
    if episode.fault:
        if not entry.injects_faults:
            raise InputError("a fault is injected into the scripted expert: use --backend "
                             "expert", field="fault")
        parse_fault(episode.fault)
    oracle_path = _oracle_path(spec, scene_path, episode.oracle)

    if episode.views:
        if not episode.bag:
            raise InputError("recording the views needs a bag to record to (--bag)",
                             field="views")
        if (episode.namespace or "").strip("/"):
            raise InputError("the views are recorded in the root namespace, where the rviz and "
                             "Foxglove layouts look for them: drop --namespace", field="views")
        episode = dataclasses.replace(episode, namespace="")
    ns = episode.namespace if episode.namespace is not None else f"/mango_{uuid.uuid4().hex[:6]}"
    ns = _namespace(ns)
    stack = load_stack("sim")
    nodes = {n.name: n for n in stack.nodes}
    nodes["sim_node"].parameters.update(scene=str(scene_path), seed=episode.seed)
    if entry.reads_world_state and not episode.views:
        nodes["sim_node"].parameters["camera_rate"] = 0.0  # nothing looks at the cameras
    vla = nodes["vla_node"].parameters
    vla.update(backend=episode.backend, scene=str(scene_path), fault=episode.fault or "")
    vla.update({k: v for k, v in episode.options.items() if v is not None})
    nodes["oracle_node"].parameters["oracle_file"] = ""  # loaded below, grounded on the scene
    # Who must hear the world state before the scene reset starts the episode.
    listeners = {"oracle_node"}
    if episode.bag:
        rec = nodes["bag_recorder"].parameters
        rec["output"] = str(Path(episode.bag).resolve())
        if episode.views:  # `in_namespace` below leaves the root namespace's names as they are
            rec["topics"] = [*rec["topics"], *VIEW_TOPICS]  # type: ignore[misc]
        keep = list(nodes.values())
        listeners.add("bag_recorder")
    else:
        keep = [n for n in nodes.values() if n.name != "bag_recorder"]
    # a policy episode asks perception nothing and runs no primitive
    keep = [n for n in keep if n.name not in ("perception_node", "primitives_node")]
    nodes["sim_node"].parameters["segmentation"] = False
    stack = stack.model_copy(update={"nodes": keep}).in_namespace(ns)

    t_start = time.monotonic()
    try:
        with StackSession(stack, output=output) as session:
            node = session.node
            assert node is not None
            robot = Robot(node, ns, watch=session.bringup.check, on_step=_episode_only(on_step),
                          server_timeout=startup_timeout)
            robot.wait_for_servers("run_policy", timeout=startup_timeout)
            topic = f"{ns}/world_state"
            session.wait(lambda: listeners <= {i.node_name for i in
                                               node.get_subscriptions_info_by_topic(topic)},
                         startup_timeout, f"{', '.join(sorted(listeners))} on {topic}")
            verdict, outcome, feedback = _judge(robot, spec, oracle_path, "", episode.seed,
                                                episode.max_steps)
    except NodeDied as exc:
        tail = "\n  " + "\n  ".join(exc.tail[-5:]) if exc.tail else ""
        raise RunFailed(f"{exc}{tail}") from None
    except TimeoutError as exc:
        raise RunFailed(str(exc)) from None
    run = {"scene": spec.name, "instruction": spec.instruction, "oracle": str(oracle_path),
           "backend": episode.backend, "fault": episode.fault, "seed": episode.seed,
           "bag": episode.bag, "namespace": ns, "attached": False}
    return _report(verdict, outcome, feedback, run, t_start)


def _namespace(ns: str) -> str:
    try:
        return absolute_namespace(ns)
    except ValueError as exc:
        raise InputError(str(exc), field="namespace") from None


def _oracle_path(spec: SceneSpec, scene_path: Path, oracle: str | None) -> Path:
    """The oracle given, else the fine-grained oracle the scene names."""
    if oracle is None:
        if not spec.oracle:
            raise InputError(f"scene {spec.name} names no oracle file; give one",
                             file=str(scene_path))
        path = (REPO_ROOT / spec.oracle).resolve()
    else:
        path = Path(oracle).resolve()
    if not path.exists():
        raise InputError("oracle file not found", file=str(path))
    open_user_file(path, "oracle").close()  # a device, a FIFO or a folder: named as such
    return path


def _judge(robot: Robot, spec: SceneSpec, oracle_path: Path, scene: str, seed: int,
           max_steps: int | None = None) -> tuple[TaskVerdict, Outcome, list[Any]]:
    """Load the oracle, reset the scene, run the policy, finish the oracle: its verdict, the
    policy's outcome and the policy's feedback."""
    feedback: list[Any] = []
    loaded = robot.load_oracle(oracle_path)
    if not loaded.success:
        raise InputError("the oracle node refused the oracle: " + "; ".join(loaded.problems),
                         file=str(oracle_path))
    reset = robot.reset_scene(scene, seed)
    if not reset.success:
        raise RunFailed(f"sim reset failed: {reset.message}")
    seen = robot.task_verdicts_seen()
    task = robot.start_policy(spec.instruction,
                              max_steps=max_steps or math.ceil(spec.horizon * POLICY_RATE),
                              feedback=feedback.append)
    outcome = task.result(timeout=spec.horizon * 3 + 60.0)
    if outcome.result is TaskResult.REJECTED:
        raise RunFailed(f"the vla_node refused the RunPolicy goal: {outcome.message}")
    if outcome.result is TaskResult.ABORTED or outcome.response is None:
        raise RunFailed(f"the policy run ended without a result: {outcome.message}")
    res = outcome.response
    if (outcome.result is TaskResult.FAILED and res.chunks_requested <= 1
            and res.steps_executed == 0):
        raise RunFailed(f"the policy could not run: {res.message}")
    time.sleep(1.0)  # let the last placement settle before judging
    robot.finish_oracle()
    return robot.wait_for_task_verdict(10.0, after=seen), outcome, feedback


def _report(verdict: TaskVerdict, outcome: Outcome, feedback: list[Any], run: dict[str, Any],
            t_start: float) -> dict[str, Any]:
    report = json.loads(verdict.report_json)
    res = outcome.response
    latency = sorted(f.last_inference_latency for f in feedback)
    report["run"] = {
        **run,
        "policy_status": outcome.result.value,
        "policy_message": res.message, "steps_executed": res.steps_executed,
        "chunks_requested": res.chunks_requested,
        "policy_info": json.loads(res.info_json or "{}"),
        "inference_latency_p50": latency[len(latency) // 2] if latency else None,
        "t_end": verdict.header.stamp.sec + verdict.header.stamp.nanosec * 1e-9,
        "wall_time": round(time.monotonic() - t_start, 2),
    }
    return report


def _run_attached(episode: Episode, on_step: Callable[[StepVerdict], None] | None,
                  timeout: float) -> dict[str, Any]:
    """The episode on the stack already running under the namespace (`mango bringup sim`):
    its policy, fault and recorder are the stack's, so asking for others is bad input."""
    chosen = [f"--{k}" for k, v in (("bag", episode.bag), ("fault", episode.fault),
                                    *episode.options.items()) if v is not None]
    if episode.backend != "expert":
        chosen.insert(0, "--backend")
    if episode.views:
        chosen.append("--record-views")
    if chosen:
        raise InputError(f"{', '.join(chosen)}: an attached run uses the running stack's "
                         "policy, fault and recorder; set them when bringing it up (e.g. "
                         "`mango bringup sim --set vla_node.backend=openpi --bag DIR`)",
                         field="attach")
    ns = _namespace(episode.namespace or "")
    where = f"namespace {ns}" if ns else "the root namespace"
    t_start = time.monotonic()
    try:
        with Robot.connect(ns, on_step=_episode_only(on_step), server_timeout=timeout) as robot:
            try:
                robot.wait_for_servers("run_policy", "oracle", timeout=timeout)
                sim = robot.parameters(robot.names.sim_node, ["scene", "seed"], timeout)
            except TimeoutError:
                raise RunFailed(f"no sim stack answers in {where} within {timeout:g} s: start "
                                "one with `mango bringup sim` (or give its --namespace)"
                                ) from None
            vla = robot.parameters("vla_node", ["backend", "scene", "fault"], timeout)
            try:  # optional in a stack
                rec = robot.parameters("bag_recorder", ["output"], 3.0)
            except TimeoutError:
                rec = {}
            scene_path = resolve_scene(str(sim.get("scene", ""))).resolve()
            spec = current = load_scene(scene_path)
            scene_arg = ""  # the scene it simulates: a reset keeps it
            if episode.scene is not None:
                scene_path = resolve_scene(episode.scene).resolve()
                spec = load_scene(scene_path)
                if spec.name != current.name:
                    scene_arg = str(scene_path)
            planned = str(vla.get("scene") or "")
            backend = str(vla.get("backend") or "")
            if backend == "expert" and planned and \
                    load_scene(resolve_scene(planned)).name != spec.name:
                raise InputError(f"the stack's scripted expert plans scene "
                                 f"{load_scene(resolve_scene(planned)).name}, not {spec.name}: "
                                 "bring the stack up with `--set sim_node.scene=S --set "
                                 "vla_node.scene=S`", field="scene")
            oracle_path = _oracle_path(spec, scene_path, episode.oracle)
            # the task verdicts earlier runs left latched must arrive before this run counts
            # them; their publisher was found with the oracle's service, history follows
            time.sleep(0.5)
            verdict, outcome, feedback = _judge(robot, spec, oracle_path, scene_arg,
                                                episode.seed, episode.max_steps)
    except TimeoutError as exc:
        raise RunFailed(str(exc)) from None
    run = {"scene": spec.name, "instruction": spec.instruction, "oracle": str(oracle_path),
           "backend": backend, "fault": vla.get("fault") or None, "seed": episode.seed,
           "bag": rec.get("output") or None, "namespace": ns or "/", "attached": True}
    return _report(verdict, outcome, feedback, run, t_start)

