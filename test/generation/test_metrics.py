"""Validity, executability and similarity metrics."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from mango.generation.metrics import (
    canonical_text,
    executability,
    score_oracle,
    similarity,
    summarize,
    validity,
)

ROOT = Path(__file__).resolve().parents[2]
TRUTH = json.loads((ROOT / "config/oracles/libero10_mug_microwave.json").read_text())


def test_similarity_identity_and_canonical_form():
    assert similarity(TRUTH, TRUTH) == 1.0
    other = copy.deepcopy(TRUTH)
    other.pop("goal", None)
    other["notes"] = "extra fields do not count"
    mon = other["plan"][1]["actions"][0]["monitoring"][0]
    mon["handle_as"] = "  close( microwave_1 )"
    assert similarity(other, TRUTH) == 1.0
    assert canonical_text(other) == canonical_text(TRUTH)


def test_similarity_drops_with_edits():
    changed = copy.deepcopy(TRUTH)
    changed["plan"][0]["actions"][1]["monitoring"][0]["handle_as"] = "up(white_yellow_mug_1)"
    s1 = similarity(changed, TRUTH)
    changed["plan"] = changed["plan"][:1]
    s2 = similarity(changed, TRUTH)
    assert 0.0 <= s2 < s1 < 1.0
    assert similarity({"instruction": "x", "plan": []}, TRUTH) < 0.1


def test_validity():
    ok, problems = validity(TRUTH)
    assert ok and not problems
    bad = copy.deepcopy(TRUTH)
    bad["plan"][0]["actions"][0]["monitoring"][0]["handle_as"] = "hover(white_yellow_mug_1)"
    ok, problems = validity(bad)
    assert not ok and "unknown predicate 'hover'" in problems[0] and "step 1.1" in problems[0]
    bad["plan"][0]["actions"][0]["monitoring"][0]["handle_as"] = "in(a,"
    ok, problems = validity(bad)
    assert not ok
    ok, problems = validity({"instruction": "x"})
    assert not ok and problems[0].startswith("structure")


def test_executability_needs_the_scene(libero_scenes):
    scene = libero_scenes.task_objects[9]
    ok, problems = executability(TRUTH, scene)
    assert ok, problems
    bad = copy.deepcopy(TRUTH)
    bad["plan"][1]["actions"][0]["monitoring"][0]["handle_as"] = "close(microwave_9)"
    ok, problems = executability(bad, scene)
    assert not ok and any("microwave_9" in p for p in problems)
    # a kind error: the mug is an object, turnon() takes a device or fixture
    bad["plan"][1]["actions"][0]["monitoring"][0]["handle_as"] = "turnon(white_yellow_mug_1)"
    ok, problems = executability(bad, scene)
    assert not ok and any("argument_kind" in p for p in problems)


def test_score_and_summary(libero_scenes):
    s = score_oracle(TRUTH, libero_scenes.task_objects[9], TRUTH)
    assert (s.valid, s.executable, s.similarity) == (True, True, 1.0)
    s2 = score_oracle({"instruction": "x", "plan": []}, None, TRUTH)
    assert not s2.valid and s2.executable is None
    summary = summarize([s, s2])
    assert summary["validity"] == 0.5 and summary["executability"] == 1.0
    assert summary["min_similarity"] < 0.1
