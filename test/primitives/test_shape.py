"""A round body and its protrusion read from synthetic depth (a ray-cast mug seen by a camera
placed as the sim's front camera, or from above), and the grasps planned on it: the body's
axis and diameter, the handle's direction in every direction it can point, the hand's volume
against it, and the approach the planner picks because of it. No simulator."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from mango.perception.base import CameraPose, Detection, Intrinsics, RGBDFrame
from mango.perception.geometry import back_project, mask_box, point_box, to_world
from mango.primitives.grasps import GraspScene, grasp_options, plan_grasp, plan_side_grasp
from mango.primitives.planning import KnownFixture
from mango.primitives.shape import blocks, object_points, round_body

TABLE = 0.9
BASE = (-0.56, 0.0)


@dataclass(frozen=True)
class Mug:
    """A cylinder (axis at `xy`, radius, height) standing on the table with a box handle
    pointing `handle_deg` (the sim's mug: 2.4 x 1.2 x 4.8 cm, at mid height), or none."""

    xy: tuple[float, float] = (0.0, 0.0)
    radius: float = 0.0325
    height: float = 0.08
    handle_deg: float | None = 0.0
    handle: tuple[float, float, float] = (0.024, 0.012, 0.048)  # out, wide, tall
    handle_z: float = 0.5  # of the height, its middle

    def hits(self, o: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Distance along each ray (N x 3 origins and unit directions) to the mug, inf
        where it misses."""
        t = np.full(len(d), np.inf)
        cx, cy = self.xy
        z0, z1 = TABLE, TABLE + self.height
        # the side: |o + t d - c|_xy = r
        ox, oy = o[:, 0] - cx, o[:, 1] - cy
        a = d[:, 0] ** 2 + d[:, 1] ** 2
        b = 2 * (ox * d[:, 0] + oy * d[:, 1])
        c = ox ** 2 + oy ** 2 - self.radius ** 2
        disc = b * b - 4 * a * c
        with np.errstate(invalid="ignore", divide="ignore"):
            ts = (-b - np.sqrt(disc)) / (2 * a)
        z = o[:, 2] + ts * d[:, 2]
        ok = (disc >= 0) & (ts > 0) & (z >= z0) & (z <= z1)
        t = np.where(ok, ts, t)
        # the top
        with np.errstate(invalid="ignore", divide="ignore"):
            tt = (z1 - o[:, 2]) / d[:, 2]
        p = o + tt[:, None] * d
        ok = (tt > 0) & (np.hypot(p[:, 0] - cx, p[:, 1] - cy) <= self.radius)
        t = np.where(ok & (tt < t), tt, t)
        if self.handle_deg is None:
            return t
        return np.minimum(t, self._handle_hits(o, d))

    def _handle_hits(self, o: np.ndarray, d: np.ndarray) -> np.ndarray:
        yaw = math.radians(self.handle_deg or 0.0)
        out, wide, tall = self.handle
        r = np.array([[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0],
                      [0, 0, 1]])
        centre = np.array([self.xy[0], self.xy[1], TABLE + self.handle_z * self.height]) \
            + r @ np.array([self.radius + out / 2 - 0.001, 0.0, 0.0])
        half = np.array([out / 2, wide / 2, tall / 2])
        lo_, do = (o - centre) @ r, d @ r  # in the handle's frame
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (-half - lo_) / do, (half - lo_) / do
        tn = np.nanmax(np.minimum(t1, t2), axis=1)
        tf = np.nanmin(np.maximum(t1, t2), axis=1)
        return np.where((tn <= tf) & (tn > 0), tn, np.inf)


@dataclass(frozen=True)
class Box:
    """A box on the table: centre xy, size, yaw (degrees)."""

    xy: tuple[float, float]
    size: tuple[float, float, float]
    yaw: float

    def hits(self, o: np.ndarray, d: np.ndarray) -> np.ndarray:
        yaw = math.radians(self.yaw)
        r = np.array([[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0],
                      [0, 0, 1]])
        centre = np.array([*self.xy, TABLE + self.size[2] / 2])
        half = np.asarray(self.size) / 2
        lo_, do = (o - centre) @ r, d @ r
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (-half - lo_) / do, (half - lo_) / do
        tn = np.nanmax(np.minimum(t1, t2), axis=1)
        tf = np.nanmin(np.maximum(t1, t2), axis=1)
        return np.where((tn <= tf) & (tn > 0), tn, np.inf)


def _camera(pos, lookat, n=(320, 240), fovy=50.0) -> tuple[Intrinsics, CameraPose]:
    """A pinhole camera at `pos` looking at `lookat` (optical frame: z forward, y down)."""
    w, h = n
    f = h / 2 / math.tan(math.radians(fovy) / 2)
    z = np.subtract(lookat, pos).astype(float)
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])
    if np.linalg.norm(x) < 1e-6:  # straight down: image right is world x
        x = np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return (Intrinsics(w, h, f, f, (w - 1) / 2, (h - 1) / 2),
            CameraPose(np.asarray(pos, float), np.column_stack((x, y, z))))


FRONT = ((0.75, 0.0, 1.55), (-0.05, 0.0, 0.9))  # the sim's front camera
ABOVE = ((0.0, 0.0, 1.6), (0.0, 0.0, 0.9))


def _look(shape, camera=FRONT, size=(320, 240)) -> tuple[Detection, RGBDFrame]:
    """Ray-cast depth of `shape` on the table, its mask and the detection a backend makes of
    it (the box and yaw of its visible points, as `perception.geometry` gives them)."""
    intr, pose = _camera(*camera, n=size)
    v, u = np.mgrid[0:intr.height, 0:intr.width]
    rays = np.stack(((u - intr.cx) / intr.fx, (v - intr.cy) / intr.fy, np.ones(u.shape)), -1)
    rays = rays.reshape(-1, 3)
    world = rays @ pose.rotation.T
    unit = world / np.linalg.norm(world, axis=1, keepdims=True)
    o = np.broadcast_to(pose.position, unit.shape)
    t_obj = shape.hits(o, unit)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_table = np.where(unit[:, 2] < 0, (TABLE - pose.position[2]) / unit[:, 2], np.inf)
    t = np.minimum(t_obj, t_table)
    depth = (t * (unit @ pose.rotation[:, 2])).reshape(intr.height, intr.width)
    mask = (t_obj <= t_table).reshape(intr.height, intr.width) & np.isfinite(depth)
    frame = RGBDFrame("cam", None, depth.astype(np.float32), intr, pose)
    pb = point_box(to_world(back_project(frame.depth, intr, mask), pose))
    assert pb is not None
    box = mask_box(mask)
    assert box is not None
    det = Detection("the mug", "mug_1", "mug", 1.0, box, mask, pb.centroid, pb.size, pb.yaw,
                    "cam", 0.0)
    return det, frame


def _body(det: Detection, frame: RGBDFrame):
    bottom, top = det.centroid[2] - det.size[2] / 2, det.centroid[2] + det.size[2] / 2
    return round_body(object_points(det, frame), bottom, top)


def _deg(v) -> float:
    return math.degrees(math.atan2(v[1], v[0]))


def _angle_diff(a: float, b: float) -> float:
    return abs((a - b + 180) % 360 - 180)


@pytest.mark.parametrize("size", [(640, 480), (320, 240)])
@pytest.mark.parametrize("handle", [0, 30, 60, 90, 120, -45, -90, -120])
def test_the_body_and_the_handle_are_read_wherever_the_handle_points(
        handle: float, size: tuple[int, int]) -> None:
    """The front camera (1.55 m up, 0.8 m away; 2 or 4 mm pixels at the mug) sees the top,
    the near side and the handle where it does not point away from it."""
    mug = Mug((0.02, -0.03), handle_deg=handle)
    det, frame = _look(mug, FRONT, size)
    body = _body(det, frame)
    assert body is not None
    assert math.dist(body.centre, mug.xy) < 0.003
    assert body.radius == pytest.approx(mug.radius, abs=0.003)
    assert body.handle is not None
    assert _angle_diff(_deg(body.handle), handle) < 8
    assert body.reach == pytest.approx(mug.radius + 0.024, abs=0.004)
    # the box the detection gives is off the body toward the handle
    assert math.dist(det.centroid[:2], mug.xy) > 0.005


@pytest.mark.parametrize("handle", [150, 180, -150, -135])
def test_a_handle_the_body_hides_is_not_invented(handle: float) -> None:
    """Pointing away from the camera the handle is partly or wholly behind the body: found
    where it is, or not at all (then it is a plain round body), never somewhere else."""
    det, frame = _look(Mug(handle_deg=handle))
    body = _body(det, frame)
    assert body is not None and math.dist(body.centre, (0.0, 0.0)) < 0.003
    assert body.handle is None or _angle_diff(_deg(body.handle), handle) < 10


@pytest.mark.parametrize("handle", [0, 100, -150])
def test_seen_from_above_the_footprint_is_a_disc_and_a_handle(handle: float) -> None:
    mug = Mug(handle_deg=handle)
    body = _body(*_look(mug, ABOVE))
    assert body is not None and body.handle is not None
    assert _angle_diff(_deg(body.handle), handle) < 8
    assert body.radius == pytest.approx(mug.radius, abs=0.003)


def test_a_can_is_round_without_a_protrusion_and_a_box_is_not_round() -> None:
    body = _body(*_look(Mug((0.05, 0.05), radius=0.0275, height=0.1, handle_deg=None)))
    assert body is not None and body.handle is None and body.directions == ()
    assert body.radius == pytest.approx(0.0275, abs=0.003)
    for size in ((640, 480), (320, 240)):
        for yaw in (0, 15, 30, 45):
            for box in ((0.06, 0.06, 0.08), (0.05, 0.05, 0.05), (0.1, 0.05, 0.06),
                        (0.08, 0.04, 0.1)):
                assert _body(*_look(Box((0.0, 0.0), box, yaw), FRONT, size)) is None, (box, yaw)


def test_no_depth_or_another_cameras_mask_gives_no_shape() -> None:
    det, frame = _look(Mug())
    assert object_points(det, None) is None
    assert object_points(det, RGBDFrame("other", None, frame.depth, frame.intrinsics,
                                        frame.pose)) is None
    assert round_body(np.zeros((10, 3)), 0.9, 1.0) is None


def test_the_hand_meets_the_handle_beside_or_behind_the_body_not_ahead_of_it() -> None:
    det, frame = _look(Mug(handle_deg=0))  # handle toward +x
    body = _body(det, frame)
    assert body is not None
    tcp = np.array([*body.centre, TABLE + 0.04])

    def side(d) -> bool:
        d = np.array([d[0], d[1], 0.0])
        return blocks(body.protrusion, tcp - 0.005 * d, d, np.array([-d[1], d[0], 0.0]),
                      0.08, body.radius)

    assert not side((1.0, 0.0))  # the hand points at the handle: it is past the fingertips
    assert not side((math.cos(0.7), math.sin(0.7)))  # 40 degrees off it still
    assert side((0.0, -1.0)) and side((0.0, 1.0))  # closing across body and handle
    assert side((-1.0, 0.0))  # the handle between the fingers, into the palm
    top = np.array([*body.centre, TABLE + 0.058])
    down = np.array([0.0, 0.0, -1.0])
    assert not blocks(body.protrusion, top, down, np.array([0.0, 1.0, 0.0]), 0.08, body.radius)
    assert blocks(body.protrusion, top, down, np.array([1.0, 0.0, 0.0]), 0.08, body.radius)


@pytest.mark.parametrize("handle", [0, 60, -120])
def test_a_top_down_grasp_closes_across_the_body_at_its_axis(handle: float) -> None:
    mug = Mug((0.03, 0.01), handle_deg=handle)
    det, frame = _look(mug)
    plan = plan_grasp(det, _body(det, frame))
    assert math.dist(plan.grasp[:2], mug.xy) < 0.003  # the body's axis, not the box's centre
    assert _angle_diff(math.degrees(plan.opening_yaw) % 180, (handle + 90) % 180) < 8
    assert plan.width == pytest.approx(2 * mug.radius + 0.02, abs=0.006)
    assert not plan.blocked and "round body" in plan.reason


def _microwave() -> KnownFixture:
    """LIBERO-10 task 9's microwave: opening toward +y, so an insertion goes along -y."""
    return KnownFixture("microwave_1", "microwave", np.array([0.08, -0.3, 1.025]),
                        -math.pi / 2, (0.28, 0.34, 0.25))


@pytest.mark.parametrize("handle", [0, 20, -20, 60, 120])
def test_a_handle_across_the_insertion_is_taken_from_the_top_to_be_turned(handle: float) -> None:
    mw = _microwave()
    det, frame = _look(Mug((0.04, 0.0), handle_deg=handle))
    plans = grasp_options(det, GraspScene(fixtures=[mw], base=BASE, frame=frame,
                                          insert_into=mw))
    first = plans[0]
    assert first.approach == "top" and "to be turned" in first.reason
    # after the turn the handle points along the insertion (-y: -90 deg)
    assert _angle_diff(handle + math.degrees(first.turn), -90) < 8
    assert plans[1].approach == "side" and plans[1].blocked  # kept as the last resort
    # a regrasp (turned already) does not turn again
    again = grasp_options(det, GraspScene(fixtures=[mw], base=BASE, frame=frame,
                                          insert_into=mw, turnable=False))
    assert again[0].approach == "side"


@pytest.mark.parametrize("handle", [-90, -60, -120])
def test_a_handle_leading_the_insertion_is_grasped_from_the_side_across_the_body(
        handle: float) -> None:
    mw = _microwave()
    mug = Mug((0.04, 0.0), handle_deg=handle)
    det, frame = _look(mug)
    plan = grasp_options(det, GraspScene(fixtures=[mw], base=BASE, frame=frame,
                                         insert_into=mw))[0]
    assert plan.approach == "side" and not plan.blocked
    assert plan.direction == pytest.approx(mw.into)
    assert math.dist(plan.grasp[:2], np.asarray(mug.xy) - 0.005 * mw.into[:2]) < 0.004
    assert plan.width == pytest.approx(2 * mug.radius + 0.02, abs=0.006)
    assert plan.narrow == pytest.approx(2 * mug.radius, abs=0.006)


def test_a_side_grasp_goes_above_a_protrusion_where_the_body_is_tall_enough() -> None:
    """A 14 cm body with a 3 cm tall spout at mid height, across the approach: the pads go
    above it, still on the body."""
    mug = Mug(radius=0.03, height=0.14, handle_deg=90, handle=(0.025, 0.012, 0.03),
              handle_z=0.45)
    det, frame = _look(mug)
    body = _body(det, frame)
    assert body is not None and body.handle is not None
    plan = plan_side_grasp(det, (1.0, 0.0), "test", False, body)
    spout_top = TABLE + 0.45 * 0.14 + 0.015
    assert not plan.blocked
    assert spout_top + 0.0105 < plan.grasp[2] < TABLE + 0.14 - 0.01


@pytest.mark.parametrize("handle", [0, 75, -40])
def test_a_body_wider_than_the_hand_is_pinched_by_its_handle(handle: float) -> None:
    """A 9 cm body: no grasp across it; its handle (1.2 cm thick) is pinched from above,
    the fingers far enough out to clear the body, the body's axis kept as the offset."""
    mug = Mug((0.0, 0.02), radius=0.045, handle_deg=handle)
    det, frame = _look(mug)
    body = _body(det, frame)
    assert body is not None and body.handle is not None
    plan = plan_grasp(det, body)
    assert "by the protrusion" in plan.reason and plan.offset is not None
    out = math.dist(plan.grasp[:2], mug.xy)
    assert mug.radius + 0.0105 < out < mug.radius + 0.024  # on the handle, off the body
    assert _angle_diff(math.degrees(math.atan2(-plan.offset[1], -plan.offset[0])), handle) < 8
    assert _angle_diff(math.degrees(plan.opening_yaw) % 180, (handle + 90) % 180) < 8
    assert plan.width == pytest.approx(0.012 + 0.02, abs=0.006)
    assert plan.grasp[2] < TABLE + 0.5 * 0.08 + 0.024  # below the handle's top
    assert math.dist(plan.grasp[:2] + plan.offset, mug.xy) < 0.004


def test_a_wide_body_without_a_handle_to_hold_is_refused() -> None:
    for mug in (Mug(radius=0.045, handle_deg=None),
                Mug(radius=0.045, handle_deg=0, handle=(0.008, 0.012, 0.048))):  # too short
        det, frame = _look(mug)
        with pytest.raises(ValueError, match="wider than the hand opens"):
            plan_grasp(det, _body(det, frame))
