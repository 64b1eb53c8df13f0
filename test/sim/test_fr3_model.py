"""The simulator's arm is a real FR3: its kinematics are Franka's published ones.

The DH table below is written from Franka's documentation, not from our code: "Denavit-
Hartenberg parameters" (modified DH, Craig's convention) at
https://frankaemika.github.io/docs/control_parameters.html#denavithartenberg-parameters
(the FR3 keeps the Panda's geometry): joint i has a_{i-1}, d_i, alpha_{i-1}, theta_i = q_i;
the flange has d = 0.107 and no rotation.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from mango.control import FR3Kinematics, load_robot
from mango.geometry import quat_to_mat
from mango.sim.build import FINGER_JOINTS, TCP_OFFSET, build_robot, fr3_spec
from mango.sim.env import SimEnv
from mango.sim.kinematics import SimKinematics
from mango.sim.scene import FR3_READY, RobotSpec, SceneSpec, load_scene, resolve_scene

# (a [m], d [m], alpha [rad]) per joint, Franka's table
DH = [
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -math.pi / 2),
    (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2),
    (-0.0825, 0.384, -math.pi / 2),
    (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
]
FLANGE = (0.0, 0.107, 0.0)
READY = [0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4]
FR3 = load_robot("fr3")


def _craig(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    """Modified DH: Rot_x(alpha) Trans_x(a) Rot_z(theta) Trans_z(d)."""
    rx = np.eye(4)
    rx[1:3, 1:3] = [[math.cos(alpha), -math.sin(alpha)], [math.sin(alpha), math.cos(alpha)]]
    tx = np.eye(4)
    tx[0, 3] = a
    rz = np.eye(4)
    rz[:2, :2] = [[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]
    tz = np.eye(4)
    tz[2, 3] = d
    return rx @ tx @ rz @ tz


def dh_flange(q: np.ndarray) -> np.ndarray:
    t = np.eye(4)
    for (a, d, alpha), th in zip(DH, q, strict=True):
        t = t @ _craig(a, d, alpha, float(th))
    return t @ _craig(*FLANGE, 0.0)


def _bare() -> SceneSpec:
    return SceneSpec(name="robot", instruction="", goal="true", entities=[], expert=[],
                     robot=RobotSpec(base=(0.0, 0.0, 0.0)))


@pytest.fixture(scope="module")
def model_data() -> tuple[mujoco.MjModel, mujoco.MjData]:
    model = fr3_spec().compile()
    return model, mujoco.MjData(model)


def _mujoco_flange(model: mujoco.MjModel, data: mujoco.MjData, q: np.ndarray) -> np.ndarray:
    data.qpos[:7] = q
    mujoco.mj_kinematics(model, data)
    link7 = model.body("fr3_link7").id
    t = np.eye(4)
    t[:3, :3] = data.xmat[link7].reshape(3, 3)
    t[:3, 3] = data.xpos[link7]
    return t @ _craig(*FLANGE, 0.0)


def test_model_fk_equals_franka_dh(model_data: tuple[mujoco.MjModel, mujoco.MjData]) -> None:
    model, data = model_data
    rng = np.random.default_rng(7)
    lo, hi = FR3.lower, FR3.upper
    for _ in range(300):
        q = rng.uniform(lo, hi)
        want, got = dh_flange(q), _mujoco_flange(model, data, q)
        assert np.allclose(got[:3, 3], want[:3, 3], atol=1e-9), q
        assert np.allclose(got[:3, :3], want[:3, :3], atol=1e-9), q
    # the hand body sits on the flange (Franka Hand: turned -45 deg about the flange z)
    hand = model.body("hand").id
    assert np.allclose(data.xpos[hand], dh_flange(q)[:3, 3], atol=1e-9)


def test_ready_pose_flange_and_tcp(model_data: tuple[mujoco.MjModel, mujoco.MjData]) -> None:
    model, data = model_data
    flange = _mujoco_flange(model, data, np.array(READY))
    # Franka's DH at the ready pose: the flange 30.7 cm in front, 59.0 cm up, pointing down
    assert np.allclose(flange[:3, 3], [0.30689, 0.0, 0.59028], atol=1e-5)
    assert np.allclose(flange[:3, 2], [0, 0, -1], atol=1e-9)
    assert np.allclose(dh_flange(np.array(READY))[:3, 3], [0.30689, 0.0, 0.59028], atol=1e-5)
    env = SimEnv(_bare(), cameras=())
    p, _ = env.hand_pose()
    # the hand centre is Franka Hand's TCP, 0.1034 m beyond the flange
    assert TCP_OFFSET == 0.1034
    assert np.allclose(p, [0.30689, 0.0, 0.59028 - 0.1034], atol=2e-3)  # after settling


def test_one_robot_description() -> None:
    # franka_ros2's ready pose: the default `start_joint_configuration` of
    # frankarobotics/franka_ros2 franka_example_controllers/src/fr3/
    # move_to_start_example_controller.cpp is {0, -pi/4, 0, -3pi/4, 0, pi/2, pi/4}
    assert np.allclose(FR3.home, READY, atol=1e-4)
    assert np.allclose(FR3_READY, READY, atol=1e-12)
    assert RobotSpec().home == FR3_READY
    for name in ("book_caddy", "bowl_drawer", "two_moka_stove"):
        assert np.allclose(load_scene(resolve_scene(name)).robot.home, FR3.home, atol=1e-4)
    kin = build_robot(_bare())
    ranges = np.array([kin.model.jnt_range[kin.model.actuator_trnid[a, 0]]
                       for a in kin.arm_actuators])
    assert np.allclose(ranges[:, 0], FR3.lower, atol=1e-4)
    assert np.allclose(ranges[:, 1], FR3.upper, atol=1e-4)
    # FR3 limits accept the home pose the sim starts in
    assert np.all(FR3.lower <= FR3.home) and np.all(FR3.home <= FR3.upper)


def test_sim_ik_and_control_kinematics_agree_with_the_model() -> None:
    sim, real = SimKinematics(), FR3Kinematics(FR3)
    rng = np.random.default_rng(3)
    for _ in range(50):
        q = rng.uniform(FR3.lower, FR3.upper)
        (ps, qs), (pr, qr) = sim.fk(q), real.fk(q)
        assert np.allclose(ps, pr, atol=1e-9)
        assert np.allclose(quat_to_mat(qs), quat_to_mat(qr), atol=1e-9)
    p0, quat = real.fk(FR3.home)
    target = p0 + np.array([0.05, -0.08, -0.12])
    for kin in (sim, real):
        q = kin.ik(target, quat, FR3.home)
        assert np.all(q >= FR3.lower) and np.all(q <= FR3.upper)
        assert np.allclose(real.fk(q)[0], target, atol=1e-3)
        assert np.allclose(sim.fk(q)[0], target, atol=1e-3)


def test_fingers_close_and_open_within_a_second() -> None:
    # the shipped finger joints inherit the arm's friction loss and barely close; ours must
    env = SimEnv(_bare(), cameras=())
    assert env.gripper_width() == pytest.approx(0.08, abs=1e-3)
    for _ in range(15):  # one second at 15 Hz
        env.step(np.r_[np.array(FR3_READY), 0.0])
    assert env.gripper_width() < 0.003
    for _ in range(15):
        env.step(np.r_[np.array(FR3_READY), 0.08])
    assert env.gripper_width() > 0.077
    # the two fingers move together (the Franka Hand's coupling)
    f = env.finger_positions()
    assert abs(f[0] - f[1]) < 1e-3
    assert len(FINGER_JOINTS) == 2


def test_a_grasped_can_is_squeezed_straight_and_survives_a_shake() -> None:
    # A round object between the Franka Hand's pads: the squeeze is along the opening axis
    # only (no contact pushing it out sideways) and a fast wrist shake does not work it loose.
    from mango.sim.expert.motions import down_quat
    from mango.sim.scene import EntitySpec

    can = EntitySpec(id="can_1", shape="cylinder", size=(0.055, 0.055, 0.1), mass=0.15,
                     position=(-0.1, 0.1))
    scene = SceneSpec(name="grip", instruction="", goal="true", entities=[can], expert=[])
    env = SimEnv(scene, cameras=())
    ik = env.ik_solver()
    c = np.asarray(env.world_state().objects["can_1"].position)
    top = c[2] + 0.05
    q_above = ik.require(c + np.array([0, 0, 0.08]), down_quat(math.pi / 2), env.joint_positions())
    q_at = ik.require(np.r_[c[:2], top - 0.022], down_quat(math.pi / 2), q_above)
    for q, w, n in ((q_above, 0.08, 20), (q_at, 0.08, 20), (q_at, 0.0, 15)):
        for _ in range(n):
            env.step(np.r_[q, w])
    m, d = env.model, env.data
    body = env.built.entity_body["can_1"]
    force, squeeze, f6 = np.zeros(3), 0.0, np.zeros(6)
    for i in range(d.ncon):
        con = d.contact[i]
        if body in (m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]):
            mujoco.mj_contactForce(m, d, i, f6)
            normal = con.frame[:3] * f6[0]
            if env.built.geom_owner[con.geom1].startswith("robot") or \
                    env.built.geom_owner[con.geom2].startswith("robot"):
                force += normal if m.geom_bodyid[con.geom2] == body else -normal
                squeeze += abs(f6[0])
    opening = quat_to_mat(env.hand_pose()[1])[:, 1]
    sideways = force - np.dot(force, opening) * opening
    assert squeeze > 40.0  # both fingers together, N
    assert np.linalg.norm(sideways[:2]) < 1.0
    q_up = ik.require(c + np.array([0, 0, 0.15]), down_quat(math.pi / 2), q_at)
    for _ in range(15):
        env.step(np.r_[q_up, 0.0])
    for k in range(12):  # joint 7 flicked +-0.3 rad every control period
        env.step(np.r_[q_up + np.eye(7)[6] * (0.3 if k % 2 else -0.3), 0.0])
    assert env.world_state().fact("grasped(can_1)")
    assert env.world_state().objects["can_1"].position[2] > c[2] + 0.08


def test_the_published_tf_puts_the_hand_where_the_sim_has_it() -> None:
    """What rviz draws from `/tf` (world -> base from sim_node, base -> fr3_hand_tcp from
    robot_state_node's URDF chain) is the sim's own hand, for the arm wherever it is."""
    from mango.control.robot_state import RobotState, load_robot_description

    state = RobotState(load_robot_description()[0])
    env = SimEnv("libero10_stove_moka", image_size=(32, 32))
    rng = np.random.default_rng(5)
    robot = load_robot("fr3")
    try:
        for _ in range(5):
            q = rng.uniform(robot.lower + 0.2, robot.upper - 0.2)
            with env.lock:
                env.data.qpos[env.built.arm_qpos] = q
                mujoco.mj_forward(env.model, env.data)
            edges = {t.child: t for t in state.fixed_transforms()}
            edges.update({t.child: t for t in state.transforms(
                {f"fr3_joint{i + 1}": float(v) for i, v in enumerate(env.joint_positions())})})
            m, frame = np.eye(4), "fr3_hand_tcp"
            while frame in edges:
                m = edges[frame].matrix() @ m
                frame = edges[frame].parent
            base_pos, base_quat = env.robot_base_pose()
            world = np.eye(4)
            world[:3, :3], world[:3, 3] = quat_to_mat(base_quat), base_pos
            hand_pos, hand_quat = env.hand_pose()
            np.testing.assert_allclose((world @ m)[:3, 3], hand_pos, atol=1e-6)
            dot = abs(float(np.dot(hand_quat, _mat_quat((world @ m)[:3, :3]))))
            assert dot == pytest.approx(1.0, abs=1e-6)
    finally:
        env.close()


def _mat_quat(r: np.ndarray) -> np.ndarray:
    from mango.geometry import mat_to_quat

    return mat_to_quat(r)
