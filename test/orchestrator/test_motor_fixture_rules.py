"""The executor's offline rules for fixture subgoals and region destinations, as pure rules (no
sim): what each proposes from a measured fixture, region or drawer, checked by playing the
batch's moves and turns on the hand (base-frame directions, turns about the hand's vertical)."""

from __future__ import annotations

import math

import numpy as np

from mango.geometry import yaw_matrix_2d
from mango.orchestrator.motor_schemas import (
    FixtureAction,
    FixtureView,
    MotionAction,
    Observation,
    RegionView,
)
from mango.orchestrator.roles import OfflineExecutor
from mango.orchestrator.schemas import Subgoal
from mango.perception.base import Detection
from mango.primitives.planning import KnownFixture, TableArea
from mango.sim.scene import EntitySpec

TABLE = 0.9
CABINET = EntitySpec.model_validate({
    "id": "white_cabinet_1", "kind": "fixture", "shape": "drawer_cabinet",
    "size": (0.24, 0.26, 0.26), "position": (0.19, 0.14), "description": "white cabinet",
    "joint": {"id": "white_cabinet_1_drawer", "q_open": -0.14, "q_closed": 0.0,
              "q_init": -0.2, "range": (-0.22, 0.0)}})
MICROWAVE = EntitySpec.model_validate({
    "id": "microwave_1", "kind": "fixture", "shape": "microwave", "size": (0.28, 0.34, 0.25),
    "position": (0.08, -0.3), "yaw": -90, "description": "microwave",
    "joint": {"id": "microwave_1", "q_open": -1.3, "q_closed": -0.005, "q_init": -2.0,
              "range": (-2.09, 0.0)}})
STOVE = EntitySpec.model_validate({
    "id": "flat_stove_1", "kind": "device", "shape": "stove", "size": (0.3, 0.34, 0.03),
    "position": (0.1, -0.14), "description": "stove", "device": {"on_threshold": 0.5},
    "joint": {"id": "flat_stove_1_knob", "q_open": 0.5, "q_closed": 0.0, "q_init": 0.0,
              "range": (0.0, 1.6)}})
DIRS = {"forward": (1, 0, 0), "backward": (-1, 0, 0), "left": (0, 1, 0), "right": (0, -1, 0),
        "up": (0, 0, 1), "down": (0, 0, -1)}


def _rot(yaw_deg: float) -> np.ndarray:
    r = np.eye(3)
    r[:2, :2] = yaw_matrix_2d(math.radians(yaw_deg))
    return r


def _fixture(spec: EntitySpec, q: float, action: FixtureAction = "close") -> FixtureView:
    pos = np.array([spec.position[0], spec.position[1], TABLE + spec.size[2] / 2])
    return FixtureView(spec, pos, _rot(spec.yaw), q, action)


def _det(phrase: str, centroid: tuple[float, float, float], size: tuple[float, float, float],
         yaw: float = 0.0) -> Detection:
    return Detection(phrase, None, phrase, 1.0, (0, 0, 1, 1), None, centroid, size, yaw,
                     "front", 0.0)


def _obs(sg: Subgoal, hand: tuple[float, float, float], *, yaw: float = math.pi / 2,
         width: float = 0.08, width_cmd: float = 0.08, q7: float = 0.78,
         **kw: object) -> Observation:
    base = dict(t=0.0, subgoal=sg, hand=np.asarray(hand, float), opening_yaw=yaw, q7=q7,
                q7_range=(-3.0159, 3.0159), width=width, width_cmd=width_cmd, holding=False,
                object_det=None, destination_det=None, at_destination=None, completed=set(),
                travel_z=1.2, table_z=TABLE)
    base.update(kw)
    return Observation(**base)  # type: ignore[arg-type]


def _play(hand: np.ndarray, yaw: float, actions: list[MotionAction]
          ) -> tuple[np.ndarray, float]:
    """Where the batch leaves the hand (position, opening yaw)."""
    p = np.asarray(hand, float).copy()
    for a in actions:
        if a.kind == "move":
            assert a.mm is not None and a.direction is not None
            p += np.asarray(DIRS[a.direction], float) * a.mm / 1000.0
        elif a.kind == "rotate":
            assert a.axis == "z" and a.degrees is not None
            yaw += math.radians(a.degrees) * (1 if a.direction == "ccw" else -1)
    return p, yaw


def _same_line(a: float, b: float) -> bool:
    """Two yaws along the same line (a grip is symmetric every half turn)."""
    return abs((a - b + math.pi / 2) % math.pi - math.pi / 2) < math.radians(1.5)


def _subgoal(text: str, obj: str) -> Subgoal:
    return Subgoal(id="2", instruction=text, expert_step=1, object=obj)


def test_close_drawer_goes_in_front_of_its_face_and_pushes_it_home() -> None:
    ex = OfflineExecutor()
    sg = _subgoal("close the white cabinet", CABINET.id)
    fx = _fixture(CABINET, -0.2)
    b = ex.propose(_obs(sg, (-0.2, 0.0, 1.3), fixture=fx), None)
    assert b.rule == "executor.go_before_drawer" and b.expect_holding is False
    assert b.actions[0].gripper == "close"  # closed fingers push
    p, _ = _play(np.array([-0.2, 0.0, 1.3]), math.pi / 2, b.actions)
    # in front of the drawer's face: its handle stands 0.2 m out of the cabinet's front
    # (x = 0.07), the push starts 3.5 cm before it, on the drawer's centre line, at travel z
    front = 0.19 - 0.12 + 0.008 + 0.002 - 0.024 - 0.2
    assert abs(p[0] - (front - 0.035)) < 0.002 and abs(p[1] - 0.14) < 0.002
    assert abs(p[2] - 1.2) < 0.002
    # the fingers across the push (opening along y): push down, forward by what is open
    # plus the lead, back off, up
    b = ex.propose(_obs(sg, tuple(p), width=0.0, width_cmd=0.0, fixture=fx), None)
    assert b.rule == "executor.push_drawer_closed"
    assert [(a.direction, a.mm) for a in b.actions[1:3]] == [("forward", 235.0),
                                                              ("backward", 50.0)]
    assert b.actions[0].direction == "down" and b.actions[-1].direction == "up"
    # the fingers along the push are turned first
    b = ex.propose(_obs(sg, tuple(p), yaw=0.3, width=0.0, width_cmd=0.0, fixture=fx), None)
    assert b.rule == "executor.go_before_drawer" and b.actions[0].kind == "rotate"
    _, yaw = _play(p, 0.3, b.actions)
    assert _same_line(yaw, math.pi / 2)
    # a drawer pushed short is pushed again from where its face stopped
    b = ex.propose(_obs(sg, tuple(p), width=0.0, width_cmd=0.0,
                        fixture=_fixture(CABINET, -0.03)), None)
    assert b.rule == "executor.go_before_drawer"
    assert abs(_play(p, 0.0, b.actions)[0][0] - (front + 0.17 - 0.035)) < 0.002
    # pushes that leave it where it was go a little further past closed, then it is stuck
    stuck = OfflineExecutor()
    fx = _fixture(CABINET, -0.03)
    at = tuple(p + np.array([0.17, 0.0, 0.0]))  # in front of it, 3 cm open
    pushes = [stuck.propose(_obs(sg, at, width=0.0, width_cmd=0.0, fixture=fx), None)
              for _ in range(4)]
    assert [b.rule for b in pushes] == ["executor.push_drawer_closed"] * 3 + [
        "executor.part_stuck"]
    assert [b.actions[1].mm for b in pushes[:3]] == [65.0, 75.0, 85.0]
    assert not pushes[3].actions and "did not move in 2 tries" in pushes[3].assessment
    # closed: nothing to do (no monitor here: the measured joint judges)
    b = ex.propose(_obs(sg, tuple(p), monitored=False, fixture=_fixture(CABINET, -0.002)),
                   None)
    assert b.done and b.rule == "executor.criterion_holds"


def test_close_door_comes_down_outside_it_and_sweeps_it_shut_in_short_arcs() -> None:
    from mango.sim.expert.fixtures import DOOR_CLEAR, DOOR_STEP, door_contact, door_yaw

    ex = OfflineExecutor()
    sg = _subgoal("close the microwave", MICROWAVE.id)
    fx = _fixture(MICROWAVE, -2.0)
    hand = np.array([-0.2, 0.1, 1.3])
    b = ex.propose(_obs(sg, tuple(hand), fixture=fx), None)
    assert b.rule == "executor.go_outside_door" and b.actions[0].gripper == "close"
    p, yaw = _play(hand, math.pi / 2, b.actions)
    # the open door (115 deg) points from its hinge (-0.09, -0.155) toward -x and +y: the
    # hand comes down 5 cm off its outer face, 3/4 of its width from the hinge
    along = np.array([-math.sin(2.0 - math.pi / 2), math.cos(2.0 - math.pi / 2)])
    assert along[0] < 0 < along[1]
    tip = np.array([-0.09, -0.155]) + 0.255 * along
    assert 0.04 < float(np.linalg.norm(p[:2] - tip)) < 0.06
    b = ex.propose(_obs(sg, tuple(p), yaw=yaw, width=0.0, width_cmd=0.0, fixture=fx), None)
    assert b.rule == "executor.go_outside_door" and b.actions[-1].direction == "down"
    p, yaw = _play(p, yaw, b.actions)
    assert _same_line(yaw, door_yaw(fx.rotation, -2.0))  # the hand's long side along it
    assert abs(p[2] - (TABLE + 0.068)) < 0.003  # low on the door, above the table
    # at the door: two short arcs from the measured angle, the hand turning with the door
    b = ex.propose(_obs(sg, tuple(p), yaw=yaw, width=0.0, width_cmd=0.0, fixture=fx), None)
    assert b.rule == "executor.sweep_door_closed" and len(b.actions) <= 6
    p2, yaw2 = _play(p, yaw, b.actions)
    want = door_contact(MICROWAVE, fx.position, fx.rotation, -2.0 + 2 * DOOR_STEP, DOOR_CLEAR)
    assert float(np.linalg.norm(p2[:2] - want[:2])) < 0.004 and abs(p2[2] - p[2]) < 1e-9
    assert _same_line(yaw2, door_yaw(fx.rotation, -2.0 + 2 * DOOR_STEP))
    # the door measured further closed than the hand (it swung on): the arcs start there
    ahead = _fixture(MICROWAVE, -1.96)
    b = ex.propose(_obs(sg, tuple(p), yaw=yaw, width=0.0, width_cmd=0.0, fixture=ahead),
                   None)
    p3, _ = _play(p, yaw, b.actions)
    want = door_contact(MICROWAVE, ahead.position, ahead.rotation, -1.96 + 2 * DOOR_STEP,
                        DOOR_CLEAR)
    assert b.rule == "executor.sweep_door_closed"
    assert float(np.linalg.norm(p3[:2] - want[:2])) < 0.004


def test_turn_knob_grips_it_and_turns_past_the_on_threshold_with_room_for_the_wrist() -> None:
    ex = OfflineExecutor()
    sg = Subgoal(id="1", instruction="turn on the stove", expert_step=0, object=STOVE.id)
    fx = _fixture(STOVE, 0.0, "turn_on")
    b = ex.propose(_obs(sg, (-0.2, 0.0, 1.3), fixture=fx), None)
    assert b.rule == "executor.go_over_knob"
    p, _ = _play(np.array([-0.2, 0.0, 1.3]), 0.0, b.actions)
    # the knob: the stove's front-right corner, 4.5 cm in from each side
    assert abs(p[0] - (0.1 - 0.15 + 0.045)) < 0.002 and abs(p[1] - (-0.14 - 0.17 + 0.045)) < 0.002
    b = ex.propose(_obs(sg, tuple(p), fixture=fx), None)
    assert b.rule == "executor.grip_turn_knob" and b.expect_holding is False
    assert [a.kind for a in b.actions] == ["move", "gripper", "rotate", "gripper", "move"]
    down, close, rot, release = b.actions[:4]
    # fingertips 1.2 cm below the knob's top (stove top 0.93, the knob 5 cm tall)
    assert abs(p[2] - down.mm / 1000.0 - (TABLE + 0.03 + 0.05 - 0.012)) < 0.002  # type: ignore[operator]
    assert close.gripper == "close" and release.gripper == "open"
    # ccw about +z (the knob's axis) to 0.35 rad past its threshold of 0.5 rad
    assert rot.direction == "ccw" and abs(rot.degrees - math.degrees(0.85)) < 0.01  # type: ignore[operator]
    # half turned already: only what is missing
    b = ex.propose(_obs(sg, tuple(p), fixture=_fixture(STOVE, 0.4, "turn_on")), None)
    assert abs(b.actions[2].degrees - math.degrees(0.45)) < 0.01  # type: ignore[operator]
    # the wrist near its lower limit has no room for a ccw turn: the open hand turns back first
    b = ex.propose(_obs(sg, tuple(p), q7=-2.5, fixture=fx), None)
    assert b.rule == "executor.go_over_knob" and b.actions[0].direction == "cw"
    q7_after = -2.5 + math.radians(b.actions[0].degrees) - 0.85  # type: ignore[arg-type]
    assert q7_after > -3.0159 + 0.25


def test_opening_has_no_rule_and_says_so() -> None:
    ex = OfflineExecutor()
    sg = _subgoal("open the white cabinet", CABINET.id)
    b = ex.propose(_obs(sg, (0.0, 0.0, 1.2), fixture=_fixture(CABINET, 0.0, "open")), None)
    assert b.rule == "executor.no_rule" and not b.actions and "open a drawer" in b.assessment


def _carry_target(sg: Subgoal, held: Detection, dest: Detection, **kw: object) -> np.ndarray:
    """The planar point a carry heads for (the hand starts at the held object's centre)."""
    ex = OfflineExecutor()
    hand = (held.centroid[0], held.centroid[1], 1.2)
    b = ex.propose(_obs(sg, hand, width=0.05, width_cmd=0.0, holding=True, object_det=held,
                        destination_det=dest, **kw), None)
    assert b.rule == "executor.carry_over_destination", b.assessment
    return _play(np.asarray(hand), 0.0, b.actions)[0][:2]


def test_a_region_in_the_criterion_is_where_the_object_goes() -> None:
    area = TableArea((0.0, 0.0), (1.0, 1.2), TABLE, (-0.66, 0.0))
    pudding = _det("chocolate pudding", (-0.12, -0.06, 0.925), (0.05, 0.07, 0.045))
    plate = _det("plate", (0.1, 0.08, 0.91), (0.16, 0.16, 0.015))
    sg = Subgoal(id="2", instruction="put the chocolate pudding to the right of the plate",
                 expert_step=1, object="chocolate_pudding_1",
                 destination="living_room_table_plate_right_region", relation="on",
                 object_phrase="chocolate pudding",
                 destination_phrase="empty space right of the plate")
    # without the region: the free cell right of the plate as the robot sees it (-y)
    xy = _carry_target(sg, pudding, plate, table_area=area)
    assert xy[1] < 0.0
    # LIBERO's region right of the plate is at +y: the object's centre goes inside it
    region = RegionView(sg.destination or "", np.array([0.1, 0.24, 0.925]), (0.12, 0.1, 0.05),
                        0.0)
    xy = _carry_target(sg, pudding, plate, table_area=area, region=region)
    assert abs(xy[0] - 0.1) < 0.06 and abs(xy[1] - 0.24) < 0.05
    # in a container: the compartment the criterion names, not the container's middle
    book = _det("black book", (-0.08, -0.14, 0.915), (0.05, 0.14, 0.03))
    caddy = _det("desk caddy", (0.06, 0.16, 0.94), (0.26, 0.28, 0.08))
    sg = Subgoal(id="1", instruction="put the black book in the back compartment of the desk "
                 "caddy", expert_step=0, object="black_book_1",
                 destination="desk_caddy_1_back_contain_region", relation="in",
                 object_phrase="black book", destination_phrase="in the desk caddy")
    back = RegionView(sg.destination or "", np.array([0.1235, 0.16, 0.956]),
                      (0.115, 0.265, 0.1), 0.0)
    xy = _carry_target(sg, book, caddy, table_area=area, region=back)
    assert abs(xy[0] - 0.1235) < 0.01 and abs(xy[1] - 0.16) < 0.01


def test_into_an_open_drawer_the_release_is_over_its_exposed_part() -> None:
    bowl = _det("black bowl", (-0.09, -0.23, 0.92), (0.07, 0.07, 0.045))
    cabinet = _det("white cabinet", (0.09, 0.14, 1.03), (0.44, 0.26, 0.26))
    fx = KnownFixture.from_entity(CABINET, (0.19, 0.14, 1.03), 0.0, drawer_q=-0.2)
    sg = Subgoal(id="1", instruction="put the black bowl in the bottom drawer of the cabinet",
                 expert_step=0, object="akita_black_bowl_1",
                 destination="white_cabinet_1_bottom_region", relation="in",
                 object_phrase="black bowl", destination_phrase="in the white cabinet")
    area = TableArea((0.0, 0.0), (1.0, 1.2), TABLE, (-0.66, 0.0))
    xy = _carry_target(sg, bowl, cabinet, table_area=area, into=fx)
    # the drawer is out 0.2 m past the cabinet's front (x = 0.07): between its front wall
    # and the front (the cabinet's middle would be under its top), the bowl clear of its
    # side walls (the drawer 0.22 m wide inside), toward the robot
    assert -0.13 < xy[0] < 0.07 - 0.035
    assert 0.14 - (0.11 - 0.035) <= xy[1] < 0.14
    # a closed drawer takes nothing: no release point, and why
    shut = KnownFixture.from_entity(CABINET, (0.19, 0.14, 1.03), 0.0, drawer_q=0.0)
    b = OfflineExecutor().propose(_obs(sg, (-0.09, -0.23, 1.2), width=0.05, width_cmd=0.0,
                                       holding=True, object_det=bowl, destination_det=cabinet,
                                       table_area=area, into=shut), None)
    assert b.rule == "executor.no_release_point" and "open it first" in b.assessment
