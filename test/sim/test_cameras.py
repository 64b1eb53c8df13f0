"""Cameras: RGB, metric depth and entity segmentation agree with the scene geometry."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest

from mango.errors import InputError
from mango.sim.env import SimEnv

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"


@pytest.fixture(scope="module")
def env() -> SimEnv:
    e = SimEnv(DATA / "tiny_basket.yaml", seed=0, cameras=("front", "wrist"),
               image_size=(160, 120))
    yield e
    e.close()


def _project(env: SimEnv, camera: str, point: np.ndarray) -> tuple[int, int, float]:
    """Pixel (u, v) and depth along the optical axis of a world point."""
    cid = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
    pos = env.data.cam_xpos[cid]
    rot = env.data.cam_xmat[cid].reshape(3, 3)
    pc = rot.T @ (point - pos)  # camera frame: x right, y up, looking along -z
    info = env.camera_info(camera)
    z = -pc[2]
    u = info.cx + info.fx * pc[0] / z
    v = info.cy - info.fy * pc[1] / z
    return round(u), round(v), float(z)


def test_shapes_types_and_intrinsics(env: SimEnv) -> None:
    rgb, depth, seg = env.render("front")
    assert rgb.shape == (120, 160, 3) and rgb.dtype == np.uint8
    assert depth.shape == (120, 160) and depth.dtype == np.float32
    assert seg.shape == (120, 160) and seg.dtype == np.int32
    info = env.camera_info("front")
    fovy = env.model.cam_fovy[mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_CAMERA, "front")]
    # pixel centres at integer coordinates (OpenCV/ROS): the image centre is (W-1)/2, (H-1)/2
    assert (info.width, info.height, info.cx, info.cy) == (160, 120, 79.5, 59.5)
    assert math.isclose(info.fy, 60.0 / math.tan(math.radians(fovy) / 2))
    assert info.fx == info.fy
    w_rgb, w_depth, _ = env.render("wrist")
    assert w_rgb.std() > 1.0 and np.all(w_depth > 0)
    with pytest.raises(InputError, match="unknown camera"):
        env.render("nope")


def test_depth_is_metric_and_segmentation_names_entities(env: SimEnv) -> None:
    env.reset(0)
    _, depth, seg = env.render("front")
    ids = env.segmentation_ids
    for name in ("can_1", "basket_1", "main_table"):
        assert ids.index(name) in np.unique(seg)
    can = env.world_state().objects["can_1"]
    # the can's top-centre point: its pixel shows the can at the projected depth
    top = np.asarray(can.position) + np.array([0, 0, can.size[2] / 2 - 0.005])
    u, v, z = _project(env, "front", top)
    assert ids[seg[v, u]] == "can_1"
    assert abs(float(depth[v, u]) - z) < 0.03
    # the table far from everything: depth equals the ray length to the plane z = height
    table = (seg == ids.index("main_table"))
    vs, us = np.nonzero(table)
    v0, u0 = int(vs.max()), int(us[vs.argmax()])
    cid = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_CAMERA, "front")
    pos = env.data.cam_xpos[cid]
    rot = env.data.cam_xmat[cid].reshape(3, 3)
    info = env.camera_info("front")
    ray_c = np.array([(u0 - info.cx) / info.fx, -(v0 - info.cy) / info.fy, -1.0])
    ray_w = rot @ ray_c
    t = (env.scene.table.height - pos[2]) / ray_w[2]  # depth along the axis = t (ray_c z = -1)
    assert abs(float(depth[v0, u0]) - t) < 0.02


def test_no_geometry_is_no_reading(env: SimEnv) -> None:
    """A ray that hits nothing (above the scene) reads +Inf, "too far", as REP 117 defines
    the non-finite ranges that REP 118 depth images use (ros-infrastructure/rep,
    rep-0117.rst, rep-0118.rst) - never the far clipping plane, which a perception backend
    would back-project to a surface metres away."""
    env.reset(0)
    _, depth, _ = env.render("front")
    far = np.isinf(depth)
    # the top rows look over the scene (the arm in front of part of them)
    assert far[:10].mean() > 0.7 and np.isposinf(depth[far]).all()
    assert float(depth[~far].max()) < 5.0  # everything else is a real surface
    assert not np.isnan(depth).any()


def test_shadows_are_off_by_default(env: SimEnv) -> None:
    assert env.shadows is False
    env.render("front", depth=False, seg=False)
    r = next(iter(env._renderers.values()))
    assert r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] == 0
