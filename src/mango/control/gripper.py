"""The Franka Hand as both FR3 backends drive it: a policy's width ramp becomes one `move`
(opening) or `grasp` (closing) command per run of widths going the same way, and a grasp's
answer plus the measured width say whether something is held.

The hand runs one command at a time and a ramp's intermediate widths are not object sizes, so
a ramp is one command to its end, sent when the ramp starts. `franka_ros2` sends these as the
franka gripper node's actions, `libfranka` as libfranka's own gripper calls (through franky):
the same commands, judged by the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

GripperKind = Literal["move", "grasp"]
GRIPPER_TOL = 0.005  # m: a width change smaller than this sends no gripper goal
# franka_gripper config/franka_gripper_node.yaml default_grasp_epsilon (inner and outer)
GRASP_EPSILON = 0.005  # m
# Fingers closer than this after a grasp closed on nothing (the Franka Hand reads ~0 closed):
# the grasp missed. Objects thinner than this cannot be told from nothing by the width.
CLOSED_WIDTH = 0.003  # m


@dataclass(frozen=True)
class GripperCommand:
    """A Franka Hand command: `move` to a width, or `grasp` whatever lies in
    [width - epsilon_inner, width + epsilon_outer] with `force`."""

    kind: GripperKind
    width: float
    speed: float
    force: float = 0.0
    epsilon_inner: float = 0.0
    epsilon_outer: float = 0.0

    @property
    def window(self) -> tuple[float, float]:
        """The finger distances libfranka's grasp counts as holding something
        (include/franka/gripper.h: width - epsilon_inner < d < width + epsilon_outer)."""
        return self.width - self.epsilon_inner, self.width + self.epsilon_outer

    def describe(self) -> str:
        return f"gripper {self.kind} to {self.width:.3f} m"


def gripper_command(width: float, start: float | None, speed: float,
                    force: float) -> GripperCommand:
    """Closing from `start` grasps, opening (or from an unknown width) moves.

    A grasp holds whatever the fingers meet on their way from `start` to `width`: the window
    runs from the commanded width (less the franka default epsilon) to where the fingers
    started (plus it); a policy closing to 0 "on whatever is there" thus succeeds on any
    object, and a miss shows in the measured width (`CLOSED_WIDTH`)."""
    if start is not None and width < start:
        return GripperCommand("grasp", width, speed, force, epsilon_inner=GRASP_EPSILON,
                              epsilon_outer=start - width + GRASP_EPSILON)
    return GripperCommand("move", width, speed)


def gripper_plan(widths: np.ndarray, start: float | None, speed: float,
                 force: float) -> list[tuple[int, GripperCommand]]:
    """(point index to send at, command): one per run of widths moving the same way."""
    plan: list[tuple[int, GripperCommand]] = []
    w, k, n = start, 0, len(widths)
    while k < n:
        if w is not None and abs(widths[k] - w) <= GRIPPER_TOL:
            k += 1
            continue
        closing = w is not None and widths[k] < w
        end = k
        while end + 1 < n and (widths[end + 1] <= widths[end] + GRIPPER_TOL if closing
                               else widths[end + 1] >= widths[end] - GRIPPER_TOL):
            end += 1
        target = float(widths[end])
        plan.append((k, gripper_command(target, w, speed, force)))
        w, k = target, end + 1
    return plan


def gripper_failure(cmd: GripperCommand, success: bool, error: str,
                    width_after: float | None) -> str | None:
    """Why a finished command failed (None: it did what was asked). A grasp that closed to
    (almost) nothing missed, whatever the hand answered."""
    what = cmd.describe()
    if cmd.kind == "move":
        return None if success else f"{what} failed: {error or 'no reason given'}"
    d = width_after
    if d is not None and d < CLOSED_WIDTH:
        return f"{what} missed: the fingers closed to {d:.3f} m with nothing between them"
    if not success:
        lo, hi = cmd.window
        at = f"the fingers stopped at {d:.3f} m, " if d is not None else ""
        return f"{what} failed: {error or f'{at}outside the grasp window ({lo:.3f}, {hi:.3f}) m'}"
    return None


def due_commands(plan: list[tuple[int, GripperCommand]], sent: int, due: int
                 ) -> list[GripperCommand]:
    """The plan's commands after the first `sent` whose point index is at most `due` (the
    trajectory's point reached): what a backend sends now, in order."""
    out = []
    while sent + len(out) < len(plan) and plan[sent + len(out)][0] <= due:
        out.append(plan[sent + len(out)][1])
    return out
