"""MANGO's sampling plan: stages from the labelled failed step, the quota filled lowest seed
first, a shortfall reported (never padded), and a sampled campaign on the sim."""

from __future__ import annotations

from pathlib import Path

from mango.evaluation.campaign import EpisodeSpec, load_campaign
from mango.evaluation.episodes import execute_episode
from mango.evaluation.runner import (
    POOL,
    POOL_SYSTEM,
    STORE_FILE,
    _plan_steps,
    _TaskPool,
    run_campaign,
)
from mango.evaluation.sampling import QUOTA, fault_catalogue, select, stage_of
from mango.evaluation.store import Store
from mango.sim.env import as_scene

STEPS = ["1.1", "1.2", "2.1", "2.2", "3.1", "3.2"]


def _run(seed: int, fault: str | None, step: str | None) -> dict:
    """A pool run: it failed at `step`, or passed when `step` is None."""
    return {"seed": seed, "fault": fault, "labels": {
        "expected_verdict": "fail" if step else "pass", "failed_step": step}}


def test_stage_is_the_failed_steps_third_of_the_plan() -> None:
    fail = {"expected_verdict": "fail"}
    assert stage_of({"expected_verdict": "pass"}, STEPS) == "pass"
    assert [stage_of({**fail, "failed_step": s}, STEPS) for s in STEPS] == [
        "early", "early", "mid", "mid", "late", "late"]
    # failed with every step done: the end state (a knocked-out goal) is the last thing
    assert stage_of({**fail, "failed_step": None}, STEPS) == "late"


def test_the_quota_lowest_seed_first_and_the_shortfall() -> None:
    pool = [_run(s, None, None) for s in (5, 1, 3, 0, 2)]
    pool += [_run(s, "drop@0.5", "3.2") for s in (4, 0, 1)]  # late
    pool += [_run(0, "skip@1", "1.1")]  # one early only
    pool.append({"seed": 9, "fault": "stall@3", "labels": None})  # an errored run
    chosen, short = select(pool, STEPS)
    passes = [r["seed"] for r in chosen if r["fault"] is None]
    assert passes == [0, 1, 2, 3]
    assert [r["seed"] for r in chosen if r["fault"] == "drop@0.5"] == [0, 1]
    assert short == {"early": QUOTA["early"] - 1, "mid": QUOTA["mid"]}
    # a faulted run that passed anyway is not one of the four passes
    lucky = [_run(s, "stall@8", None) for s in range(4)]
    chosen, short = select(lucky, STEPS)
    assert chosen == [] and short["pass"] == 4


def test_the_catalogue_holds_only_faults_the_task_accepts() -> None:
    cat = fault_catalogue(as_scene("libero10_stove_moka"))
    assert "drop@0.5" in cat and "stall@3" in cat
    # step 1 turns the stove on (no object to swap or misplace); step 2 is the last, and a
    # placed object can only be knocked out before it
    assert "wrong_place@2" in cat and "wrong_object@2" in cat
    assert not {"wrong_place@1", "wrong_object@1", "knock_out@1", "knock_out@2"} & set(cat)


def test_a_sampled_campaign_reuses_the_pool_for_its_expert(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("""name: sampled
systems: [{name: expert, kind: policy}]
tasks: [libero10_stove_moka]
seeds: {start: 0, count: 2}
faults: [none, drop@0.5, skip@1]
sampling: mango
""")
    out = tmp_path / "out"
    summary = run_campaign(load_campaign(path), out)
    with Store(out / STORE_FILE) as store:
        episodes = list(store.results())
        pool = list(store.results("pool"))
    assert len(pool) == summary.pool <= 6 and len(episodes) == summary.total
    assert all(e["reused_from"] == e["episode"].replace("expert__", "pool__", 1)
               for e in episodes)
    steps = ["1.1", "2.1", "2.2", "2.3"]  # the stove_moka oracle's plan
    stages = [stage_of(e["labels"], steps) for e in episodes]
    short = (summary.shortfall or {}).get("libero10_stove_moka", {})
    for stage, want in QUOTA.items():
        assert stages.count(stage) + short.get(stage, 0) == want, (stage, stages, short)
    assert stages.count("pass") == 2  # two seeds: two passes, two short
    assert all((e["fault"] is None) == (st == "pass") for e, st in zip(episodes, stages,
                                                                      strict=True))
    again = run_campaign(load_campaign(path), out)  # resumed: nothing runs again
    assert (again.pool, again.ran, again.skipped) == (0, 0, summary.total)


def test_a_passing_run_adds_a_stall_inside_each_of_its_steps() -> None:
    """The catalogue has no fault that fails stove_moka's pick (a drop strikes in the carry,
    after the pick is done), so its mid stage stayed empty. A passing run's milestones time
    its steps; a stall in the middle of each window is a candidate for that seed, and the one
    inside the pick fails the pick (the real sim, the labels from physics)."""
    task = "libero10_stove_moka"
    steps = _plan_steps(task)
    passed, _ = execute_episode(EpisodeSpec(POOL, task, 0, None), POOL_SYSTEM)
    times = [m["t"] for m in passed["labels"]["milestones"]]
    pool = _TaskPool(task, steps, [], [])
    pool.add(passed)
    derived = [c.fault for c in pool.candidates]
    assert len(derived) == len(times) and all(c.seed == 0 for c in pool.candidates)
    picked = next(m for m in passed["labels"]["milestones"] if m["kind"] == "pick")
    before = max(t for t in [0.0, *times] if t < picked["t"])
    stall = f"stall@{(before + picked['t']) / 2:.2f}"
    assert stall in derived
    failed, _ = execute_episode(EpisodeSpec(POOL, task, 0, stall), POOL_SYSTEM)
    assert stage_of(failed["labels"], steps) == "mid", failed["labels"]["failed_step"]
    # a faulted run adds nothing; nor does a pool of faults the campaign file gave
    pool.add(failed)
    assert [c.fault for c in pool.candidates] == derived
    given = _TaskPool(task, steps, [], [], derive=False)
    given.add(passed)
    assert given.candidates == []
