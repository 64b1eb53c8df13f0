"""How the hand gets to the pre-grasp and carries to above the release: the transit legs.

The straight Cartesian legs next to an object (approach, lift, descend, retreat) always run
on the IK ladder; the transit legs in free space are a backend:
- `LadderTransit` (the default): up to cruise height, across, down to the point above, on
  the IK ladder (`PlannedArm`), pure Python, nothing to install.
- `MoveItTransit`: a collision-aware plan from MoveIt through `moveit_py` (planning group
  `fr3_arm` of `franka_fr3_moveit_config`, goal link `fr3_hand_tcp`, which is this project's
  TCP: `control.kinematics`' flange + 10.34 cm turned -45 deg), for a system ROS 2 with
  MoveIt; its trajectory is resampled at the control rate into the same rows.
Either way the rows become the 8-D chunks sent through `ExecuteChunk`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from mango.errors import UnreachableError
from mango.sim.expert.arm import DT, PlannedArm


class TransitPlanner(Protocol):
    """Rows (7 joints + width, one per control step) taking `arm` to `pos`/`quat`; `arm` is
    left at the end of them. `UnreachableError` with the reason when there is no way."""

    name: str

    def approach(self, arm: PlannedArm, pos: np.ndarray, quat: np.ndarray,
                 width: float) -> list[np.ndarray]: ...

    def transport(self, arm: PlannedArm, pos: np.ndarray,
                  quat: np.ndarray) -> list[np.ndarray]: ...


class LadderTransit:
    """Transit on the IK ladder: up, across and down to the pre-grasp; one eased line while
    carrying (the hand is at cruise height already)."""

    name = "ik"

    def approach(self, arm: PlannedArm, pos: np.ndarray, quat: np.ndarray,
                 width: float) -> list[np.ndarray]:
        rows: list[np.ndarray] = []
        for part in arm.travel_to(pos, quat, width=width):
            rows += part
        return rows

    def transport(self, arm: PlannedArm, pos: np.ndarray,
                  quat: np.ndarray) -> list[np.ndarray]:
        return arm.line(pos, quat)


class MoveItTransit:
    """Transit planned by MoveIt (`moveit_py`'s `MoveItPy`): start state = the planned
    joints, goal = the TCP pose in the base frame, `plan()`, the response's
    `trajectory.get_robot_trajectory_msg().joint_trajectory` resampled every control step.

    `moveit` is a `moveit.planning.MoveItPy`; `robot_state_type` is
    `moveit.core.robot_state.RobotState` (imported when not given); `base_pose` is the
    robot base (`base_frame`) in the world the executor plans in."""

    name = "moveit"

    def __init__(self, moveit: Any, base_pose: tuple[Sequence[float], Sequence[float]],
                 joint_names: Sequence[str], *, group: str = "fr3_arm",
                 link: str = "fr3_hand_tcp", base_frame: str = "fr3_link0",
                 robot_state_type: Any = None) -> None:
        from mango.geometry import quat_to_mat

        if robot_state_type is None:
            from moveit.core.robot_state import RobotState as robot_state_type
        self.moveit, self.group, self.link, self.base_frame = moveit, group, link, base_frame
        self.component = moveit.get_planning_component(group)
        self.robot_state_type = robot_state_type
        self.joint_names = list(joint_names)
        self._bp = np.asarray(base_pose[0], float)
        self._br = quat_to_mat(base_pose[1])

    def approach(self, arm: PlannedArm, pos: np.ndarray, quat: np.ndarray,
                 width: float) -> list[np.ndarray]:
        return self._plan(arm, pos, quat, width)

    def transport(self, arm: PlannedArm, pos: np.ndarray,
                  quat: np.ndarray) -> list[np.ndarray]:
        return self._plan(arm, pos, quat, arm.width)

    def _plan(self, arm: PlannedArm, pos: np.ndarray, quat: np.ndarray,
              width: float) -> list[np.ndarray]:
        from geometry_msgs.msg import PoseStamped

        from mango.geometry import mat_to_quat, quat_to_mat

        start = self.robot_state_type(self.moveit.get_robot_model())
        start.set_joint_group_positions(self.group, np.asarray(arm.q, float))
        start.update()
        self.component.set_start_state(robot_state=start)
        p = self._br.T @ (np.asarray(pos, float) - self._bp)
        w, x, y, z = mat_to_quat(self._br.T @ quat_to_mat(quat))
        goal = PoseStamped()
        goal.header.frame_id = self.base_frame
        goal.pose.position.x, goal.pose.position.y, goal.pose.position.z = map(float, p)
        o = goal.pose.orientation
        o.w, o.x, o.y, o.z = float(w), float(x), float(y), float(z)
        self.component.set_goal_state(pose_stamped_msg=goal, pose_link=self.link)
        response = self.component.plan()
        if not response:
            code = getattr(getattr(response, "error_code", None), "val", "?")
            raise UnreachableError(f"MoveIt found no plan for group '{self.group}' to "
                                   f"{np.round(p, 3).tolist()} in {self.base_frame} "
                                   f"(MoveItErrorCodes {code})")
        traj = response.trajectory.get_robot_trajectory_msg().joint_trajectory
        rows = self._resample(traj, arm.q, arm.width, width)
        arm.q, arm.width = rows[-1][:7].copy(), float(rows[-1][7])
        return rows

    def _resample(self, traj: Any, q0: np.ndarray, w0: float, w1: float) -> list[np.ndarray]:
        """The trajectory's points (any joint order, times from its start) every control
        step, the width ramping from `w0` to `w1` over it."""
        names = list(traj.joint_names)
        missing = [n for n in self.joint_names if n not in names]
        if missing or not traj.points:
            raise UnreachableError(f"MoveIt's trajectory lacks joints {missing}" if missing
                                   else "MoveIt's trajectory has no points")
        idx = [names.index(n) for n in self.joint_names]
        t = np.array([pt.time_from_start.sec + pt.time_from_start.nanosec * 1e-9
                      for pt in traj.points])
        q = np.array([[pt.positions[i] for i in idx] for pt in traj.points])
        if t[0] > 0:  # a trajectory that does not restate its start begins where the arm is
            t, q = np.r_[0.0, t], np.vstack([np.asarray(q0, float), q])
        if np.any(np.diff(t) < 0):
            raise UnreachableError("MoveIt's trajectory goes back in time")
        n = max(1, int(np.ceil(t[-1] / DT)))
        ts = np.minimum(np.arange(1, n + 1) * DT, t[-1])
        cols = [np.interp(ts, t, q[:, j]) for j in range(q.shape[1])]
        return [np.r_[[c[k] for c in cols], w0 + (k + 1) / n * (w1 - w0)] for k in range(n)]
