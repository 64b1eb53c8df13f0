"""Function library: spec §4 JSON export/load, argument kinds, thresholds, facts-only predicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.errors import InputError
from mango.oracle import (
    EvaluationError,
    FunctionLibrary,
    StepTracker,
    Thresholds,
    WorldState,
    check_trace,
)

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = (
    "in",
    "on",
    "up",
    "grasped",
    "incontact",
    "open",
    "close",
    "turnon",
    "turnoff",
    "left_of",
    "right_of",
    "near",
)


def test_default_library_covers_the_spec_predicates() -> None:
    lib = FunctionLibrary.default()
    for name in REQUIRED:
        spec = lib.get(name)
        assert spec is not None and spec.implementation is not None
        assert spec.description
    assert lib.get("in").arity == 2 and lib.get("up").arity == 1


def test_export_is_spec_form_and_round_trips(tmp_path: Path) -> None:
    lib = FunctionLibrary.default(Thresholds(up_height=0.05))
    data = lib.to_json()
    entry = data["predicates"]["in"]
    assert entry["predicate"] == "in"
    assert entry["input_arguments"] == ["target_object", "container_object"]
    assert entry["type"] == "BinaryAtomic"
    assert data["predicates"]["up"]["type"] == "UnaryAtomic"
    path = tmp_path / "lib.json"
    lib.dump(path)
    again = FunctionLibrary.load(path)
    assert again.to_json() == data
    assert again.thresholds.up_height == 0.05
    assert again.get("near").implementation is not None


def test_committed_default_library_matches_the_code() -> None:
    committed = json.loads((ROOT / "config/functions/default.json").read_text())
    assert committed == FunctionLibrary.default().to_json()


def test_minimal_spec_entry_infers_kinds_from_argument_names() -> None:
    lib = FunctionLibrary.from_json(
        {
            "predicates": {
                "stacked": {
                    "predicate": "stacked",
                    "description": "a on b",
                    "input_arguments": ["target_object", "base_object"],
                    "type": "BinaryAtomic",
                },
                "inside": {"input_arguments": ["target_object", "container_object"]},
                "lit": {"input_arguments": ["thing"]},
            }
        }
    )
    assert lib.get("stacked").argument_kinds == (("object",), ("object",))
    assert lib.get("inside").argument_kinds[1] == ("region", "object", "fixture")
    assert lib.get("lit").argument_kinds == (None,)
    assert lib.get("stacked").implementation is None


def test_declared_predicate_without_implementation_is_decided_by_facts() -> None:
    lib = FunctionLibrary.from_json(
        {"predicates": {"stacked": {"input_arguments": ["target_object", "base_object"]}}}
    )
    oracle = {"plan": [{"action_id": "stack", "monitoring": [{"handle_as": "stacked(a, b)"}]}]}
    states = [
        WorldState(t=0, facts={"stacked(a,b)": False}),
        WorldState(t=1, facts={"stacked(a, b)": True}),
    ]
    assert check_trace(oracle, states, lib).verdict == "pass"
    with pytest.raises(EvaluationError, match="no fact for stacked"):
        check_trace(oracle, [WorldState(t=0)], lib)


def test_library_restricts_the_predicates_available() -> None:
    lib = FunctionLibrary.from_json({"predicates": {"up": {"input_arguments": ["target_object"]}}})
    with pytest.raises(InputError, match=r"unknown predicate 'in'.*known: up"):
        StepTracker({"plan": [{"action_id": "x", "monitoring": [{"handle_as": "in(a, b)"}]}]}, lib)


def test_a_libero_predicate_outside_its_library_names_the_library() -> None:
    """An oracle in LIBERO's semantics (`mango sim run --scene libero/...`'s, a campaign's on
    LIBERO) checked with the default library: the error says where the predicate is."""
    oracle = {"plan": [{"action_id": "x", "monitoring": [{"handle_as": "libero_on(a, b)"}]}]}
    with pytest.raises(InputError, match=r"unknown predicate 'libero_on'.*"
                       r"--functions config/functions/libero.json"):
        StepTracker(oracle, FunctionLibrary.default())
    lib = FunctionLibrary.load(Path(__file__).parents[2] / "config/functions/libero.json")
    StepTracker(oracle, lib)  # known there
    assert "libero.json" not in FunctionLibrary.default().unknown("hover")


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [
        ([], None, "must be a JSON object"),
        ({}, "predicates", "missing"),
        ({"predicates": {"in": 3}}, "predicates.in", "must be an object"),
        (
            {"predicates": {"in": {"predicate": "on", "input_arguments": ["a", "b"]}}},
            "predicates.in.predicate",
            "keyed",
        ),
        (
            {"predicates": {"in": {"input_arguments": "ab"}}},
            "predicates.in.input_arguments",
            "list of argument names",
        ),
        (
            {"predicates": {"in": {"input_arguments": ["a"]}}},
            "predicates.in.input_arguments",
            "takes 2",
        ),
        (
            {"predicates": {"bad name": {"input_arguments": []}}},
            "predicates.bad name",
            "identifier",
        ),
        (
            {"predicates": {"p": {"input_arguments": ["a"], "argument_kinds": [["planet"]]}}},
            "predicates.p.argument_kinds[0]",
            "kinds",
        ),
        (
            {"predicates": {"p": {"input_arguments": ["a"], "argument_kinds": []}}},
            "predicates.p.argument_kinds",
            "one entry per argument",
        ),
        (
            {"predicates": {}, "thresholds": {"up_hieght": 0.1}},
            "thresholds.up_hieght",
            "unknown threshold",
        ),
        (
            {"predicates": {}, "thresholds": {"up_height": "high"}},
            "thresholds.up_height",
            "finite number",
        ),
        (
            {"predicates": {}, "thresholds": {"left_axis": [0, 0, 0]}},
            "thresholds.left_axis",
            "non-zero",
        ),
    ],
)
def test_bad_libraries_name_the_field(data: object, field: str | None, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        FunctionLibrary.from_json(data, file="lib.json")
    assert info.value.field == field
    assert info.value.file == "lib.json"
    assert fragment in str(info.value)


def test_load_reports_json_position(tmp_path: Path) -> None:
    p = tmp_path / "lib.json"
    p.write_text('{"predicates": {\n  "in": }\n}')
    with pytest.raises(InputError) as info:
        FunctionLibrary.load(p)
    assert (info.value.line, info.value.column) == (2, 9)
    with pytest.raises(InputError, match="cannot read"):
        FunctionLibrary.load(tmp_path / "missing.json")
