"""A stand-in of the moveit_py API the `moveit` transit backend calls, for a machine without
MoveIt: the signatures and return shapes are moveit_py's, read from its code (moveit/moveit2):

- `moveit.planning.MoveItPy.get_planning_component(name)`, `get_robot_model()`
  (moveit_py/moveit/planning.pyi);
- `PlanningComponent.set_start_state(configuration_name=None, robot_state=None)`,
  `set_goal_state(configuration_name=None, robot_state=None, pose_stamped_msg=None,
  pose_link=None, motion_plan_constraints=None)`, `plan(single_plan_parameters=None,
  multi_plan_parameters=None, planning_scene=None, solution_selection_function=None,
  stopping_criterion_callback=None)` (moveit_py/src/moveit/moveit_ros/moveit_cpp/
  planning_component.cpp, `init_planning_component`);
- the plan's `MotionPlanResponse`: truthy on success, `error_code.val`, `trajectory`
  (moveit_py/src/moveit/moveit_core/planning_interface/planning_response.cpp), whose
  `get_robot_trajectory_msg()` is a moveit_msgs/RobotTrajectory with `joint_trajectory`
  (moveit_py/src/moveit/moveit_core/robot_trajectory/robot_trajectory.cpp);
- `moveit.core.robot_state.RobotState(robot_model)`, `set_joint_group_positions(group,
  positions)`, `update()` (moveit_py/src/moveit/moveit_core/robot_state/robot_state.cpp).

It plans for real, without collision checking: the goal pose of `fr3_hand_tcp` in `fr3_link0`
through this project's FR3 IK ladder, a joint-space line timed at half the joints' speed
limits, its points in reversed joint order (the backend must map names, not positions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.geometry import quat_to_mat

GROUP, TIP, BASE = "fr3_arm", "fr3_hand_tcp", "fr3_link0"
SUCCESS, NO_IK_SOLUTION = 1, -31  # moveit_msgs/MoveItErrorCodes


class RobotState:
    """moveit.core.robot_state.RobotState"""

    def __init__(self, robot_model: Any) -> None:
        self.robot_model = robot_model
        self.groups: dict[str, np.ndarray] = {}
        self.updated = False

    def set_joint_group_positions(self, joint_model_group_name: str, position_values: Any
                                  ) -> None:
        if joint_model_group_name not in self.robot_model.groups:
            raise RuntimeError(f"unknown joint model group '{joint_model_group_name}'")
        self.groups[joint_model_group_name] = np.asarray(position_values, float)
        self.updated = False

    def update(self, force: bool = False) -> None:
        self.updated = True


@dataclass
class _Response:
    ok: bool
    error_code: Any
    trajectory: Any = None

    def __bool__(self) -> bool:
        return self.ok


@dataclass
class PlanningComponent:
    name: str
    moveit: MoveItPy
    start: RobotState | None = None
    goal: Any = None
    goals: list[tuple[Any, str]] = field(default_factory=list)

    def set_start_state(self, configuration_name: str | None = None,
                        robot_state: RobotState | None = None) -> bool:
        if (configuration_name is None) == (robot_state is None):
            raise ValueError("Must specify exactly one of configuration name and robot state")
        assert robot_state is not None and robot_state.updated  # moveit_py needs update()
        self.start = robot_state
        return True

    def set_goal_state(self, configuration_name: str | None = None, robot_state: Any = None,
                       pose_stamped_msg: Any = None, pose_link: str | None = None,
                       motion_plan_constraints: Any = None) -> bool:
        if pose_stamped_msg is None or pose_link is None:
            raise ValueError("a pose goal needs pose_stamped_msg and pose_link")
        self.goal = (pose_stamped_msg, pose_link)
        self.goals.append(self.goal)
        return True

    def plan(self, single_plan_parameters: Any = None, multi_plan_parameters: Any = None,
             planning_scene: Any = None, solution_selection_function: Any = None,
             stopping_criterion_callback: Any = None) -> _Response:
        m = self.moveit
        m.plans += 1
        if m.fail or self.start is None or self.goal is None:
            return _Response(False, SimpleNamespace(val=NO_IK_SOLUTION))
        msg, link = self.goal
        if msg.header.frame_id != BASE or link != TIP:
            return _Response(False, SimpleNamespace(val=-21))  # FRAME_TRANSFORM_FAILURE
        p, o = msg.pose.position, msg.pose.orientation
        q0 = self.start.groups[self.name]
        sol = m.kin.ladder.solve(np.array([p.x, p.y, p.z]),
                                 quat_to_mat([o.w, o.x, o.y, o.z]), q0)
        if not sol.ok:
            return _Response(False, SimpleNamespace(val=NO_IK_SOLUTION))
        duration = max(0.2, float(np.max(np.abs(sol.q - q0) / (0.5 * m.robot.vmax))))
        traj = JointTrajectory(joint_names=list(reversed(m.robot.joint_names)))
        for k in range(1, 21):
            pt = JointTrajectoryPoint(positions=list(reversed(
                (q0 + (sol.q - q0) * k / 20).tolist())))
            t = duration * k / 20
            pt.time_from_start.sec, pt.time_from_start.nanosec = int(t), int((t % 1) * 1e9)
            traj.points.append(pt)
        robot_traj = SimpleNamespace(get_robot_trajectory_msg=lambda: SimpleNamespace(
            joint_trajectory=traj))
        return _Response(True, SimpleNamespace(val=SUCCESS), robot_traj)


class MoveItPy:
    """moveit.planning.MoveItPy"""

    def __init__(self, node_name: str = "moveit_py", fail: bool = False) -> None:
        self.node_name = node_name
        self.robot = load_robot("fr3")
        self.kin = FR3Kinematics(self.robot)
        self.model = SimpleNamespace(groups={GROUP})
        self.components: dict[str, PlanningComponent] = {}
        self.fail = fail
        self.plans = 0

    def get_planning_component(self, planning_component_name: str) -> PlanningComponent:
        if planning_component_name not in self.model.groups:
            raise RuntimeError(f"no planning group '{planning_component_name}'")
        return self.components.setdefault(planning_component_name,
                                          PlanningComponent(planning_component_name, self))

    def get_robot_model(self) -> Any:
        return self.model
