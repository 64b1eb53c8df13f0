"""Campaigns end to end on the embedded sim: the file checked before anything runs, results
stored per episode, a killed run resumed without duplicates or losses, workers giving the same
results as one process, and the report in every format."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.errors import InputError
from mango.evaluation.campaign import load_campaign
from mango.evaluation.runner import STORE_FILE, run_campaign
from mango.evaluation.store import Store

TINY = Path(__file__).resolve().parents[1] / "data" / "sim" / "tiny_basket.yaml"


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _tiny(tmp_path: Path, count: int = 2, name: str = "tiny") -> Path:
    return _write(tmp_path, f"""name: {name}
systems:
  - {{name: expert, kind: policy, backend: expert}}
tasks: [{TINY}]
seeds: {{start: 0, count: {count}}}
faults: [none, drop@0.5]
""")


@pytest.mark.parametrize(("body", "field", "says"), [
    ("tasks: [no_such_scene]", "tasks[0]", "unknown scene 'no_such_scene'"),
    ("tasks: [libero10_stove_moka]\nfaults: [wrong_object@1]", "faults[0]",
     "is not a pick-and-place"),
    ("tasks: [libero10_stove_moka]\nfaults: [none, fly@2]", "faults[1]", "bad fault 'fly@2'"),
    ("tasks: [libero10_stove_moka]\nseeds: {start: -1, count: 2}", "seeds.start",
     "greater than or equal to 0"),
    ("tasks: [libero10_stove_moka]\nseeds: {start: 0, count: 0}", "seeds.count",
     "greater than or equal to 1"),
])
def test_bad_campaign_files_fail_before_any_episode(tmp_path: Path, body: str, field: str,
                                                   says: str) -> None:
    text = "name: bad\nsystems: [{name: expert, kind: policy}]\n"
    if "seeds:" not in body:
        text += "seeds: {start: 0, count: 1}\n"
    path = _write(tmp_path, text + body + "\n")
    with pytest.raises(InputError) as err:
        load_campaign(path)
    assert err.value.field == field and says in err.value.message and err.value.file == str(path)
    res = CliRunner().invoke(app, ["campaign", "run", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and field in res.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


def test_other_bad_inputs_name_their_field(tmp_path: Path) -> None:
    cases = {
        "systems: [{name: a, kind: policy}, {name: a, kind: policy}]": "systems[1].name",
        "systems: [{name: pi, kind: policy, backend: openpi}]": "systems[0].backend",
        "systems: [{name: 'a b', kind: policy}]": "systems[0].policy.name",
        "systems: [{name: x, kind: dance}]": "systems[0]",
    }
    for systems, field in cases.items():
        path = _write(tmp_path, f"name: bad\n{systems}\ntasks: [libero10_stove_moka]\n"
                                "seeds: {count: 1}\n")
        with pytest.raises(InputError) as err:
            load_campaign(path)
        assert err.value.field is not None and err.value.field.startswith(field), (
            systems, err.value)


def test_run_stores_judges_and_reports(tmp_path: Path) -> None:
    path = _write(tmp_path, """name: judged
systems:
  - {name: expert, kind: policy}
tasks: [libero10_stove_moka]
seeds: {start: 0, count: 1}
faults: [none, drop@0.5]
""")
    out = tmp_path / "out"
    summary = run_campaign(load_campaign(path), out)
    assert (summary.total, summary.ran, summary.errors) == (2, 2, 0)
    for eid in ("expert__libero10_stove_moka__s0__none",
                "expert__libero10_stove_moka__s0__drop-at-0.5"):
        folder = out / "episodes" / eid
        labels = json.loads((folder / "labels.json").read_text())
        result = json.loads((folder / "result.json").read_text())
        assert labels["scene"] == "libero10_stove_moka" and labels["seed"] == 0
        assert (folder / "trace.jsonl").stat().st_size > 0
        assert result["verdict"]["verdict"] in ("pass", "fail")
        assert result["success"] == (result["symbolic"]["verdict"] == "pass")
    res = CliRunner().invoke(app, ["campaign", "report", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["episodes"] == 2
    assert set(rep["systems"]["expert"]) >= {"success", "n", "success_rate", "wilson_95",
                                             "per_task"}
    ovs = rep["oracle_vs_symbolic"]
    assert set(ovs) >= {"confusion", "accuracy", "precision", "recall", "f1",
                        "localization_accuracy"}
    c = ovs["confusion"]
    assert c["tp"] + c["fp"] + c["tn"] + c["fn"] == 2
    md = CliRunner().invoke(app, ["campaign", "report", str(out), "--format", "md"])
    assert md.exit_code == 0 and "| expert |" in md.stdout
    page = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["campaign", "report", str(out), "-o", str(page)])
    assert res.exit_code == 0, res.output
    parsed = _Tags()
    parsed.feed(page.read_text())
    # the success bars and a timeline per episode (two); no flow without orchestrated runs
    assert parsed.tags["svg"] == 3 and parsed.tags["table"] >= 3
    assert not parsed.external, parsed.external  # self-contained: nothing fetched


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith(("data:", "#")):
                self.external.append(v)


def _rows(out: Path) -> list[tuple[str, int, str | None]]:
    with sqlite3.connect(out / STORE_FILE) as db:
        return sorted(db.execute("SELECT id, success, error FROM episodes"))


def test_a_killed_campaign_resumes_without_duplicates_or_losses(tmp_path: Path) -> None:
    # 6 episodes (3 seeds x 2 faults), killed once 2 are stored: two workers finish at most
    # two more before the kill lands, so some are always left to resume
    path = _tiny(tmp_path, count=3)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "mango.cli.main", "campaign", "run",
                             str(path), "-o", str(out), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (out / STORE_FILE).exists() and len(_rows(out)) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the campaign and its workers, mid-run
    proc.wait()
    before = _rows(out)
    assert 2 <= len(before) < 6
    summary = run_campaign(load_campaign(path), out)
    assert summary.skipped == len(before) and summary.ran == 6 - len(before)
    after = _rows(out)
    assert len(after) == len({r[0] for r in after}) == 6
    assert set(before) <= set(after)  # what finished before the kill is kept as it was


def test_workers_give_the_results_of_one_process(tmp_path: Path) -> None:
    path = _tiny(tmp_path, count=2)
    run_campaign(load_campaign(path), tmp_path / "one", workers=1)
    run_campaign(load_campaign(path), tmp_path / "two", workers=2)

    def outcomes(out: Path) -> dict[str, tuple]:
        with Store(out / STORE_FILE) as s:
            return {r["episode"]: (r["success"], r["error"], r["labels"]["expected_verdict"],
                                   r["labels"]["failed_step"]) for r in s.results()}

    assert outcomes(tmp_path / "one") == outcomes(tmp_path / "two")


def test_a_folder_holds_one_campaign(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_campaign(load_campaign(_tiny(tmp_path, count=1)), out)
    other = _write(tmp_path, _tiny(tmp_path, count=1, name="other").read_text(), "o.yaml")
    with pytest.raises(InputError, match="another campaign"):
        run_campaign(load_campaign(other), out)
    res = CliRunner().invoke(app, ["campaign", "report", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "not a campaign output folder" in res.stderr


def test_orchestrated_systems_run_beside_the_policy_and_are_compared(tmp_path: Path) -> None:
    path = _write(tmp_path, """name: modes
systems:
  - {name: vla, kind: policy}
  - {name: full-oracle, kind: task, mode: full, monitor: oracle, decider: offline}
tasks: [libero10_stove_moka]
seeds: {start: 0, count: 1}
faults: [drop@0.5]
""")
    out = tmp_path / "out"
    summary = run_campaign(load_campaign(path), out)
    assert (summary.ran, summary.errors) == (2, 0)
    with Store(out / STORE_FILE) as s:
        task = next(r for r in s.results() if r["system"] == "full-oracle")
    assert task["orchestrated"]["decisions"] >= 0 and "events" in task["orchestrated"]
    assert task["verdict"]["verdict"] in ("pass", "fail") and task["labels"] is None
    assert (out / "episodes" / task["episode"] / "trace.jsonl").stat().st_size > 0
    rep = json.loads(CliRunner().invoke(app, ["campaign", "report", str(out), "--format",
                                              "json"]).stdout)
    assert set(rep["systems"]) == {"vla", "full-oracle"}
    (cmp,) = rep["comparisons"]
    assert {cmp["a"], cmp["b"]} == {"vla", "full-oracle"} and 0 <= cmp["p"] <= 1
    # a decider the orchestrator does not know is refused before anything runs, naming the field
    bad = _write(tmp_path, path.read_text().replace("decider: offline", "decider: rules"),
                 "bad.yaml")
    with pytest.raises(InputError) as err:
        load_campaign(bad)
    assert err.value.field == "systems[1].task.decider" and "'offline'" in err.value.message


DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_model_decider_system_runs_its_backend(tmp_path: Path) -> None:
    """A task system's backend, model and options reach its episodes: the recorded local-model
    run (test/data/orchestrator/local_qwen05b, soup_sauce_basket seed 0, drop@0.5) replays
    through a campaign, its replan decided by the model."""
    path = _write(tmp_path, f"""name: local
systems:
  - name: full-local
    kind: task
    mode: full
    monitor: oracle
    decider: local
    backend: replay:{DATA / "orchestrator" / "local_qwen05b"}
tasks: [libero10_soup_sauce_basket]
seeds: {{start: 0, count: 1}}
faults: [drop@0.5]
""")
    out = tmp_path / "out"
    summary = run_campaign(load_campaign(path), out)
    assert (summary.ran, summary.errors) == (1, 0)
    (ep,) = (out / "episodes").iterdir()
    decisions = [json.loads(ln) for ln in (ep / "record.jsonl").read_text().splitlines()]
    models = {d.get("model") for d in decisions if d.get("record") == "decision"}
    assert "qwen2.5-coder-0.5b-instruct-q4_k_m" in models, models


@pytest.mark.parametrize(("extra", "field", "says"), [
    ("decider: offline\n    model: qwen1.5b", "systems[0].model", "is for a vlm or local"),
    ("decider: local\n    model: qwen1.5b\n    options: {timeout_s: 30}", None, None),
    ("decider: offline\n    options: {base_url: 'http://127.0.0.1:1/v1'}", "systems[0].options",
     "is for a vlm or local"),
    ("decider: vlm\n    backend: gpt", "systems[0].backend", "unknown backend 'gpt'"),
    ("decider: vlm\n    options: {timeout_s: [1]}", "systems[0].task.options.timeout_s",
     "a string, number or boolean (got list)"),
])
def test_bad_model_settings_are_refused_naming_the_field(tmp_path: Path, extra: str,
                                                        field: str | None, says: str | None
                                                        ) -> None:
    path = _write(tmp_path, f"""name: bad
systems:
  - name: t
    kind: task
    {extra}
tasks: [libero10_stove_moka]
seeds: {{start: 0, count: 1}}
""")
    if field is None:  # a scalar option is taken as its text, as --opt KEY=VALUE gives it
        (system,) = load_campaign(path).spec.systems
        assert system.config().backend_opts == (("timeout_s", "30"),)  # type: ignore[union-attr]
        return
    with pytest.raises(InputError) as err:
        load_campaign(path)
    assert err.value.field == field and says in err.value.message, (err.value.field,
                                                                    err.value.message)
