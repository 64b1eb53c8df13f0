"""Every movable object of every LIBERO-10 scene grasped then placed through the Grasp and
Place actions, with real rclpy and the real sim: the sim stack's four nodes as in
`test_node.py` (one stack, a scene reset between scenes).

A Grasp goal is told only the object, as a user names it; the Place goal where the scene's
expert plan puts it, or "empty space on the table" (`support/primitive_cases.py`, shared
with the embedded executor's test). Judged on what the results may claim, against the sim's
world state:
- Grasp: `held` is the sim's `grasped(x)` after the lift (measured, never assumed); when it
  holds, the entity, its detection, the finger contacts and the final hand pose are the
  sim's, and the feedback ran detect, plan, approach, close, lift with progress rising to 1.
  An object wider than the hand is rejected with the reason.
- Place: the object was let go, and it is placed when it ended where asked on the sim
  (`relation_holds`: the oracle's predicates, the embedded runner's truth column too; "empty
  space" is on the table within 5 cm of the release, `released_on_table`). A place that says
  it succeeded must have; one that says it failed may be wrong the other way (perception did
  not see a bowl inside the drawer it is in).
Each result's claims are checked exactly, object by object; the rates (grasp >= 90 %,
place >= 85 %, the issue's goals) over all ten scenes in the last test (over seeds:
`make bench`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from support.primitive_cases import SCENES, destination, phrase, wider_than_the_hand
from support.primitives_rig import Rig, primitives_stack, run_goal
from support.ros import wait_for

from mango.oracle.world_state import WorldState
from mango.primitives import parse_destination
from mango.primitives.runner import relation_holds, released_on_table
from mango.sim.scene import as_scene
from mango_ros.action import Grasp, Place

pytestmark = pytest.mark.serial
PHASES = ["detect", "plan", "approach", "close", "lift"]
# per scene: hand-sized objects, grasped, placed (physics), what missed
TALLY: dict[str, tuple[int, int, int, list[str]]] = {}


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    # the sim at real time, as the product runs it: at twice real time (a third less wall
    # time) a mug's grasp closed on nothing or on its wall in 2 of 3 runs of the pudding
    # scene on two cores, never at real time (nor in-process)
    with primitives_stack(SCENES[0], real_time_factor=1.0, watch_arm=False) as r:
        yield r


def _state_after_result(rig: Rig) -> WorldState:
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


@pytest.mark.parametrize("name", SCENES)
def test_grasp_then_place_every_movable_object_through_the_actions(rig: Rig, name: str) -> None:
    scene = as_scene(name)
    rig.reset(name, 0)
    movable = [e for e in scene.entities if e.movable]
    rig.seen_where_it_is(phrase(scene, movable[0].id), movable[0].id)
    grasped = placed = sized = 0
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
        sized += 1
        if not g.held:
            failures.append(f"grasp {e.id}: {g.status}: {g.message}")
            continue
        grasped += 1
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
        placed += truth
        if not (truth and claimed):
            failures.append(f"place {e.id} {where}: {p.status} (truth {truth}): {p.message}")
    print(f"{name}: grasped {grasped}/{sized}, placed {placed}/{grasped} (physics), "
          f"{len(movable) - sized} wider than the hand; {failures}")  # for the report (-s)
    assert sized > 0
    TALLY[name] = (sized, grasped, placed, failures)


def test_the_rates_over_every_scene() -> None:
    """The issue's goals over the 34 hand-sized objects: grasp >= 90 %, place >= 85 % (by
    physics). Per scene they are too few for a rate: one run of the ten once missed two
    grasps in one scene (the sauce and the ketchup next to a basket just filled), another
    placed every object there."""
    assert set(TALLY) == set(SCENES), f"scenes that did not finish: {set(SCENES) - set(TALLY)}"
    sized, grasped, placed = (sum(t[i] for t in TALLY.values()) for i in range(3))
    failures = [f for t in TALLY.values() for f in t[3]]
    assert grasped >= 0.9 * sized, (grasped, sized, failures)
    assert placed >= 0.85 * grasped, (placed, grasped, failures)
