"""LIBERO itself behind the process boundary (issue #34): tasks built as LIBERO's harness builds
them, spec §3 world states from its simulation, and our `libero_*` predicates against LIBERO's
own `base_predicates` on the same simulator states.

Conventions read from LIBERO's code (hf-libero 0.1.4 = Lifelong-Robot-Learning/LIBERO):
- the harness: `libero/lifelong/metric.py` / openpi's `examples/libero/main.py`:
  `env.seed(0); env.reset(); env.set_init_state(task_suite.get_task_init_states(i)[K])`;
- goal atoms and their values: `libero/libero/envs/problems/libero_tabletop_manipulation.py`
  (`_check_success` = AND of `_eval_predicate` over `parsed_problem["goal_state"]`) and
  `libero/libero/envs/predicates/base_predicates.py`;
- open/close/turn thresholds: `libero/libero/envs/objects/articulated_objects.py`.

One LIBERO process for the module (scenes build in 5-50 s). Needs `.venv-libero`
(`make libero-venv`, part of `make setup`): without it these tests fail, they never skip.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from mango.errors import InputError
from mango.oracle.libero_predicates import FULL_OPEN, OPEN_CLOSE, category_of
from mango.sim.libero import LiberoClient, LiberoRuntimeError, LiberoScene, world_state
from mango.sim.libero.agreement import NOOP, STAGES, check_atoms, rollout_checks
from mango.sim.libero.client import find_venv, runtime_problem

pytestmark = [pytest.mark.libero, pytest.mark.slow]

# A few tasks per suite, covering every predicate LIBERO's 130 goals use (in, on, open, close,
# turnon, turnoff), regions of the table, of fixtures and of objects.
TASKS = {
    "libero_goal": ["open_the_middle_drawer_of_the_cabinet", "turn_on_the_stove",
                    "put_the_wine_bottle_on_top_of_the_cabinet"],
    "libero_10": [0],
    "libero_spatial": [0],
    "libero_object": [0],
    "libero_90": ["KITCHEN_SCENE8_turn_off_the_stove",
                  "KITCHEN_SCENE10_close_the_top_drawer_of_the_cabinet_and_put_the_black_bowl_on_top_of_it"],
}


@pytest.fixture(scope="module")
def client() -> Iterator[LiberoClient]:
    problem = runtime_problem(find_venv())
    if problem:
        pytest.fail(problem)
    with LiberoClient() as c:
        yield c


@pytest.mark.parametrize("suite", list(TASKS))
def test_goal_atoms_agree_with_libero(client: LiberoClient, suite: str) -> None:
    for task in TASKS[suite]:
        info = client.open(LiberoScene(suite, task), 0)
        assert check_thresholds(info.articulation) >= 0
        checks = rollout_checks(client)
        assert list(checks) == list(STAGES)
        for stage, cs in checks.items():
            wrong = [(c.atom, c.libero, c.ours) for c in cs if not c.agrees]
            assert not wrong, f"{suite}/{task} at {stage}: LIBERO vs ours {wrong}"
        # init state 0 is not a goal state; posing the goal makes atoms true (the positive
        # side is exercised), and our verdict (all goal atoms) is LIBERO's check_success
        assert not all(c.libero for c in checks["init"])
        assert any(c.ours for c in checks["posed"]), f"{suite}/{task}: nothing posed"
        assert client.check_success() == all(c.ours for c in checks["posed"])


def check_thresholds(articulation: dict[str, dict[str, list[float]]]) -> int:
    """Our LIBERO tables (FULL_OPEN, OPEN_CLOSE) are LIBERO's classes' ranges; returns how
    many fixtures were compared."""
    n = 0
    for name, art in articulation.items():
        cat = category_of(name)
        assert cat in FULL_OPEN, f"{name}: no LIBERO thresholds for category {cat}"
        ranges = art.get("default_open_ranges") or art.get("default_turnon_ranges")
        assert FULL_OPEN[cat] == max(ranges, key=abs), name
        if cat in OPEN_CLOSE:
            is_open, is_close = OPEN_CLOSE[cat]
            neg = FULL_OPEN[cat] < 0
            t_open = max(ranges) if neg else min(ranges)
            closing = art["default_close_ranges"]
            t_close = min(closing) if neg else max(closing)
            step = -1e-6 if neg else 1e-6
            assert is_open(t_open + step) and not is_open(t_open - step), name
            assert is_close(t_close - step) and not is_close(t_close + step), name
        n += 1
    return n


def test_up_agrees_with_libero(client: LiberoClient) -> None:
    """LIBERO's `Up` (no goal of the 130 uses it) on every object, before and after the wine
    bottle is put on top of the cabinet (above 1 m)."""
    task = client.open(LiberoScene("libero_goal", "put_the_wine_bottle_on_top_of_the_cabinet"), 0)
    objects = [n for n, o in client.facts()["objects"].items() if not o["fixture"]]
    atoms = tuple(("up", n) for n in objects)
    _, before = check_atoms(client, atoms)
    client.pose_goal()
    _, after = check_atoms(client, atoms)
    assert all(c.agrees for c in before + after), [c for c in before + after if not c.agrees]
    assert not any(c.libero for c in before)
    assert [c.atom for c in after if c.libero] == [("up", "wine_bottle_1")]
    assert task.goal == (("on", "wine_bottle_1", "wooden_cabinet_1_top_side"),)


def test_world_state_uses_libero_names(client: LiberoClient) -> None:
    task = client.open(LiberoScene("libero_goal", "turn_on_the_stove"), 0)
    assert task.goal == (("turnon", "flat_stove_1"),)
    assert task.n_init_states == 50
    state = world_state(client.facts(), task.articulation)
    objs = state.objects
    assert objs["akita_black_bowl_1"].kind == "object"
    assert objs["wooden_cabinet_1"].kind == "fixture"
    assert objs["wooden_cabinet_1_top_region"].kind == "region"
    assert objs["wooden_cabinet_1_top_region"].parent == "wooden_cabinet_1"
    assert objs["flat_stove_1_cook_region"].parent == "flat_stove_1"
    assert all(min(o.size) > 0 for n, o in objs.items() if o.kind in ("object", "fixture"))
    # the drawers under their regions' names, the stove's knob under LIBERO's joint name
    assert {"wooden_cabinet_1_top_region", "wooden_cabinet_1_middle_region",
            "wooden_cabinet_1_bottom_region", "flat_stove_1_button"} <= set(state.joints)
    drawer = state.joints["wooden_cabinet_1_top_region"]
    assert (drawer.q_open, drawer.q_closed) == (-0.16, 0.0)
    assert state.devices["flat_stove_1"].on is False
    assert state.gripper is not None and state.gripper.closed is False
    assert 0.0 < state.gripper.width <= 0.081
    assert state.facts["grasped(akita_black_bowl_1)"] is False
    assert all(a < b and a in objs and b in objs for a, b in state.contacts)


def test_sim_state_round_trip(client: LiberoClient) -> None:
    task = client.open(LiberoScene("libero_spatial", 0), 0)
    start = client.get_sim_state()
    assert len(start) == task.state_size
    before = client.facts()["objects"]
    client.pose_goal()
    assert client.check_success()
    # the bowl now rests on the plate: LIBERO's check_contact pair is in the world state
    assert task.goal == (("on", "akita_black_bowl_1", "plate_1"),)
    contacts = world_state(client.facts(), task.articulation).contacts
    assert ("akita_black_bowl_1", "plate_1") in contacts
    client.set_sim_state(start)
    assert not client.check_success()
    after = client.facts()["objects"]
    for name, o in before.items():
        assert after[name]["position"] == pytest.approx(o["position"], abs=1e-9), name


def test_bad_requests_are_input_errors(client: LiberoClient) -> None:
    with pytest.raises(InputError, match=r"tasks 0\.\.9, not 10"):
        client.open(LiberoScene("libero_goal", 10), 0)
    with pytest.raises(InputError, match="no task 'no_such_task'"):
        client.open(LiberoScene("libero_goal", "no_such_task"), 0)
    with pytest.raises(InputError, match=r"init states 0\.\.49, not 50"):
        client.open(LiberoScene("libero_goal", 0), 50)
    client.open(LiberoScene("libero_goal", 0), 0)
    with pytest.raises(InputError, match="7 numbers"):
        client.step([0.0] * 6)
    with pytest.raises(InputError, match="has 79 numbers, got 3"):
        client.set_sim_state([0.0, 0.0, 0.0])
    client.step(NOOP)  # the process is still serving


def test_a_dead_worker_is_one_clear_error() -> None:
    c = LiberoClient()
    try:
        with pytest.raises(InputError, match="no LIBERO task is open"):
            c.check_success()
        c._proc.kill()
        c._proc.wait()
        with pytest.raises(LiberoRuntimeError, match="LIBERO process has exited"):
            c.check_success()
    finally:
        c.close()


def test_the_worker_dies_with_its_parent() -> None:
    """A driver killed outright (no close) takes its LIBERO process with it."""
    code = (
        "import sys, time\n"
        "from mango.sim.libero import LiberoClient\n"
        "c = LiberoClient()\n"
        "print(c._proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and _alive(worker):
        time.sleep(0.1)
    assert not _alive(worker)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
