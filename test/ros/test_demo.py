"""The main job end to end: sim + expert + live oracle node + bag, with and without a fault."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mango.oracle import check_trace, read_trace

REPO = Path(__file__).resolve().parents[2]


def _demo(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "mango.cli.main", "demo", "--speed", "0", "--out", str(out),
         *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads((out / "report.json").read_text())


@pytest.mark.parametrize(("scene", "fault"), [
    ("libero10_stove_moka", ""),
    ("libero10_soup_sauce_basket", "drop@0.5"),
])
def test_demo_judges_the_run_live(tmp_path: Path, scene: str, fault: str) -> None:
    args = ["--scene", scene] + (["--fault", fault] if fault else [])
    proc, result = _demo(tmp_path, *args)
    report, truth = result["report"], result["ground_truth"]
    if fault:
        assert report["verdict"] == "fail"
        assert truth["failed_step"] is not None
        assert report["failed_step"] == truth["failed_step"]
    else:
        assert report["verdict"] == "pass" and truth["failed_step"] is None
    assert "oracle agrees" in proc.stdout
    # The live verdict is what the engine says about the recorded world states.
    trace = tmp_path / "trace.jsonl"
    subprocess.run([sys.executable, "-m", "mango.cli.main", "bag", "export",
                    result["bag"], "-o", str(trace)], check=True, capture_output=True)
    oracle = REPO / "config" / "oracles" / f"{scene}.json"
    assert check_trace(oracle, read_trace(trace)).to_json() == report
