"""What a grasp/place server keeps between goals (`PrimitiveSession`, the primitives_node's
core): refusals worded before anything moves, one executor per scene that outlives goals and
reaches each goal's ports, a new one after a scene change or a reset (time going back)."""

from __future__ import annotations

import numpy as np

from mango.primitives import (
    Executed,
    Measurement,
    Perceived,
    PrimitiveExecutor,
    PrimitivePorts,
)
from mango.primitives.motion import WorldFrameIK
from mango.primitives.session import PrimitiveSession
from mango.sim.scene import as_scene


class _Goal:
    """One goal's ports: a perception that sees nothing, an arm that never moves, a clock."""

    def __init__(self, t: float = 1.0, broken: bool = False) -> None:
        self.t, self.broken, self.looked = t, broken, 0

    def ports(self) -> PrimitivePorts:
        def detect(phrases: list[str]) -> Perceived:
            self.looked += 1
            return Perceived({}, {p: "nothing in view" for p in phrases})

        def measure() -> Measurement:
            if self.broken:
                raise RuntimeError("no fresh joint states within 1 s")
            return Measurement(np.zeros(7), 0.08, self.t)

        return PrimitivePorts(detect=detect, execute_chunk=lambda _c: Executed("done"),
                              measure=measure)


def _session(scene: str | None = "libero10_mug_microwave"
             ) -> tuple[PrimitiveSession, list[PrimitiveExecutor]]:
    made: list[PrimitiveExecutor] = []

    def make(sc, ports) -> PrimitiveExecutor:
        from mango.control.kinematics import FR3Kinematics
        from mango.control.robot import load_robot

        ex = PrimitiveExecutor(ports, WorldFrameIK(FR3Kinematics(load_robot("fr3")),
                                                   sc.robot.base, (1.0, 0, 0, 0)), sc)
        made.append(ex)
        return ex

    return PrimitiveSession(make, as_scene(scene) if scene else None), made


def test_refusals_are_worded_before_anything_runs() -> None:
    s, made = _session()
    goal = _Goal()
    assert s.grasp("  ", goal.ports()).message == "no target given"
    bad = s.place("somewhere nice", "", goal.ports())
    assert bad.status == "rejected" and "place phrasing" in bad.message
    broken = s.grasp("the white mug", _Goal(broken=True).ports())
    assert broken.status == "rejected" and broken.message.startswith("measuring: no fresh")
    none, _ = _session(None)
    g = none.grasp("the white mug", goal.ports())
    assert g.status == "rejected" and "no scene yet" in g.message
    assert not made and goal.looked == 0


def test_one_executor_per_scene_reaching_each_goals_ports_until_a_reset() -> None:
    s, made = _session()
    first, second = _Goal(5.0), _Goal(6.0)
    g = s.grasp("porcelain_mug_1", first.ports())  # an entity id: its description is asked
    assert g.status == "rejected" and "'white mug' matches nothing" in g.message
    s.grasp("the white mug", second.ports())
    assert len(made) == 1 and (first.looked, second.looked) == (1, 1)
    s.grasp("the white mug", _Goal(1.0).ports())  # time went back: the sim was reset
    assert len(made) == 2
    s.follow_scene("libero10_mug_microwave")  # the same scene: nothing changes
    s.grasp("the white mug", _Goal(1.1).ports())
    assert len(made) == 2
    s.follow_scene("libero10_mugs_plates")
    assert s.scene is not None and s.scene.name == "libero10_mugs_plates"
    s.grasp("the white mug", _Goal(1.2).ports())
    assert len(made) == 3


def test_the_fingers_close_only_once_the_measured_hand_is_where_the_approach_ended() -> None:
    """An arm lagging its approach chunk (a controller or a sim behind real time) is held at
    the approach's last row until the measured hand is there, at most `ARRIVE_TRIES` short
    holds; a hold that does not finish stops the grasp."""
    from mango.primitives.executor import ARRIVE_TRIES, _Stopped

    sent: list[np.ndarray] = []
    lag = {"measures": 0, "arrive_after": 2, "status": "done"}
    row = np.r_[np.array([0.1, -0.4, 0.0, -2.2, 0.0, 1.9, 0.8]), 0.07]
    short = row[:7] + np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0])  # ~cm off at the hand

    def measure() -> Measurement:
        lag["measures"] += 1
        q = row[:7] if lag["measures"] > lag["arrive_after"] else short
        return Measurement(q.copy(), 0.07, 1.0)

    def execute(chunk: np.ndarray) -> Executed:
        sent.append(np.asarray(chunk))
        return Executed(lag["status"])  # type: ignore[arg-type]

    s, made = _session()
    ports = PrimitivePorts(detect=lambda p: Perceived({}, {}), execute_chunk=execute,
                           measure=measure)
    s.grasp("the white mug", ports)  # makes the executor (nothing seen: nothing moves)
    assert len(made) == 1 and not sent
    ex = made[0]
    lag["measures"] = 0
    ex._arrive(row)
    assert len(sent) == 2  # two short holds, then the hand measured there
    assert all(np.allclose(c[:, :7], row[:7]) and np.allclose(c[:, 7], 0.07) for c in sent)
    sent.clear()
    lag.update(measures=0, arrive_after=10**6)  # it never gets there: bounded, then on
    ex._arrive(row)
    assert len(sent) == ARRIVE_TRIES
    lag.update(measures=0, status="cancelled")
    try:
        ex._arrive(row)
    except _Stopped:
        pass
    else:
        raise AssertionError("a cancelled hold did not stop the grasp")
