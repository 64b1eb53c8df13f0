"""MANGO Table III per task and overall (`metrics.summarize`), on episode rows written by
hand so every cell is known: a missed failure, a false alarm, a failure caught at the wrong
step, each in its own task."""

from __future__ import annotations

from typing import Any

from mango.evaluation.metrics import summarize
from mango.evaluation.report import to_markdown

STEPS = ["1", "2", "3"]


def _row(task: str, truth: str | None, said: str | None, symbolic: str | None = "same",
         ) -> dict[str, Any]:
    """An episode: `truth` / `said` the labelled / judged failed step (None: a pass);
    `symbolic` the end-state check's verdict (`same`: right whenever the truth is known)."""
    failed = truth is not None
    sym = ("fail" if failed else "pass") if symbolic == "same" else symbolic
    return {"system": "expert", "task": task, "success": not failed, "error": None,
            "labels": {"expected_verdict": "fail" if failed else "pass", "failed_step": truth},
            "verdict": {"verdict": "fail" if said is not None else "pass", "failed_step": said,
                        "steps": [{"path": p} for p in STEPS]},
            "symbolic": {"verdict": sym}}


def test_table3_per_task_and_overall() -> None:
    rows = [
        _row("a", None, None), _row("a", "1", "1"), _row("a", "3", None, symbolic="pass"),
        _row("b", None, "2", symbolic="pass"), _row("b", "2", "2"),
        _row("c", "2", "1"), _row("c", None, None),
    ]
    ovs = summarize(rows)["oracle_vs_symbolic"]
    assert ovs["confusion"] == {"tp": 3, "fp": 1, "tn": 2, "fn": 1}
    assert ovs["localization_accuracy"] == 2 / 3
    per = ovs["per_task"]
    assert set(per) == {"a", "b", "c"}
    assert per["a"]["confusion"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 1}
    assert per["a"]["recall"] == 0.5 and per["a"]["precision"] == 1.0
    assert per["a"]["symbolic"]["confusion"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 1}
    assert per["b"]["confusion"] == {"tp": 1, "fp": 1, "tn": 0, "fn": 0}
    assert per["b"]["symbolic"]["confusion"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 0}
    assert per["c"]["localization_accuracy"] == 0.0 and per["c"]["f1"] == 1.0
    assert per["c"]["symbolic"]["localization_accuracy"] is None  # an end state names no step
    # the tasks' cells add up to the overall table
    for k in ("tp", "fp", "tn", "fn"):
        assert sum(t["confusion"][k] for t in per.values()) == ovs["confusion"][k]
    md = to_markdown(summarize(rows), "t")
    assert "## Oracle vs ground truth per task" in md
    assert "| c | 2 | fine-grained oracle | 1 | 0 | 1 | 0 | 1.000 | 1.000 | 1.000 | 1.000 " \
           "| 0.000 |" in md

