"""MotorMind's controller for mode `motor` in the embedded sim: `control.ArmController.run_motion`
(the code behind `ExecuteMotion`) on `EnvMotionBackend`, a control backend that plays
trajectories through the loop's stepper, so the ground truth, the verdict tracker and the
oracle monitor see every control period. A stop is `GoalSlot.cancel(at_boundary=True)`, as a
cancel of an `ExecuteMotion` goal is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mango.control.controller import SETTLE_TOL, ArmController
from mango.control.goals import GoalSlot
from mango.control.joint_state import Measured as JointMeasured
from mango.control.motion import MotionCommand
from mango.control.robot import load_robot
from mango.control.trajectory import JointTrajectory
from mango.oracle.world_state import WorldState
from mango.orchestrator.motor_schemas import Measured
from mango.primitives.planning import GRIPPER_OPEN
from mango.primitives.runner import MIN_HELD_WIDTH

Stepper = Callable[[np.ndarray], WorldState]


class EnvMotionBackend:
    """`ControlBackend` on a `SimEnv`: trajectories played one control period at a time through
    the loop's stepper (the sim is its own clock: no wall-time pacing). `drop` (a fault of the
    motion tool, as the VLA's) opens the hand part way through the first carry."""

    def __init__(self, orch: Any, step: Stepper, kinematics: Any,
                 drop_at: float | None = None) -> None:
        self.env, self.step, self.kinematics = orch.env, step, kinematics
        self.width_cmd = GRIPPER_OPEN
        self.drop_at = drop_at
        self.dropped_t: float | None = None
        self.forced_open = False  # the drop fault holds the hand open until a gripper command
        self.commands: list[MotionCommand] = []  # the batch being executed, and which command
        self.index = 0

    def measured(self) -> JointMeasured:
        # the finger joints can read a hair past the full opening: the width is clamped
        width = min(max(self.env.gripper_width(), 0.0), GRIPPER_OPEN)
        return JointMeasured(self.env.joint_positions(), width, time.monotonic(), self.env.time)

    def prepare(self, traj: JointTrajectory, start: JointMeasured) -> JointTrajectory:
        return traj  # played as given, like the sim backend

    def _width_out(self) -> float:
        return GRIPPER_OPEN if self.forced_open else self.width_cmd

    def hold(self) -> None:
        self.step(np.r_[self.env.joint_positions(), self._width_out()])

    def execute(self, traj: JointTrajectory, run: Any, on_point: Any) -> Any:
        from mango.control.goals import Outcome

        dt = self.env.dt
        q0, w0 = self.env.joint_positions(), self.width_cmd
        n = max(1, math.ceil(traj.duration / dt - 1e-9))
        drop_k = self._drop_row(traj, n)
        # an arm motion plans the gripper at its measured width: like the Franka Hand, whose
        # grasp holds until the next gripper command, the gripper keeps its last command then
        cmd = self.commands[self.index] if self.index < len(self.commands) else None
        keep = traj.gripper is None or cmd is None or not cmd.kind.startswith("gripper")
        for k in range(1, n + 1):
            if run.stop.is_set():
                self.hold()
                return Outcome(False, True, run.reason, k - 1)
            q, w = traj.sample(k * dt, q0, w0)
            if w is not None and not keep:
                self.width_cmd = float(w)
                self.forced_open = False  # a gripper command ends the fault's opening
            if drop_k is not None and k >= drop_k and not self.forced_open:
                self.forced_open = True  # the fault: the hand lets go, commanded closed
                self.dropped_t = self.env.time
            self.step(np.r_[q, self._width_out()])
        end = np.asarray(traj.positions[-1], float)
        for _ in range(round(1.0 / dt)):  # settle on the end (the controller measures there)
            if float(np.max(np.abs(self.env.joint_positions() - end))) <= SETTLE_TOL:
                break
            self.step(np.r_[end, self._width_out()])
        return Outcome(True, points_executed=len(traj))

    def _drop_row(self, traj: JointTrajectory, n: int) -> int | None:
        """The row at which a pending drop strikes: a carry (closed on something, the hand
        travelling ≥ 5 cm in the plane)."""
        if self.drop_at is None or self.dropped_t is not None:
            return None
        if self.width_cmd > 0.01 or self.env.gripper_width() <= MIN_HELD_WIDTH:
            return None
        kin = self.kinematics
        a, b = kin.fk(traj.positions[0])[0], kin.fk(traj.positions[-1])[0]
        if float(np.hypot(*(b - a)[:2])) < 0.05:
            return None
        return max(1, round(self.drop_at * n))


class MotorController:
    """MotorMind's controller: validates a batch (planned whole from the measured state before
    anything moves) and executes it through `ArmController.run_motion`; returns the measured
    motion per command."""

    def __init__(self, backend: EnvMotionBackend, kinematics: Any) -> None:
        self.robot = load_robot("fr3")
        self.backend = backend
        self.arm = ArmController(self.robot, kinematics, backend, backend.env.dt)
        self.slot = GoalSlot()
        self._handle: object | None = None

    def stop_at_boundary(self) -> None:
        """A STOP: the batch ends at its next command boundary (ExecuteMotion's cancel)."""
        handle = self._handle
        if handle is not None:
            self.slot.cancel(handle, at_boundary=True)

    def execute(self, commands: list[MotionCommand],
                on_command: Callable[[int], None]) -> tuple[Measured, list[np.ndarray]]:
        handle = object()
        run = self.slot.begin(handle)
        self._handle = handle
        p0 = self.arm.kinematics.fk(self.backend.env.joint_positions())[0]
        self.backend.commands, self.backend.index = list(commands), 0

        def boundary(i: int, _pose: Any) -> None:
            self.backend.index = i + 1
            on_command(i)

        try:
            res = self.arm.run_motion(run, lambda: commands, boundary)
        finally:
            self._handle = None
            self.slot.end(run)
        poses = [np.asarray(p, float) for p, _q in res.poses]
        prev, disp = p0, []
        for p in poses:
            disp.append(round(float(np.linalg.norm(p - prev)) * 1000.0, 1))
            prev = p
        status = {0: "succeeded", 1: "cancelled", 2: "cancelled", 3: "rejected", 4: "failed"}[
            int(res.status)]
        return Measured(executed=res.commands_executed, total=len(commands), status=status,
                        message=res.message, displacement_mm=disp,
                        widths_mm=[round(w * 1000.0, 2) for w in res.widths]), poses
