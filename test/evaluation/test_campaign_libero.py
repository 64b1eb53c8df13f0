"""Campaigns on LIBERO itself (commands.md §7: "A campaign task may be `libero/SUITE/TASK`; its
seeds are LIBERO init-state indices"): the scripted expert in LIBERO's own process, success by
LIBERO's `check_success()` (also the symbolic reference), the fine-grained verdict from the
oracle generated for the task's instruction in LIBERO's semantics; what does not run on LIBERO
yet is refused before anything runs, naming the field. Needs `.venv-libero`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.errors import InputError
from mango.evaluation.campaign import load_campaign
from mango.evaluation.metrics import summarize
from mango.evaluation.runner import run_campaign

pytestmark = [pytest.mark.libero, pytest.mark.slow]

TASK = "libero/libero_spatial/0"  # on(akita_black_bowl_1, plate_1): a short pick and place
BASE = {"name": "lib", "systems": "[{name: expert, kind: policy}]", "tasks": f"[{TASK}]",
        "seeds": "{start: 2, count: 1}"}


def _campaign(tmp_path: Path, **changes: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in {**BASE, **changes}.items()))
    return path


def test_an_expert_episode_is_judged_by_libero_and_by_the_oracle(tmp_path: Path) -> None:
    summary = run_campaign(load_campaign(_campaign(tmp_path)), tmp_path / "out")
    assert (summary.ran, summary.errors) == (1, 0)
    folder = tmp_path / "out" / "episodes" / "expert__libero_libero_spatial_0__s2__none"
    result = json.loads((folder / "result.json").read_text())
    labels = json.loads((folder / "labels.json").read_text())
    assert result["libero_success"] is result["success"] is True
    assert result["symbolic"]["verdict"] == result["verdict"]["verdict"] == "pass"
    assert labels["seed"] == 2 and labels["libero_task"]["index"] == 0
    assert labels["expected_verdict"] == "pass" and labels["failed_step_labelled"] is False
    assert (folder / "trace.jsonl").read_text().count("\n") == labels["steps"] + 1
    table = summarize([result])
    assert table["systems"]["expert"]["per_task"] == {TASK: {"success": 1, "n": 1}}
    assert table["oracle_vs_symbolic"]["judged"] == 1


def test_a_failure_without_a_labelled_step_is_left_out_of_localization() -> None:
    """LIBERO's labels say the verdict, not the step: a caught failure counts for recall and
    is not counted as mislocated (nor put in a failure stage)."""
    steps = [{"path": p, "status": "completed"} for p in ("1.1", "1.2", "1.3")]
    caught = {"system": "expert", "task": TASK, "success": False, "error": None,
              "verdict": {"verdict": "fail", "failed_step": "1.3", "steps": steps},
              "symbolic": {"verdict": "fail"},
              "labels": {"expected_verdict": "fail", "failed_step": None,
                         "failed_step_labelled": False}}
    table = summarize([caught])["oracle_vs_symbolic"]
    assert table["confusion"]["tp"] == 1 and table["recall"] == 1.0
    assert table["localization_accuracy"] is None
    assert all(s["failures"] == 0 for s in table["by_stage"].values())


@pytest.mark.parametrize(("changes", "field", "says"), [
    ({"faults": "[none, drop@0.5]"}, "faults[1]", "faults are not wired"),
    ({"systems": "[{name: e, kind: policy}, {name: t, kind: task, mode: full}]"},
     "systems[1].kind", "orchestrated systems"),
    ({"runner": "ros"}, "runner", "in_process"),
    ({"sampling": "mango"}, "sampling", "sampling: grid"),
    ({"tasks": "[libero/libero_spatial/10]"}, "tasks[0]", "tasks 0..9, not 10"),
    ({"tasks": "[libero/libero_99/0]"}, "tasks[0]", "unknown LIBERO suite"),
    ({"seeds": "{start: 48, count: 3}"}, "seeds", "init states 0..49"),
])
def test_what_does_not_run_on_libero_is_refused_first(tmp_path: Path, changes: dict[str, str],
                                                      field: str, says: str) -> None:
    with pytest.raises(InputError) as err:
        load_campaign(_campaign(tmp_path, **changes))
    assert err.value.field == field and says in err.value.message, err.value
    assert err.value.file == str(tmp_path / "c.yaml")
