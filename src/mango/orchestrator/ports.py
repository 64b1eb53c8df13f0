"""The robot as the orchestration loop sees it: one small port, so the same routing
(`loop.Orchestrator`) runs on the embedded sim (`SimPort`) or on a ROS stack (the
orchestrator node's port, `mango.nodes.orchestrator_node`).

A port runs each tool (the VLA with a subgoal text, grasp, place, hold still) and hands every
world state it sees to the loop's `Observer` while the tool runs; the observer raises
`Interrupted` (a monitor signal: stop this tool) or `TaskCancelled` (the whole task is
cancelled) at that boundary, and the port stops the tool there and leaves the arm held.
Between tools the loop reads proprioception and perception through the port. A port whose
tool servers can vanish (the ROS one) raises `liveness.ToolServerLost` from any call once one
has gone (`liveness.ServerWatch`): the loop ends the task there, naming it, and retries
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from mango.oracle.world_state import WorldState
from mango.orchestrator.schemas import Subgoal
from mango.orchestrator.tools import HaltTool, PrimitiveTools, ToolResult, VlaTool
from mango.orchestrator.world import (
    ESTIMATED_CAMERAS,
    WorldSource,
    make_world,
    world_markers,
)
from mango.perception.base import PerceptionConfig
from mango.perception.registry import make_backend
from mango.primitives.planning import GRIPPER_OPEN
from mango.primitives.runner import SimPrimitives
from mango.sim.build import SUBSTEPS
from mango.sim.env import SimEnv
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.faults import Fault
from mango.sim.scene import SceneSpec

Observer = Callable[[WorldState], None]  # may raise Interrupted or TaskCancelled


HALTED_SPEED = 0.01  # m/s: the hand is "halted" below this
# physics steps between two looks at the hand while the arm is held: 11 looks a period (the 33
# steps of one), one every 6 ms, taken between the steps so they stay as they are
HOLD_PROBE_STEPS = 3


def at_rest(a: np.ndarray, b: np.ndarray, dt: float) -> bool:
    """The hand moved from `a` to `b` in `dt` seconds slower than `HALTED_SPEED`."""
    return float(np.linalg.norm(np.asarray(b) - np.asarray(a))) / dt < HALTED_SPEED


class TaskCancelled(Exception):
    """The task was cancelled from outside (raised by the observer at the next boundary)."""


class RobotPort(Protocol):
    """What the loop needs of a robot; every tool feeds its world states to `observe`."""

    scene: SceneSpec
    dt: float  # the shortest hold (s): one control period

    @property
    def time(self) -> float:
        """Robot time now (the latest world state's)."""
        ...

    def start(self, seed: int) -> WorldState:
        """A new episode (the VLA's fault armed again); its first world state."""
        ...

    def joint_positions(self) -> np.ndarray: ...

    def hand_position(self) -> np.ndarray:
        """The hand (TCP) position from proprioception (FK), world frame."""
        ...

    def gripper_width(self) -> float:
        """Measured."""
        ...

    def commanded_width(self) -> float:
        """What the gripper was last told (closed on an object reads below its width)."""
        ...

    def detect(self, phrases: Sequence[str]) -> tuple[dict[str, Any], str]:
        """Perception: phrase -> best `Detection` (absent when unmatched), and a note."""
        ...

    def run_vla(self, instruction: str, observe: Observer, budget_t: float, *,
                resume: bool = False) -> ToolResult: ...

    def grasp(self, sg: Subgoal, held: str | None, observe: Observer) -> ToolResult: ...

    def place(self, sg: Subgoal, held: str | None, observe: Observer) -> ToolResult: ...

    def camera_image(self) -> np.ndarray:
        """The tools' camera now, RGB (what a model decider or monitor is shown)."""
        ...

    def hold(self, seconds: float, observe: Observer) -> float | None:
        """Hold the arm still for `seconds` of robot time (safe idling); returns when the hand
        came to rest if the port samples it finer than the observed states, else None."""
        ...

    def close(self) -> None: ...


class SimPort:
    """The embedded sim: the expert as the VLA (optionally faulted), `SimPrimitives` for
    grasp/place, every tool stepping the physics one control period at a time."""

    def __init__(self, scene: SceneSpec, seed: int, fault: Fault | None = None,
                 world: str = "physics") -> None:
        self.scene = scene
        markers = world_markers(scene, world)
        self.env = SimEnv(scene, seed=seed, cameras=("front",) if markers is None else
                          ESTIMATED_CAMERAS, image_size=(640, 480), markers=markers)
        self.world: WorldSource = make_world(self.env, world)  # what the oracle believes
        self.dt = self.env.dt
        self.policy = ExpertPolicy(scene, fault)
        self.halt_tool = HaltTool(self.env)
        self.vla = VlaTool(self.env, self.policy)
        backend = make_backend(PerceptionConfig(backend="sim", scene=scene))
        self.prims = SimPrimitives(self.env, backend, on_state=self._prim_state)
        self.tools = PrimitiveTools(self.prims)
        self._width = GRIPPER_OPEN
        self._observe: Observer = _ignore

    @property
    def time(self) -> float:
        return self.env.time

    def start(self, seed: int) -> WorldState:
        state = self.env.reset(seed)
        self.policy.reset()  # a new episode: the fault is armed
        return state

    def joint_positions(self) -> np.ndarray:
        return self.env.joint_positions()

    def hand_position(self) -> np.ndarray:
        return np.asarray(self.env.hand_pose()[0])

    def gripper_width(self) -> float:
        return self.env.gripper_width()

    def commanded_width(self) -> float:
        return self._width

    def detect(self, phrases: Sequence[str]) -> tuple[dict[str, Any], str]:
        return self.prims.detect(list(phrases))

    # -------------------------------------------------------------- stepping
    def _prim_state(self, state: WorldState) -> None:
        """A primitive stepped the physics: its gripper command is the commanded width."""
        self._width = float(self.prims.width_cmd)
        self._observe(state)

    def _stepper(self, observe: Observer, width_from: str) -> Callable[[np.ndarray],
                                                                        WorldState]:
        def step(row: np.ndarray) -> WorldState:
            self.env.step(row)
            if width_from == "row":
                self._width = float(row[7])
            elif width_from == "prims":
                self._width = float(self.prims.width_cmd)
            state = self.env.world_state()
            observe(state)
            return state
        return step

    # -------------------------------------------------------------- tools
    def run_vla(self, instruction: str, observe: Observer, budget_t: float, *,
                resume: bool = False) -> ToolResult:
        return self.vla.run(instruction, self._stepper(observe, "row"), budget_t,
                            resume=resume)

    def grasp(self, sg: Subgoal, held: str | None, observe: Observer) -> ToolResult:
        self._observe = observe
        try:
            return self.tools.grasp(sg, held, self._width, self._stepper(observe, "prims"))
        finally:
            self._observe = _ignore

    def place(self, sg: Subgoal, held: str | None, observe: Observer) -> ToolResult:
        self._observe = observe
        try:
            return self.tools.place(sg, held, self._width, self._stepper(observe, "prims"))
        finally:
            self._observe = _ignore

    def camera_image(self) -> np.ndarray:
        rgb, _, _ = self.env.render("front", depth=False, seg=False)
        assert rgb is not None
        return rgb

    def hold(self, seconds: float, observe: Observer) -> float | None:
        """Safe idle (the halt tool's hold), one observed world state a period as every tool.
        Returns when the hand came to rest (below `HALTED_SPEED`), from its position sampled
        every `HOLD_PROBE_STEPS` physics steps: known to a few milliseconds, as a real arm's 1 kHz
        state would give it, not rounded up to the next 15 Hz state; None if it did not."""
        part = self.env.dt * HOLD_PROBE_STEPS / SUBSTEPS
        prev = self.hand_position()
        rest: float | None = None

        def sample() -> None:
            nonlocal prev, rest
            hand = self.hand_position()
            if rest is None and at_rest(prev, hand, part):
                rest = self.env.time
            prev = hand

        def step(row: np.ndarray) -> WorldState:
            self.env.step(row, probe=sample, probe_every=HOLD_PROBE_STEPS)
            state = self.env.world_state()
            observe(state)
            return state
        self.halt_tool.run(seconds, self._width, step)
        return rest

    def close(self) -> None:
        self.env.close()


def _ignore(state: WorldState) -> None:
    pass
