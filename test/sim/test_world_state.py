"""World-state extraction against MuJoCo's own data, and the spec §3 record format."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest

from mango.oracle.world_state import parse_world_state
from mango.sim.env import SimEnv

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"


@pytest.fixture(scope="module")
def drawer_env() -> SimEnv:
    return SimEnv("bowl_drawer", seed=3, cameras=())


@pytest.fixture(scope="module")
def stove_env() -> SimEnv:
    return SimEnv("stove_moka", seed=1, cameras=())


def test_poses_sizes_and_kinds_match_mujoco(drawer_env: SimEnv) -> None:
    env = drawer_env
    env.reset(3)
    ws = env.world_state()
    m, d = env.model, env.data
    for e in env.scene.entities:
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, e.id)
        got = ws.objects[e.id]
        assert np.allclose(got.position, d.xpos[bid])
        assert np.allclose(np.abs(np.dot(got.orientation, d.xquat[bid])), 1.0)
        assert got.size == e.size
        assert got.kind == e.kind
    region = ws.objects["white_cabinet_1_bottom_region"]
    sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "white_cabinet_1_bottom_region")
    assert region.kind == "region" and region.parent == "white_cabinet_1"
    assert np.allclose(region.position, d.site_xpos[sid])
    assert np.allclose(region.size, 2 * m.site_size[sid])
    table = ws.objects["main_table"]
    assert table.kind == "surface"
    assert math.isclose(table.position[2] + table.size[2] / 2, env.scene.table.height)
    hand = ws.objects["robot_hand"]
    assert hand.kind == "robot"
    assert np.allclose(hand.position, env.hand_pose()[0])
    # the hand centre lies between the two fingertips
    left = d.xpos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "left_finger")]
    right = d.xpos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "right_finger")]
    mid = (left + right) / 2
    assert np.linalg.norm(np.asarray(hand.position)[:2] - mid[:2]) < 0.01


def test_drawer_region_moves_with_the_drawer_joint(drawer_env: SimEnv) -> None:
    env = drawer_env
    env.reset(3)
    before = env.world_state()
    j = before.joints["white_cabinet_1_bottom_region"]
    assert (j.q_open, j.q_closed) == (-0.14, 0.0)
    assert j.openness >= 1  # starts open, as in LIBERO
    adr = env.built.joint_qpos["white_cabinet_1_bottom_region"]
    assert math.isclose(j.q, float(env.data.qpos[adr]))
    with env.lock:
        env.data.qpos[adr] = 0.0
        mujoco.mj_forward(env.model, env.data)
    after = env.world_state()
    dx = after.objects["white_cabinet_1_bottom_region"].position[0] - \
        before.objects["white_cabinet_1_bottom_region"].position[0]
    assert math.isclose(dx, -j.q, abs_tol=1e-6)  # slides along +x by the joint change
    assert after.joints["white_cabinet_1_bottom_region"].openness <= 0.05
    assert after.objects["white_cabinet_1"].position == before.objects["white_cabinet_1"].position


def test_device_turns_on_past_the_knob_threshold(stove_env: SimEnv) -> None:
    env = stove_env
    env.reset(1)
    assert env.world_state().devices["flat_stove_1"].on is False
    adr = env.built.joint_qpos["flat_stove_1_knob"]
    for q, on in ((0.49, False), (0.51, True)):
        with env.lock:
            env.data.qpos[adr] = q
            mujoco.mj_forward(env.model, env.data)
        ws = env.world_state()
        assert ws.devices["flat_stove_1"].on is on
        assert math.isclose(ws.joints["flat_stove_1_knob"].q, q)


def test_contacts_gripper_and_grasp_fact(stove_env: SimEnv) -> None:
    env = stove_env
    ws = env.reset(1)
    assert ("moka_pot_1", "main_table") in ws.contacts or ("main_table", "moka_pot_1") in \
        ws.contacts
    assert ws.facts["grasped(moka_pot_1)"] is False
    assert "grasped(flat_stove_1)" not in ws.facts  # only movable objects
    width = float(np.sum(env.data.qpos[env.built.finger_qpos]))
    assert math.isclose(ws.gripper.width, width) and ws.gripper.closed is False
    # every reported contact is a real MuJoCo contact between those entities
    owner = env.built.geom_owner
    pairs = {frozenset((owner[c.geom1], owner[c.geom2]))
             for c in env.data.contact[: env.data.ncon]}
    assert all(frozenset(p) in pairs for p in ws.contacts)


def test_record_round_trip_and_determinism() -> None:
    a = SimEnv(DATA / "tiny_basket.yaml", seed=5, cameras=())
    b = SimEnv(DATA / "tiny_basket.yaml", seed=5, cameras=())
    for env in (a, b):
        env.step_chunk(np.tile(np.r_[env.joint_positions() + 0.05, 0.04], (4, 1)))
    ra, rb = a.world_state().to_record(), b.world_state().to_record()
    assert ra == rb
    assert parse_world_state(ra).to_record() == ra
    c = SimEnv(DATA / "tiny_basket.yaml", seed=6, cameras=())
    assert c.world_state().objects["can_1"].position != a.reset(5).objects["can_1"].position


def test_step_in_one_thread_while_another_reads_and_renders() -> None:
    import threading

    env = SimEnv(DATA / "tiny_basket.yaml", seed=1, cameras=("front",), image_size=(64, 48))
    seen: list[float] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                seen.append(env.world_state().t)
                rgb, depth, seg = env.render("front")
                assert rgb.shape == (48, 64, 3) and depth.shape == seg.shape == (48, 64)
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    try:
        q = env.joint_positions()
        i = 0
        while len(seen) < 3 or i < 30:  # keep stepping until the reader saw a few states
            env.step(np.r_[q + 0.002 * min(i, 100), 0.08])
            i += 1
    finally:
        stop.set()
        t.join()
    env.close()
    assert not errors, errors
    assert len(seen) >= 2 and seen == sorted(seen)
