"""World-failure events from ground truth (VoLo App. K.1) on synthetic streams and on a faulted
sim episode: each failure kind, re-firing stuck, one-to-one recoveries, open spells."""

from __future__ import annotations

from mango.oracle.world_state import EntityState, GripperState, WorldState
from mango.orchestrator.events import TaskGoal, WorldFailureDetector, detector_for

TABLE = 0.9
FINGERS = ("robot_left_finger", "robot_right_finger")


def _state(t: float, *, can: tuple[float, float, float], hand: tuple[float, float, float],
           held: str | None = None, cup: tuple[float, float, float] = (0.3, 0.3, 0.95)
           ) -> WorldState:
    """A table with a plate, a can and a cup; `held` is touched by both fingers, closed."""
    objects = {
        "table": EntityState(position=(0, 0, TABLE - 0.025), size=(1, 1, 0.05), kind="surface"),
        "plate": EntityState(position=(0.0, -0.2, TABLE + 0.01), size=(0.2, 0.2, 0.02)),
        "can": EntityState(position=can, size=(0.06, 0.06, 0.1)),
        "cup": EntityState(position=cup, size=(0.06, 0.06, 0.1)),
        "robot_hand": EntityState(position=hand, size=(0.02, 0.02, 0.02)),
    }
    contacts = [(held, f) for f in FINGERS] if held else []
    return WorldState(t=t, objects=objects, contacts=contacts,
                      gripper=GripperState(width=0.05 if held else 0.08, closed=held is not None))


def _detector(**kw: float) -> WorldFailureDetector:
    goals = [TaskGoal("can", "on(can, plate) and not grasped(can)", "place", "plate", 0)]
    return WorldFailureDetector(goals, ["can", "cup"], TABLE, **kw)


def _feed(det: WorldFailureDetector, states: list[WorldState]) -> list[str]:
    return [e.kind for st in states for e in det.update(st)]


def test_a_drop_in_transport_is_a_regression_and_placing_it_later_recovers_it() -> None:
    det = _detector()
    on_table = (0.2, 0.2, TABLE + 0.05)
    carried = (0.1, 0.0, TABLE + 0.3)
    stream = [_state(0.0, can=on_table, hand=(0.2, 0.2, 1.2))]
    stream += [_state(0.1 * i, can=carried, hand=carried, held="can") for i in range(1, 5)]
    # released 30 cm up; it falls to the table
    stream += [_state(0.5, can=carried, hand=carried)]
    stream += [_state(0.6 + 0.1 * i, can=(0.1, 0.0, TABLE + 0.05), hand=carried)
               for i in range(7)]
    kinds = _feed(det, stream)
    assert kinds == ["object_regression"]
    ev = det.events[0]
    assert ev.subject == "can" and abs(ev.t - 0.5) < 1e-9  # when it left the hand
    assert "25 cm above the table" in ev.detail
    assert [s.recovered for s in det.spells] == [False]
    # put on the plate later: the completion recovers the regression, one to one
    kinds = _feed(det, [_state(2.0, can=(0.0, -0.2, TABLE + 0.07), hand=(0, -0.2, 1.1))])
    assert kinds == ["completion", "recovery"]
    assert det.events[-1].pairs == 0 and det.summary()["unrecovered"] == 0


def test_set_down_beside_the_target_is_a_wrong_target_place() -> None:
    det = _detector()
    low = (0.15, -0.2, TABLE + 0.05)  # next to the plate, on the table
    stream = [_state(0.0, can=(0.2, 0.2, TABLE + 0.05), hand=(0.2, 0.2, 1.2))]
    stream += [_state(0.1, can=low, hand=low, held="can")]
    stream += [_state(0.2 + 0.1 * i, can=low, hand=(0.15, -0.2, 1.1)) for i in range(7)]
    assert _feed(det, stream) == ["wrong_target_place"]


def test_holding_an_object_no_goal_moves_is_wrong_object_until_it_is_let_go() -> None:
    det = _detector()
    cup = (0.3, 0.3, TABLE + 0.05)
    stream = [_state(0.0, can=(0.2, 0.2, TABLE + 0.05), hand=(0.3, 0.3, 1.2), cup=cup),
              _state(0.1, can=(0.2, 0.2, TABLE + 0.05), hand=cup, held="cup", cup=cup)]
    assert _feed(det, stream) == ["wrong_object_picked"]
    assert det.events[0].subject == "cup"
    # let go on the table (not in a destination): recovered
    kinds = _feed(det, [_state(0.2, can=(0.2, 0.2, TABLE + 0.05), hand=(0.3, 0.3, 1.1),
                               cup=cup)])
    assert kinds == ["recovery"] and det.spells[0].recovered


def test_undoing_a_reached_goal_is_a_regression() -> None:
    det = _detector()
    on_plate = (0.0, -0.2, TABLE + 0.07)
    stream = [_state(0.0, can=on_plate, hand=(0.3, 0.3, 1.2)),
              _state(0.1, can=(0.3, 0.0, TABLE + 0.05), hand=(0.3, 0.3, 1.2))]
    assert _feed(det, stream) == ["completion", "object_regression"]


def test_stuck_fires_after_the_window_and_again_until_the_hand_moves() -> None:
    det = _detector(stuck_s=2.0)
    can = (0.2, 0.2, TABLE + 0.05)
    still = [_state(0.5 * i, can=can, hand=(0.0, 0.0, 1.2)) for i in range(11)]  # 5 s
    assert _feed(det, still) == ["stuck", "stuck"]  # at 2 s and 4 s
    assert [round(e.t, 2) for e in det.events] == [2.0, 4.0]
    kinds = _feed(det, [_state(5.5, can=can, hand=(0.1, 0.0, 1.2))])
    assert kinds == ["recovery", "recovery"]  # both spells close, each paired once
    assert sorted(e.pairs for e in det.events if e.kind == "recovery") == [0, 1]


def test_a_faulted_expert_episode_shows_its_failure_and_nothing_else() -> None:
    from mango.sim.env import SimEnv
    from mango.sim.expert.policy import ExpertPolicy

    env = SimEnv("soup_sauce_basket", seed=0, cameras=())
    det = detector_for(env.scene)
    policy = ExpertPolicy(env.scene, "wrong_place@2")
    state = env.world_state()
    det.update(state)
    while not policy.done and state.t < 40:
        for row in policy.act(state, env.joint_positions()):
            env.step(row)
            state = env.world_state()
            det.update(state)
    for _ in range(15):
        env.step(None)
        det.update(env.world_state())
    fr = policy.fault_record
    assert fr is not None and fr.t is not None
    failures = [e for e in det.events if e.kind not in ("completion", "recovery")]
    assert [(e.kind, e.subject) for e in failures] == [("wrong_target_place", "tomato_sauce_1")]
    assert abs(failures[0].t - fr.t) < 0.5  # at the release the fault made
    assert [e.subject for e in det.events if e.kind == "completion"] == ["alphabet_soup_1"]
    assert det.summary()["unrecovered"] == 1
