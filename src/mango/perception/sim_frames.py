"""RGB-D frames straight from a `SimEnv` (the CLI, the bench and the tests; the node gets the
same from sim_node's topics), and what a lab's calibration file would hold for the sim.

`sim_frame` is the privileged view (the camera's true pose, the segmentation); a perception-only
estimator takes `estimated_frame` instead: the same images, the camera pose from the
extrinsics (a wrist camera's from the measured joints and FK) and no segmentation.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from mango.control.kinematics import Kinematics
from mango.control.robot import load_robot
from mango.geometry import mat_to_quat
from mango.perception.base import CameraPose, Intrinsics, RGBDFrame
from mango.perception.poses import CameraMount, Extrinsics, Placement
from mango.policy.kinematics import make_kinematics
from mango.sim.env import OPTICAL_IN_MJ_CAMERA, SimEnv


def sim_frame(env: SimEnv, camera: str, *, rgb: bool = True) -> RGBDFrame:
    """Render one camera: images, intrinsics, the optical frame's pose and the segmentation."""
    image, depth, seg = env.render(camera, rgb=rgb, depth=True, seg=True)
    pos, rot = env.camera_pose(camera)
    assert depth is not None
    return RGBDFrame(camera=camera, rgb=image, depth=_far_is_nan(env, depth),
                     intrinsics=_intrinsics(env, camera), pose=CameraPose(pos, rot),
                     stamp=env.last_render_time, segmentation=seg,
                     segmentation_ids=tuple(env.segmentation_ids))


def estimated_frame(env: SimEnv, camera: str, extrinsics: Extrinsics,
                    q: Sequence[float] | None = None, *,
                    kinematics: Kinematics | None = None) -> RGBDFrame:
    """Render one camera as a real one gives it: images and intrinsics, the pose from the
    extrinsics (a hand-carried camera's from the measured joints `q`), no segmentation."""
    image, depth, _ = env.render(camera, rgb=True, depth=True, seg=False)
    assert depth is not None
    kin = kinematics
    if kin is None and extrinsics.cameras.get(camera, CameraMount()).mount == "tcp":
        kin = make_kinematics(load_robot("fr3"))
    pose = extrinsics.camera_pose(camera, kin, None if q is None else list(q))
    return RGBDFrame(camera=camera, rgb=image, depth=_far_is_nan(env, depth),
                     intrinsics=_intrinsics(env, camera), pose=pose,
                     stamp=env.last_render_time)


def sim_extrinsics(env: SimEnv, kinematics: Kinematics | None = None) -> Extrinsics:
    """The sim's calibration: the robot base in the world, each fixed camera `mount: world`,
    each camera the arm carries `mount: tcp` with its offset from the TCP of `kinematics`
    (default: the FR3's, `make_kinematics(load_robot("fr3"))`), taken from the model at the
    home pose (the offset is rigid, so any pose would give it)."""
    kin = kinematics or make_kinematics(load_robot("fr3"))
    base_pos, base_quat = env.robot_base_pose()
    base = Placement(position=_vec(base_pos), orientation=_quat(base_quat))
    m, b = env.model, env.built
    home = np.asarray(env.scene.robot.home, float)
    data = mujoco.MjData(m)  # scratch: the env's own state is left alone
    data.qpos[b.arm_qpos] = home
    mujoco.mj_kinematics(m, data)
    mujoco.mj_camlight(m, data)  # camera poses from the bodies'
    tcp_pos, tcp_quat = kin.fk(home)
    world_t_tcp = base.matrix() @ Placement(position=_vec(tcp_pos),
                                            orientation=_quat(tcp_quat)).matrix()
    cameras: dict[str, CameraMount] = {}
    for cid in range(m.ncam):
        name = m.camera(cid).name
        t = np.eye(4)
        t[:3, :3] = data.cam_xmat[cid].reshape(3, 3) @ OPTICAL_IN_MJ_CAMERA
        t[:3, 3] = data.cam_xpos[cid]
        mount = "world" if int(m.cam_bodyid[cid]) == 0 else "tcp"
        if mount == "tcp":
            t = np.linalg.inv(world_t_tcp) @ t
        cameras[name] = CameraMount(mount=mount, position=_vec(t[:3, 3]),
                                    orientation=_quat(mat_to_quat(t[:3, :3])))
    return Extrinsics(robot_base=base, cameras=cameras)


def _intrinsics(env: SimEnv, camera: str) -> Intrinsics:
    info = env.camera_info(camera)
    return Intrinsics(info.width, info.height, info.fx, info.fy, info.cx, info.cy)


def _far_is_nan(env: SimEnv, depth: np.ndarray) -> np.ndarray:
    """The far plane is "nothing there"."""
    far = env.model.vis.map.zfar * env.model.stat.extent * 0.99
    return np.where(depth < far, depth, np.nan).astype(np.float32)


def _vec(v: Sequence[float]) -> tuple[float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]))


def _quat(q: Sequence[float]) -> tuple[float, float, float, float]:
    n = float(np.linalg.norm(q))
    return (float(q[0]) / n, float(q[1]) / n, float(q[2]) / n, float(q[3]) / n)
