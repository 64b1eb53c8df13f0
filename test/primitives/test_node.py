"""primitives_node with real rclpy and the real sim: the sim stack's sim_node (segmentation
on), franka_control_node (`sim` backend), perception_node (`sim` backend) and primitives_node,
each its own process, one stack for the module and many goals.

Through the Grasp and Place actions: grasp by entity id then place in empty space beside an
anchor, and on a surface named by a spatial reference after a scene reset (the node follows;
the sim's world state as the truth); a place with nothing held is refused; a cancel mid-approach
holds the arm (the chunk in flight ends cancelled by the controller's result, measured joint
speed ~0 after, the position held); a phrase that matches nothing and an unreachable target are
rejected with the reason; an object slid away through the sim (`~/set_entity_pose`) between
Detect and close is a failed grasp (closed on air, measured); the mug put in the microwave
through Place (regrasped from the side, its handle turned to lead, judged on the physics).
One scene's movable objects go through the actions with every claim of their results checked
against the sim (`test_every_object_of_a_basket_scene_through_the_actions`); every movable
object of every LIBERO-10 scene goes through the same executor in-process
(`test_scenes.py`), and the success rates over them are `make bench`'s
(`bench/bench_primitives.py`).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import Point, Pose, Quaternion
from sensor_msgs.msg import JointState
from support.primitive_cases import destination, phrase, wider_than_the_hand
from support.primitives_rig import (
    JOINTS,
    Rig,
    primitives_stack,
    run_goal,
    start_until,
)
from support.ros import Processes, call_service, wait_for
from unique_identifier_msgs.msg import UUID

from mango.client.session import spun_node
from mango.nodes.actions import ActionClient
from mango.oracle.predicates import StateView, Thresholds, p_in
from mango.oracle.world_state import WorldState as State
from mango.primitives import parse_destination, plan_grasp
from mango.primitives.runner import relation_holds, released_on_table
from mango.ros.detection_msg import detection_from_msg
from mango.ros.world_state_msg import msg_to_state
from mango.sim.build import fr3_spec
from mango.sim.scene import as_scene
from mango_ros.action import ExecuteChunk, Grasp, Place
from mango_ros.msg import WorldState
from mango_ros.srv import SetEntityPose

SCENE = "libero10_soup_sauce_basket"
# a basket wider than the hand (refused with the reason), two objects that go in it and two
# for empty space on the table: every kind of claim a Grasp or Place result makes
SWEPT = "libero10_soup_cheese_basket"
PHASES = ["detect", "plan", "approach", "close", "lift"]
CANCELED, SUCCEEDED = GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_SUCCEEDED


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with primitives_stack(SCENE) as r:
        yield r


def test_grasp_by_entity_id_then_place_in_empty_space(rig: Rig) -> None:
    g = run_goal(rig.grasp, Grasp.Goal(target="tomato_sauce_1"))
    assert g.status == Grasp.Result.STATUS_SUCCEEDED and g.entity_id == "tomato_sauce_1", \
        g.message
    p = run_goal(rig.place, Place.Goal(destination="empty space left of the basket"))
    assert p.status == Place.Result.STATUS_SUCCEEDED and p.satisfied, p.message
    st = rig.state()
    sauce, basket = st.objects["tomato_sauce_1"].position, st.objects["basket_1"].position
    assert sauce[1] > basket[1] + 0.12  # left (+y) of the basket's 24 cm width
    again = run_goal(rig.place, Place.Goal(destination="in the basket"))
    assert again.status == Place.Result.STATUS_REJECTED and "nothing is held" in again.message


def _state_after_result(rig: Rig) -> State:
    """A world state the sim published after the result arrived."""
    n = len(rig.world)
    wait_for(lambda: len(rig.world) > n, 10, "a world state after the result")
    return rig.state()


def _check_grasp(rig: Rig, eid: str, g: Grasp.Result, feedback: list[Grasp.Feedback]) -> None:
    """What a held grasp reports is what the sim has."""
    st = _state_after_result(rig)
    assert g.held == (st.fact(f"grasped({eid})") is True), (eid, g.message)  # measured
    if not g.held:
        return
    assert g.status == Grasp.Result.STATUS_SUCCEEDED, (eid, g.message)
    assert g.entity_id == eid and g.detection.entity_id == eid, (eid, g.entity_id)
    assert 0.003 < g.gripper_width < 0.08 and eid in g.finger_contacts, (eid, g.message)
    # feedback is a topic and the result a service reply: the last feedback, sent before the
    # result, may arrive after it (seen once: 0.91 the newest when the result came)
    wait_for(lambda: feedback and feedback[-1].progress >= 1.0 - 1e-6, 2.0, "the last feedback")
    phases = [f.phase for f in feedback]
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == PHASES
    progress = [f.progress for f in feedback]
    assert progress == sorted(progress) and progress[-1] == pytest.approx(1.0)
    if "robot_hand" in st.objects:  # the measured final hand pose is where the sim has it
        p = g.final_hand_pose.position
        assert math.dist((p.x, p.y, p.z), st.objects["robot_hand"].position) < 0.03


def test_every_object_of_a_basket_scene_through_the_actions(rig: Rig) -> None:
    """A Grasp goal is told only the object, as a user names it; the Place goal where the
    scene's expert plan puts it, or "empty space on the table" (`support/primitive_cases.py`,
    shared with the in-process sweep of all ten scenes). Each result's claims are checked
    exactly against the sim's world state: `held` is the sim's `grasped(x)` after the lift;
    an object wider than the hand is rejected with the reason; a place lets go, and one that
    says it succeeded has (`relation_holds`, the oracle's predicates; "empty space" within
    5 cm of the release on the table, `released_on_table`)."""
    scene = as_scene(SWEPT)
    rig.reset(SWEPT, 0)
    movable = [e for e in scene.entities if e.movable]
    assert any(wider_than_the_hand(e) for e in movable)
    rig.seen_where_it_is(phrase(scene, movable[0].id), movable[0].id)
    failures: list[str] = []
    for e in movable:
        said, where = phrase(scene, e.id), destination(scene, e.id)
        feedback: list[Grasp.Feedback] = []
        g = run_goal(rig.grasp, Grasp.Goal(target=said), timeout=180, feedback=feedback)
        _check_grasp(rig, e.id, g, feedback)
        if wider_than_the_hand(e):
            assert g.status == Grasp.Result.STATUS_REJECTED, (e.id, g.message)
            assert "wider than the hand" in g.message, g.message
            continue
        if not g.held:
            failures.append(f"grasp {e.id}: {g.status}: {g.message}")
            continue
        p = run_goal(rig.place, Place.Goal(destination=where, object_hint=said), timeout=240)
        st = _state_after_result(rig)
        assert st.fact(f"grasped({e.id})") is False, (e.id, p.message)  # it was let go
        req = parse_destination(where)
        if req.kind in ("in", "on"):
            truth = bool(p.destination_id) and relation_holds(
                scene, st, req.kind, e.id, p.destination_id)
        else:
            r = p.release_pose.position
            truth = released_on_table(scene, st, e.id, (r.x, r.y))
        claimed = p.status == Place.Result.STATUS_SUCCEEDED
        assert truth or not claimed, (e.id, where, p.message)  # no success that did not happen
        if not (truth and claimed):
            failures.append(f"place {e.id} {where}: {p.status} (truth {truth}): {p.message}")
    # the in-process sweep's rule: per scene at most one grasp may miss (the rates over many
    # scenes and seeds are the benchmark's); a place's claim was checked exactly above
    assert sum(f.startswith("grasp") for f in failures) <= 1, failures


def test_after_a_scene_reset_grasp_then_place_on_a_plate(rig: Rig) -> None:
    rig.reset("libero10_mugs_plates", 1)  # the node follows the sim's segmentation labels
    g = run_goal(rig.grasp, Grasp.Goal(target="the white mug"))
    assert g.status == Grasp.Result.STATUS_SUCCEEDED and g.entity_id == "porcelain_mug_1", \
        g.message
    # two plates: "the plate" is ambiguous (refused by the grounder), the left one is not
    p = run_goal(rig.place, Place.Goal(destination="on the left plate",
                                       object_hint="the white mug"))
    assert p.status == Place.Result.STATUS_SUCCEEDED and p.satisfied, p.message
    assert p.destination_id == "plate_1"
    st = rig.state()
    assert st.fact("grasped(porcelain_mug_1)") is False
    assert st.fact(f"on(porcelain_mug_1,{p.destination_id})") in (True, None)
    mug, plate = st.objects["porcelain_mug_1"].position, st.objects[p.destination_id].position
    assert np.hypot(mug[0] - plate[0], mug[1] - plate[1]) < 0.05


def test_a_mug_goes_into_the_microwave_through_place_regrasped_from_the_side(rig: Rig) -> None:
    """The Grasp goal is not told where the mug goes: the node takes it from the top, across
    its body (its handle seen in the depth of the capture it was detected on). "in the
    microwave" is a horizontal insertion: Place puts the mug back turned so its handle
    leads, grasps it again from the side and slides it in. Judged on the physics: in the
    heating region, let go, and held across the body (never opened to body + handle, ~7.5
    cm) at every state the sim had it grasped."""
    mug = "white_yellow_mug_1"
    rig.reset("libero10_mug_microwave", 0)
    rig.seen_where_it_is("the yellow and white mug", mug)
    g = run_goal(rig.grasp, Grasp.Goal(target="the yellow and white mug"))
    assert g.status == Grasp.Result.STATUS_SUCCEEDED and g.entity_id == mug, g.message
    assert "round body" in g.message and "protrusion toward" in g.message  # the handle, seen
    first = len(rig.world)
    p = run_goal(rig.place, Place.Goal(destination="in the microwave",
                                   object_hint="the yellow and white mug"), timeout=240)
    assert p.message.startswith("regrasped from the side") and "turned" in p.message, p.message
    assert p.status in (Place.Result.STATUS_SUCCEEDED, Place.Result.STATUS_FAILED)
    assert p.destination_id == "microwave_1"
    st = rig.state()
    assert p_in(StateView(st, Thresholds()), mug, "microwave_1_heating_region"), \
        st.objects[mug].position
    assert st.fact(f"grasped({mug})") is False
    held = [s.gripper.width for s in map(msg_to_state, rig.world[first:])
            if s.fact(f"grasped({mug})") and s.gripper is not None and s.gripper.width]
    assert len(held) > 100 and max(held) < 0.064, (min(held), max(held))


def test_a_phrase_matching_nothing_and_a_bad_destination_are_rejected(rig: Rig) -> None:
    since, t0 = time.monotonic(), rig.joints[-1][2]
    g = run_goal(rig.grasp, Grasp.Goal(target="a purple unicorn"))
    assert g.status == Grasp.Result.STATUS_REJECTED and not g.held
    assert "'a purple unicorn' matches nothing" in g.message
    assert "no scene entity matches" in g.message  # the perception node's own reason
    time.sleep(0.2)
    assert not rig.commanded_since(since, t0)  # nothing moved
    empty = run_goal(rig.grasp, Grasp.Goal(target="  "))
    assert empty.status == Grasp.Result.STATUS_REJECTED and "no target" in empty.message
    bad = run_goal(rig.place, Place.Goal(destination="somewhere nice"))
    assert bad.status == Place.Result.STATUS_REJECTED and "place phrasing" in bad.message


def _slide(rig: Rig, entity: str, dx: float, dy: float) -> None:
    pos = rig.state().objects[entity].position
    r = call_service(rig.node, SetEntityPose, f"{rig.ns}/sim_node/set_entity_pose",
                     SetEntityPose.Request(entity_id=entity, pose=Pose(
                         position=Point(x=pos[0] + dx, y=pos[1] + dy, z=pos[2] + 0.002),
                         orientation=Quaternion(w=1.0))))
    assert r.success, r.message


def test_an_object_slid_away_after_detection_is_a_failed_grasp(rig: Rig) -> None:
    rig.reset(SCENE, 0)
    _, res = start_until(rig.grasp, Grasp.Goal(target="the alphabet soup"), "approach")
    _slide(rig, "alphabet_soup_1", 0.0, 0.15)  # detected already: the plan goes where it was
    wait_for(res.done, 120, "the grasp's result")
    g = res.result().result
    assert g.status == Grasp.Result.STATUS_FAILED and not g.held, g.message
    assert g.gripper_width < 0.003 and "closed on nothing" in g.message  # measured
    assert rig.state().fact("grasped(alphabet_soup_1)") is False


def test_an_unreachable_target_is_rejected_by_ik(rig: Rig) -> None:
    rig.reset(SCENE, 0)
    _slide(rig, "alphabet_soup_1", 0.0, 0.0)
    st = rig.state()
    far = st.objects["alphabet_soup_1"].position
    r = call_service(rig.node, SetEntityPose, f"{rig.ns}/sim_node/set_entity_pose",
                     SetEntityPose.Request(entity_id="alphabet_soup_1", pose=Pose(
                         position=Point(x=0.45, y=0.0, z=far[2] + 0.002),
                         orientation=Quaternion(w=1.0))))  # ~1 m from the base
    assert r.success, r.message
    time.sleep(0.5)  # a camera frame of it there
    since, t0 = time.monotonic(), rig.joints[-1][2]
    g = run_goal(rig.grasp, Grasp.Goal(target="the alphabet soup"))
    assert g.status == Grasp.Result.STATUS_REJECTED and g.entity_id == "alphabet_soup_1"
    assert "unreachable" in g.message and "pose unreachable: position" in g.message
    time.sleep(0.2)
    assert not rig.commanded_since(since, t0)  # refused before the arm was moved


def _hold_dead_band() -> list[float]:
    """Each arm joint's static error band on a hold: its friction loss over its servo's
    stiffness (rad), from the sim's FR3 model (franky-sim's fr3.xml, as the sim builds it)."""
    m = fr3_spec(visual=False).compile()
    bands = []
    for act in range(7):
        dof = m.jnt_dofadr[m.actuator_trnid[act, 0]]
        bands.append(float(m.dof_frictionloss[dof] / m.actuator_gainprm[act, 0]))
    return bands


def test_a_cancel_mid_approach_holds_the_arm(rig: Rig) -> None:
    """The cancel reaches the chunk in flight: the primitives_node cancels its ExecuteChunk
    goal, the controller ends that chunk cancelled (its result says so), no chunk runs after
    it, and the arm comes to rest where it was and stays there."""
    rig.reset(SCENE, 0)
    # the cream cheese: 27 cm across the table from the ready pose, so the approach is chunks
    sent = time.monotonic()
    gh, res = start_until(rig.grasp, Grasp.Goal(target="the cream cheese box"), "approach", 0.1)
    since = time.monotonic()
    gh.cancel_goal_async()
    wait_for(res.done, 10, "the cancelled grasp's result")
    g = res.result().result
    assert g.status == Grasp.Result.STATUS_CANCELLED and "holds position" in g.message, g.message
    assert "approach" in g.message and not g.held
    time.sleep(0.3)  # the statuses and commands in flight arrive
    # it was moving when cancelled: judged on the sim's clock (the control node stamps its
    # commands with /clock), over the second before the newest command of this goal (the
    # hold), once the joint states up to it have come, which a loaded test process receives
    # late
    t_hold = max(st for r, st in rig.commands if r > sent)
    assert rig.speed_before(t_hold, 1.0) > 0.02
    # Whether the cancel stopped the chunk in flight is the controller's own word, not times of
    # arrival here (a loaded CI machine took the last command 0.98 s after the CANCELING
    # status): its ExecuteChunk result, asked for by goal id as any client may, is CANCELLED
    # only for a chunk stopped on the cancel; one that ran to its end is SUCCEEDED. That the
    # controller stops within one control period of a cancel is test_robot_io_control's.
    # this test's chunks: the module's rig also lists the goals of the tests before it (a
    # cancelled one there made every later chunk look sent after this cancel - CI)
    earlier = {g for r, goals in rig.chunk_status if r <= sent for g in goals}
    final: dict[bytes, int] = {}  # each chunk goal's latest status
    for _, goals in rig.chunk_status:
        final.update({g: st for g, st in goals.items() if g not in earlier})
    stopped = [goal for goal, st in final.items() if st == CANCELED]
    # No chunk sent after the cancel ran: none that the controller accepted after the chunk
    # the cancel stopped ran to its end - its own acceptance stamps, not when their statuses
    # reached this process (CI once had the last chunk before the cancel, SUCCEEDED, report
    # its first status here only after the cancel was sent). A cancel that fell between two
    # chunks stopped none: then the chunks whose status came before it bound the ones sent.
    accepted = rig.chunk_accepted
    if stopped:
        boundary = min(accepted[g] for g in stopped)
    else:
        boundary = max(accepted[g] for r, goals in rig.chunk_status if r <= since
                       for g in goals if g in final)
    ran_after = [g for g, st in final.items() if st == SUCCEEDED and accepted[g] > boundary]
    assert not ran_after  # no chunk sent after the cancel ran
    for goal in stopped:
        reply = call_service(rig.node, ExecuteChunk.Impl.GetResultService,
                             f"{rig.ns}/execute_chunk/_action/get_result",
                             ExecuteChunk.Impl.GetResultService.Request(
                                 goal_id=UUID(uuid=list(goal))))
        r = reply.result
        assert r.status == ExecuteChunk.Result.STATUS_CANCELLED, (r.status, r.message)
    # at rest on the last command, which came within a control period of the cancel: the
    # sim's position servos converge on it (time constant kv/kp = 0.1 s, so under 1 mrad/s of
    # speed leaves under 0.1 mrad to go) and stop within their joint friction's dead band,
    # frictionloss/kp (read from the model: 0.38 mrad at most, joint 5). The bound is 8 times
    # that. A loaded machine makes the arm arrive later (the sim_node works through the
    # commands queued before the cancel late), never elsewhere: hence the long wait.
    tolerance = 8 * max(_hold_dead_band())
    assert rig.target is not None
    try:
        wait_for(lambda: rig.resting(span=0.5)
                 and np.abs(rig.joints[-1][1] - rig.target).max() < tolerance, 60.0,
                 "the arm at rest on the last command")
    except AssertionError as exc:  # what the arm did instead, for the next reader (CI, once)
        raise AssertionError(
            f"{exc}: speed over the last 0.5 s {rig.recent_speed(0.5)} rad/s, "
            f"{np.abs(rig.joints[-1][1] - rig.target).max():.4f} rad from the last command "
            f"(per joint {np.round(rig.joints[-1][1] - rig.target, 4).tolist()}), "
            f"{len(rig.commands)} commands, the newest received "
            f"{time.monotonic() - rig.commands[-1][0]:.1f} s ago, stamped "
            f"{rig.commands[-1][1]:.3f} (sim time now {rig.joints[-1][2]:.3f}); hand at "
            f"{rig.state().objects['robot_hand'].position}") from None
    start = rig.joints[-1]
    wait_for(lambda: rig.joints[-1][2] - start[2] >= 0.5, 10.0, "half a second of sim time")
    end = rig.joints[-1]
    assert np.abs(end[1] - start[1]).max() < 1e-3  # rad: the position held
    # stopped on the way: the hand short of the grasp point, open (the close never ran)
    hand = g.final_hand_pose.position
    at = plan_grasp(detection_from_msg(g.detection)).grasp
    assert math.dist((hand.x, hand.y, hand.z), at) > 0.05
    assert g.gripper_width > 0.06


def test_the_node_survives_what_its_inputs_get_wrong(tmp_path: Path) -> None:
    """Joint states it cannot read, a world state that does not decode, goals with nothing
    in them: each goal ends with the reason and the node answers the next one."""
    ns = f"/t{uuid.uuid4().hex[:8]}"
    procs = Processes(tmp_path)
    procs.start("primitives", "mango.nodes.primitives_node", "-r", f"__ns:={ns}",
                "-p", f"scene:={SCENE}", "-p", "timeout:=1.0")
    try:
        with spun_node("test", threads=2) as node:
            grasp = ActionClient(node, Grasp, f"{ns}/grasp")
            assert grasp.wait_for_server(timeout_sec=60), procs.log("primitives")
            js = node.create_publisher(JointState, f"{ns}/joint_states", 10)
            ws = node.create_publisher(WorldState, f"{ns}/world_state", 10)
            short = JointState(name=JOINTS, position=[0.0, 1.0])  # 7 names, 2 positions
            nan = JointState(name=JOINTS, position=[float("nan")] * 7)
            good = JointState(name=[*JOINTS, "fr3_finger_joint1", "fr3_finger_joint2"],
                              position=[0.0] * 9)
            feed = {"js": short, "junk": False}

            def tick() -> None:
                js.publish(feed["js"])
                if feed["junk"]:
                    ws.publish(b"\x00\x01\x00\x00junk that is no WorldState")

            timer = node.create_timer(0.02, tick)
            g = run_goal(grasp, Grasp.Goal(target="the alphabet soup"), timeout=30)
            assert g.status == Grasp.Result.STATUS_REJECTED
            assert "no fresh joint states within 1 s" in g.message, g.message
            feed["js"] = nan
            g = run_goal(grasp, Grasp.Goal(target="the alphabet soup"), timeout=30)
            assert "no fresh joint states" in g.message, g.message
            feed["js"], feed["junk"] = good, True
            g = run_goal(grasp, Grasp.Goal(target="the alphabet soup"), timeout=30)
            assert g.status == Grasp.Result.STATUS_REJECTED
            assert "the world state received is malformed" in g.message, g.message
            g = run_goal(grasp, Grasp.Goal(target="\x00" * 5000), timeout=30)
            assert g.status in (Grasp.Result.STATUS_REJECTED, Grasp.Result.STATUS_FAILED)
            assert g.message
            node.destroy_timer(timer)
        assert "Traceback" not in procs.log("primitives")
    finally:
        procs.stop_all()
