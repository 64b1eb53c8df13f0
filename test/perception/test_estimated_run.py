"""`mango sim run --world-state estimated` per the binding contract (/work/shared/spec/
commands.md §1): the trace is the estimator's, made from the rendered cameras and the joint
states only; the labels file is the same as for `truth`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.oracle.tracker import check_trace
from mango.oracle.world_state import read_trace

runner = CliRunner()
SCENE = "libero10_book_caddy"


def _run(tmp: Path, name: str, *extra: str) -> tuple[list, dict]:
    trace = tmp / f"{name}.jsonl"
    res = runner.invoke(app, ["sim", "run", "--scene", SCENE, "--seed", "1", "--trace",
                              str(trace), "-q", *extra])
    assert res.exit_code == 0, res.output
    return list(read_trace(trace)), json.loads(trace.with_suffix(".labels.json").read_text())


@pytest.mark.slow
def test_estimated_trace_follows_the_physics_and_judges_alike(tmp_path: Path) -> None:
    truth, labels_t = _run(tmp_path, "truth", "--world-state", "truth")
    est, labels_e = _run(tmp_path, "est", "--world-state", "estimated")
    assert labels_e == labels_t
    assert [s.t for s in est] == [s.t for s in truth]
    # not the physics copied: the estimate differs from it, by millimetres
    errors = [float(np.linalg.norm(np.subtract(a.objects["black_book_1"].position,
                                               b.objects["black_book_1"].position)))
              for a, b in zip(truth, est, strict=True)]
    assert 0 < np.median(errors) < 0.01
    oracle = Path("config/oracles") / f"{SCENE}.json"
    on_truth, on_est = check_trace(oracle, truth), check_trace(oracle, est)
    assert on_truth.verdict == "pass"
    assert (on_est.verdict, on_est.failed_step) == (on_truth.verdict, on_truth.failed_step)


def test_bad_world_state_options_exit_2_naming_them(tmp_path: Path) -> None:
    for args, says in [
        (["--world-state", "guessed"], "--world-state must be truth or estimated"),
        (["--markers", str(tmp_path / "m.yaml")], "--markers needs --world-state estimated"),
        (["--world-state", "estimated", "--markers", str(tmp_path / "none.yaml")],
         "none.yaml"),
    ]:
        res = runner.invoke(app, ["sim", "run", "--scene", SCENE, "--trace",
                                  str(tmp_path / "t.jsonl"), *args])
        assert res.exit_code == 2, res.output
        assert says in res.output and "Traceback" not in res.output
