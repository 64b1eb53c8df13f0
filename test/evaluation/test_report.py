"""The campaign report: step timelines of selected episodes, the failure -> recovery flow,
all plots inline — checked by parsing and in a real headless Chromium (no console errors or
exceptions, every figure laid out, a screenshot that is not blank)."""

from __future__ import annotations

import io
import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.browser import load_page
from typer.testing import CliRunner

from mango.cli.main import app
from mango.evaluation.campaign import load_campaign
from mango.evaluation.metrics import recovery_flow
from mango.evaluation.runner import STORE_FILE, run_campaign
from mango.evaluation.store import Store

HANDWRITTEN = Path(__file__).resolve().parents[2] / "config/oracles/libero10_stove_moka.json"
FIGURES_JS = ("Array.from(document.querySelectorAll('figure svg')).map(s => {"
              "const r = s.getBoundingClientRect(); return [r.width, r.height]; })")


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A policy and an orchestrated system on a drop that the orchestrator recovers from."""
    tmp = tmp_path_factory.mktemp("report")
    path = tmp / "c.yaml"
    path.write_text("""name: report
systems:
  - {name: vla, kind: policy}
  - {name: full-oracle, kind: task, mode: full, monitor: oracle, decider: offline}
tasks: [libero10_stove_moka]
seeds: {start: 0, count: 1}
faults: [none, drop@0.3]
""")
    out = tmp / "out"
    summary = run_campaign(load_campaign(path), out)
    assert (summary.ran, summary.errors) == (4, 0)
    return out


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.external: list[str] = []
        self.text: list[str] = []
        self.figures: list[str] = []  # class of each <figure>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith(("data:", "#")):
                self.external.append(v)
        if tag == "figure":
            self.figures.append(dict(attrs).get("class") or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_orchestrated_episode_stores_its_timeline_and_the_flow_counts_it(
        campaign_dir: Path) -> None:
    with Store(campaign_dir / STORE_FILE) as s:
        results = {r["episode"]: r for r in s.results()}
    task = results["full-oracle__libero10_stove_moka__s0__drop-at-0.3"]
    orch = task["orchestrated"]
    (spell,) = orch["spells"]
    assert spell["kind"] == "object_regression" and spell["recovered"]
    tools = [x for x in orch["timeline"] if x["kind"] == "tool"]
    assert tools and all(x["end"] >= x["start"] for x in tools)
    assert any(x["status"] == "interrupted" for x in tools)  # the drop stopped the VLA
    recovery = [x for x in orch["timeline"] if x["kind"] == "decision"
                and x["phase"] == "recovery"]
    assert recovery and spell["start_t"] <= recovery[0]["t"] <= spell["end_t"]
    record = campaign_dir / "episodes" / task["episode"] / "record.jsonl"
    first = json.loads(record.read_text().splitlines()[0])
    assert first["record"] == "plan"
    flow = recovery_flow(list(results.values()))
    assert flow == [{"system": "full-oracle", "failure": "object_regression",
                     "decision": recovery[0]["action"], "outcome": "recovered", "count": 1}]


def test_the_html_report_draws_timelines_and_the_flow_inline(campaign_dir: Path,
                                                             tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["campaign", "report", str(campaign_dir), "-o", str(page),
                                   "--timelines", "3"])
    assert res.exit_code == 0, res.output
    parsed = _Page()
    parsed.feed(page.read_text())
    assert not parsed.external, parsed.external  # nothing fetched
    assert parsed.figures.count("gantt") == 3 and parsed.figures.count("flow") == 1
    text = " ".join(parsed.text)
    # the selection leads with the recovered failure, then each system's next in turn
    assert "full-oracle__libero10_stove_moka__s0__drop-at-0.3" in text
    assert "vla__libero10_stove_moka__s0__drop-at-0.3" in text
    for lane in ("subgoal 1", "decisions", "monitor", "world", "2.3 place_on", "truth"):
        assert lane in text, lane  # SVG text, not pixels
    assert "object_regression" in text and "recovered" in text
    chosen = CliRunner().invoke(app, ["campaign", "report", str(campaign_dir), "--episode",
                                      "vla__libero10_stove_moka__s0__none"])
    assert chosen.exit_code == 0 and chosen.stdout.count('class="gantt"') == 1
    bad = CliRunner().invoke(app, ["campaign", "report", str(campaign_dir), "--episode", "x"])
    assert bad.exit_code == 2 and "--episode: no episode 'x'" in bad.stderr
    md = CliRunner().invoke(app, ["campaign", "report", str(campaign_dir), "--format", "md"])
    assert "## Failure → recovery" in md.stdout and "| full-oracle | object_regression |" in \
        md.stdout


def test_the_html_report_loads_cleanly_in_headless_chromium(campaign_dir: Path,
                                                            tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["campaign", "report", str(campaign_dir), "-o", str(page)])
    assert res.exit_code == 0, res.output
    load = load_page(page, evaluate=FIGURES_JS)
    assert load.errors == []
    sizes = load.evaluated
    assert len(sizes) >= 5 and all(w > 100 and h > 50 for w, h in sizes), sizes
    shot = np.asarray(Image.open(io.BytesIO(load.screenshot)).convert("L"))
    assert shot.shape[0] > 900  # the whole page, past the first screen
    dark = float(np.mean(shot < 200))
    assert dark > 0.01, f"screenshot nearly blank ({dark:.2%} non-white pixels)"


def test_the_browser_check_sees_console_errors_exceptions_and_blank_pages(
        tmp_path: Path) -> None:
    """The check above can fail: a page that logs an error, throws and fetches a missing
    file is reported; an empty page screenshots blank."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><img src="missing.png">'
                   '<script>console.error("boom"); null.x;</script></body></html>')
    errors = " ".join(load_page(bad).errors)
    assert "console.error" in errors and "exception" in errors and "missing.png" in errors
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    shot = np.asarray(Image.open(io.BytesIO(load_page(blank).screenshot)).convert("L"))
    assert shot.min() >= 200


def test_generated_oracles_judge_the_episodes_and_are_tabled(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("""name: generated
systems: [{name: vla, kind: policy}]
tasks: [libero10_stove_moka]
seeds: {start: 0, count: 1}
faults: [drop@0.3]
oracles: generated
""")
    out = tmp_path / "out"
    assert run_campaign(load_campaign(path), out).errors == 0
    oracle = out / "generation" / "oracles" / "libero10_stove_moka.json"
    made = oracle.stat().st_mtime_ns
    with Store(out / STORE_FILE) as s:
        (result,) = s.results()
        table = s.meta("generation")
    # judged and labelled against the generated file, not the scene's hand-written one
    assert result["labels"]["oracle"] == str(oracle.resolve())
    generated = json.loads(oracle.read_text())
    assert generated != json.loads(HANDWRITTEN.read_text())
    assert result["verdict"]["verdict"] == "fail"
    assert result["verdict"]["failed_step"] == result["labels"]["failed_step"]
    (row,) = table["oracles"]
    assert row["task"] == "libero10_stove_moka" and row["valid"] and row["approved"]
    assert 0 < row["similarity"] < 1  # scored against the hand-written oracle
    again = run_campaign(load_campaign(path), out)  # resumed: not generated again
    assert again.skipped == 1 and oracle.stat().st_mtime_ns == made
    page = CliRunner().invoke(app, ["campaign", "report", str(out), "--format", "md"])
    assert "## Generated oracles (offline)" in page.stdout
    assert f"| libero10_stove_moka | yes | {row['iterations']} |" in page.stdout
    html_page = CliRunner().invoke(app, ["campaign", "report", str(out)]).stdout
    assert "Generated oracles" in html_page and "similarity to hand-written" in html_page
