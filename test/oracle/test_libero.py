"""LIBERO-10 oracles on scripted geometric traces: expected verdicts and failed steps."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from mango.oracle import SymbolicOracle, check_trace, load_oracle, read_trace

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "test/data/oracle/libero"
EXPECTED = json.loads((DATA / "expected.json").read_text())
SLUGS = [
    "soup_sauce_basket",
    "cheese_butter_basket",
    "stove_moka",
    "bowl_drawer",
    "mugs_plates",
    "book_caddy",
    "mug_pudding_plate",
    "soup_cheese_basket",
    "two_moka_stove",
    "mug_microwave",
]


def test_all_ten_oracles_exist_with_their_instructions() -> None:
    for i, slug in enumerate(SLUGS):
        data = json.loads((ROOT / f"config/oracles/libero10_{slug}.json").read_text())
        assert data["benchmark"] == {"suite": "libero_10", "task_index": i}
        assert load_oracle(data).actions()


def test_every_task_has_pass_and_early_mid_late_failures() -> None:
    tasks = {Path(e["oracle"]).stem.removeprefix("libero10_") for e in EXPECTED.values()}
    assert len(tasks) >= 4
    for task in tasks:
        for scenario in ("pass", "fail_early", "fail_mid", "fail_late"):
            assert f"{task}_{scenario}.jsonl" in EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_trace_verdict_failed_step_and_events(name: str) -> None:
    exp = EXPECTED[name]
    report = check_trace(ROOT / exp["oracle"], read_trace(DATA / name))
    assert report.verdict == exp["verdict"]
    assert report.failed_step == exp["failed_step"]
    assert [[e.kind, e.path] for e in report.events] == exp["events"]


def test_failures_localize_progressively_later() -> None:
    for task in ("soup_sauce_basket", "stove_moka", "bowl_drawer", "mug_microwave"):
        steps = [
            EXPECTED[f"{task}_{s}.jsonl"]["failed_step"]
            for s in ("fail_early", "fail_mid", "fail_late")
        ]
        keys = [tuple(int(x) for x in s.split(".")) for s in steps]
        assert keys == sorted(keys) and len(set(keys)) == 3, task


@pytest.mark.parametrize(
    ("name", "symbolic"),
    [
        ("soup_sauce_basket_pass.jsonl", "pass"),
        ("soup_sauce_basket_regression.jsonl", "fail"),  # the soup ended outside the basket
        ("soup_sauce_basket_restored.jsonl", "pass"),  # ... and was put back
        ("bowl_drawer_out_of_order.jsonl", "fail"),
        ("mug_microwave_fail_late.jsonl", "fail"),
        ("stove_moka_pass.jsonl", "pass"),
    ],
)
def test_symbolic_goal_on_the_same_traces(name: str, symbolic: str) -> None:
    oracle = load_oracle(ROOT / EXPECTED[name]["oracle"])
    rep = SymbolicOracle(oracle.goal).check(read_trace(DATA / name))
    assert rep.verdict == symbolic


def test_generator_reproduces_the_committed_traces(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_libero_traces", DATA.parent / "make_libero_traces.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(module)
        written = module.build(tmp_path)
    finally:
        del sys.modules[spec.name]
    for path in written:
        assert path.read_text() == (DATA / path.name).read_text(), path.name
