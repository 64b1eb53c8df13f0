"""The orchestrator's tools in the embedded sim, each interruptible at a control period.

Every tool moves the arm only through the loop's `Stepper` (one control period per row, the
monitor fed after each), so the loop can stop any of them at a period boundary:

- `vla`: the VLA policy (the language-conditioned expert) run with a subgoal instruction;
- `grasp` / `place`: the perception-grounded primitives (`mango.primitives.SimPrimitives`);
- `halt`: hold the arm still where it is (safe idling while deliberating).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mango.errors import InputError
from mango.oracle.world_state import WorldState
from mango.orchestrator.schemas import Signal, Subgoal
from mango.policy.instructions import UngroundedInstruction, expert_subgoal
from mango.primitives.planning import GRIPPER_OPEN, parse_destination
from mango.primitives.runner import SimPrimitives
from mango.sim.env import SimEnv
from mango.sim.expert.policy import ExpertPolicy


class Interrupted(Exception):
    """The monitor asked for the tool to stop (raised at a control-period boundary)."""

    def __init__(self, signals: list[Signal]) -> None:
        super().__init__(", ".join(s.reason for s in signals))
        self.signals = signals


@dataclass
class ToolResult:
    tool: str
    status: str  # "done" | "succeeded" | "failed" | "rejected" | "interrupted"
    message: str
    signals: list[Signal] | None = None


Stepper = Callable[[np.ndarray], WorldState]  # one control period; may raise Interrupted


class VlaTool:
    """The VLA with a subgoal instruction (the expert policy, faults and all)."""

    name = "vla"

    def __init__(self, env: SimEnv, policy: ExpertPolicy) -> None:
        self.env, self.policy = env, policy

    def run(self, instruction: str, step: Stepper, budget_t: float, *,
            resume: bool = False) -> ToolResult:
        """Run until the VLA is done, the budget ends or the monitor interrupts; `resume`
        carries on the interrupted run (a false alarm) instead of starting it again."""
        if not resume:
            try:
                sub = expert_subgoal(self.env.scene, instruction)
            except UngroundedInstruction as exc:
                return ToolResult(self.name, "rejected", str(exc))
            self.policy.reset(sub.steps, new_episode=False)
        state = self.env.world_state()
        try:
            while not self.policy.done and state.t < budget_t:
                for row in self.policy.act(state, self.env.joint_positions()):
                    state = step(row)
        except Interrupted as exc:
            return ToolResult(self.name, "interrupted", str(exc), exc.signals)
        if self.policy.error:
            return ToolResult(self.name, "failed", self.policy.error)
        if not self.policy.done:
            return ToolResult(self.name, "failed", "the time budget ran out")
        return ToolResult(self.name, "done", f"the VLA finished '{instruction}'")


class HaltTool:
    """Hold the arm where it is, gripper as commanded (nothing dropped).

    The hold starts at once from the measured joints (`SimEnv.stop`), as a trajectory
    controller's hold on a cancelled goal does; streamed like any row it would first ramp from
    the last command, which runs ahead of a moving arm, and the hand would coast on.
    """

    name = "halt"

    def __init__(self, env: SimEnv) -> None:
        self.env = env

    def hold_row(self, width: float) -> np.ndarray:
        return np.r_[self.env.joint_positions(), width]

    def run(self, seconds: float, width: float, step: Callable[[np.ndarray], WorldState]
            ) -> WorldState:
        state = self.env.world_state()
        for _ in range(max(1, round(seconds / self.env.dt))):
            # re-anchored every period: a hand still moving (it coasted, or sprang back when
            # its load fell away) is held where it is, one at rest keeps its target
            state = step(np.r_[self.env.stop(), width])
        return state


class PrimitiveTools:
    """grasp / place through `SimPrimitives`, stepped through the loop's `on_state`."""

    def __init__(self, prims: SimPrimitives) -> None:
        self.prims = prims

    def _release_other(self, sg: Subgoal, held: str | None, width: float,
                       step: Stepper) -> None:
        """A wrong object in the hand is let go where it is, before the right one is taken."""
        if held is not None and held != sg.object:
            row = np.r_[self.prims.env.joint_positions(), GRIPPER_OPEN]
            for _ in range(round(0.6 / self.prims.env.dt)):
                step(row)
            self.prims.width_cmd = GRIPPER_OPEN
            self.prims.held = None

    def grasp(self, sg: Subgoal, held: str | None, width: float, step: Stepper) -> ToolResult:
        try:
            self._release_other(sg, held, width, step)
            out = self.prims.grasp(sg.object_phrase or "")
        except Interrupted as exc:
            return ToolResult("grasp", "interrupted", str(exc), exc.signals)
        return ToolResult("grasp", out.status, out.message)

    def place(self, sg: Subgoal, held: str | None, width: float, step: Stepper) -> ToolResult:
        if not sg.destination_phrase:
            return ToolResult("place", "rejected", f"subgoal {sg.id} has no destination")
        try:
            req = parse_destination(sg.destination_phrase)
        except InputError as exc:
            return ToolResult("place", "rejected", str(exc))
        try:
            cur = self.prims.held
            if cur is None or cur.entity_id != sg.object:
                self._release_other(sg, held, width, step)
                g = self.prims.grasp(sg.object_phrase or "")
                if g.status != "succeeded":
                    return ToolResult("place", g.status, f"could not take it first: {g.message}")
            out = self.prims.place(req, sg.object_phrase)
        except Interrupted as exc:
            return ToolResult("place", "interrupted", str(exc), exc.signals)
        return ToolResult("place", out.status, out.message)
