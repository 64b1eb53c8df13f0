"""A campaign's summary (commands.md §5 `--format json`): success per system with Wilson
intervals and per task; the fine-grained oracle against the ground-truth labels (MANGO Table
III), with the symbolic end-state oracle judged the same way as the reference; pairwise system
comparisons (paired sign-flip over per-task success fractions, Vargha-Delaney A12).

A "positive" is a failed episode: the oracle's job is to catch failures. Localization accuracy
is the share of the true positives whose failed step is the labelled one.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from mango.evaluation.sampling import STAGES, stage_of
from mango.evaluation.stats import a12, sign_flip_test, wilson


def confusion(pairs: Iterable[tuple[bool, bool, bool | None]]) -> dict[str, Any]:
    """(predicted fail, truly failed, step right or None) triples -> Table III figures; a
    true positive whose step is None (no labelled step to compare) is left out of the
    localization accuracy, not counted as missed."""
    tp = fp = tn = fn = located = compared = 0
    for predicted, actual, step_ok in pairs:
        if predicted and actual:
            tp += 1
            if step_ok is not None:
                compared += 1
                located += bool(step_ok)
        elif predicted:
            fp += 1
        elif actual:
            fn += 1
        else:
            tn += 1
    n = tp + fp + tn + fn
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (2 * precision * recall / (precision + recall)
          if precision is not None and recall is not None and precision + recall else None)
    return {"confusion": {"tp": tp, "fp": fp, "tn": tn, "fn": fn},
            "accuracy": (tp + tn) / n if n else None, "precision": precision,
            "recall": recall, "f1": f1,
            "localization_accuracy": located / compared if compared else None}


NO_DECISION = "no recovery decision"


def recovery_flow(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """VoLo's failure -> recovery flow over the orchestrated episodes: per system, each world
    failure (a spell of the ground-truth detector) by its kind, the first recovery decision
    taken while it was open (action, and tool when it names one), and whether the world
    recovered; counted per (system, failure, decision, outcome)."""
    counts: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for r in results:
        orch = r.get("orchestrated") or {}
        decisions = [d for d in orch.get("timeline", [])
                     if d["kind"] == "decision" and d["phase"] == "recovery"]
        for spell in orch.get("spells", []):
            end = spell["end_t"] if spell["end_t"] is not None else float("inf")
            d = next((d for d in decisions if spell["start_t"] <= d["t"] <= end), None)
            name = NO_DECISION if d is None else (
                d["action"] if d["tool"] in (None, "noop") else f"{d['action']} ({d['tool']})")
            outcome = "recovered" if spell["recovered"] else "not recovered"
            counts[(r["system"], spell["kind"], name, outcome)] += 1
    return [{"system": s, "failure": f, "decision": d, "outcome": o, "count": n}
            for (s, f, d, o), n in sorted(counts.items())]


def _judged(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r.get("labels") and r.get("error") is None]


def _step_labelled(result: dict[str, Any]) -> bool:
    """Whether the labels name the failed step (a LIBERO episode's say only LIBERO's verdict:
    `failed_step_labelled: false`)."""
    return result["labels"].get("failed_step_labelled", True) is not False


def _table3(judged: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """MANGO Table III over judged episodes: the fine-grained oracle and the symbolic end
    state, each against the labels."""
    fine = confusion((r["verdict"]["verdict"] == "fail", r["labels"]["expected_verdict"] == "fail",
                      r["verdict"]["failed_step"] == r["labels"]["failed_step"]
                      if _step_labelled(r) else None) for r in judged)
    symbolic = confusion((r["symbolic"]["verdict"] == "fail",
                          r["labels"]["expected_verdict"] == "fail", None) for r in judged)
    symbolic["localization_accuracy"] = None  # an end-state check names no step
    return fine, symbolic


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    systems: dict[str, dict[str, Any]] = {}
    per_task: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        per_task[r["system"]][r["task"]].append(bool(r.get("success")))
    for name, tasks in per_task.items():
        flat = [s for v in tasks.values() for s in v]
        k, n = sum(flat), len(flat)
        lo, hi = wilson(k, n)
        systems[name] = {"success": k, "n": n, "success_rate": k / n, "wilson_95": [lo, hi],
                         "per_task": {t: {"success": sum(v), "n": len(v)}
                                      for t, v in sorted(tasks.items())}}
    judged = [r for r in _judged(results) if r.get("verdict")]
    fine, symbolic = _table3(judged)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in judged:
        by_task[r["task"]].append(r)
    task_tables = {}
    for task, rows in sorted(by_task.items()):
        f, sym = _table3(rows)
        task_tables[task] = {**f, "symbolic": sym, "judged": len(rows)}
    by_stage = {}
    for stage in STAGES:
        failed = [r for r in judged if _step_labelled(r)
                  and stage_of(r["labels"], [s["path"] for s in r["verdict"]["steps"]]) == stage]
        caught = [r for r in failed if r["verdict"]["verdict"] == "fail"]
        located = [r for r in caught
                   if r["verdict"]["failed_step"] == r["labels"]["failed_step"]]
        by_stage[stage] = {"failures": len(failed), "detected": len(caught),
                           "localized": len(located),
                           "recall": len(caught) / len(failed) if failed else None,
                           "localization_accuracy": (len(located) / len(caught)
                                                     if caught else None)}
    comparisons = []
    for a, b in itertools.combinations(sorted(per_task), 2):
        shared = sorted(set(per_task[a]) & set(per_task[b]))
        if not shared:
            continue
        fa = [sum(per_task[a][t]) / len(per_task[a][t]) for t in shared]
        fb = [sum(per_task[b][t]) / len(per_task[b][t]) for t in shared]
        test = sign_flip_test(fa, fb)
        comparisons.append({"a": a, "b": b, "mean_diff_pp": 100 * test.mean_diff, "p": test.p,
                            "a12": a12(fa, fb).a12, "tasks": len(shared)})
    return {"episodes": len(results), "systems": systems,
            "oracle_vs_symbolic": {**fine, "symbolic": symbolic, "judged": len(judged),
                                   "by_stage": by_stage, "per_task": task_tables},
            "comparisons": comparisons, "recovery_flow": recovery_flow(results)}
