"""MANGO's sampling plan (paper §V-B): per task, 4 passing executions and 2 early, 2 mid and
2 late failures, chosen from a pool of expert runs by where the failure happens.

Where a failure happens is read from the ground truth, not from any oracle under test: the
labelled failed step's position in the task's fine-grained plan (first third early, second
mid, last late). The pool is every (seed, fault) of the campaign's seed range and the fault
catalogue below that the task accepts, plus, for each passing run, a stall in the middle of
each of its steps (timed by that run's ground-truth milestones: a step no catalogue fault
fails still gets failures); the choice is deterministic (lowest seed first, faults in
catalogue order), so the same campaign file samples the same episodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mango.errors import InputError

QUOTA = {"pass": 4, "early": 2, "mid": 2, "late": 2}
STAGES = ("early", "mid", "late")


def fault_catalogue(scene: Any) -> list[str]:
    """Every fault the scene's expert plan accepts: each kind at each step it applies to,
    drops early / mid / late in the transport, stalls at 3 s and 8 s."""
    from mango.sim.faults import FaultInjector, parse_fault

    candidates = ["drop@0.2", "drop@0.5", "drop@0.8", "stall@3", "stall@8"]
    for k in range(1, len(scene.expert) + 1):
        candidates += [f"{kind}@{k}" for kind in ("skip", "wrong_object", "wrong_place",
                                                  "knock_out")]
    ok = []
    for text in candidates:
        try:
            FaultInjector(scene, parse_fault(text))
        except InputError:
            continue
        ok.append(text)
    return ok


def stage_of(labels: dict[str, Any], steps: Sequence[str]) -> str:
    """`pass`, or the stage of the labelled failed step among the plan's step paths."""
    if labels.get("expected_verdict") != "fail":
        return "pass"
    step = labels.get("failed_step")
    if step is None or step not in steps:
        return "late"  # failed with no step missed: the end state (an undone goal)
    i, n = list(steps).index(step), len(steps)
    return STAGES[min(2, 3 * i // n)]


def select(pool: list[dict[str, Any]], steps: Sequence[str]) -> tuple[list[dict[str, Any]],
                                                                         dict[str, int]]:
    """The quota's episodes from one task's pool (results with labels), and the shortfall
    per stage when the pool has too few (reported, never padded with other stages)."""
    chosen: list[dict[str, Any]] = []
    short: dict[str, int] = {}
    ordered = sorted(pool, key=lambda r: (r["seed"], r["fault"] or ""))
    for stage, want in QUOTA.items():
        found = [r for r in ordered if r.get("labels")
                 and (stage == "pass") == (r["fault"] is None)
                 and stage_of(r["labels"], steps) == stage][:want]
        chosen += found
        if len(found) < want:
            short[stage] = want - len(found)
    return chosen, short
