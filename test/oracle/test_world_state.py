"""World-state records and traces (spec §3): validation errors name file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.errors import InputError
from mango.oracle.world_state import (
    JointState,
    WorldState,
    iter_trace_records,
    parse_world_state,
    read_trace,
    write_trace,
)

GOOD = (
    '{"t": 0.05, "objects": {"soup": {"position": [0.1, 0.2, 0.93], "orientation": [1, 0, 0, 0],'
    ' "size": [0.07, 0.07, 0.1], "kind": "object"}}, "joints": {"drawer": {"q": 0.0, "q_open":'
    ' 0.16, "q_closed": 0.0}}, "devices": {"stove": {"on": false}}, "gripper": {"width": 0.08,'
    ' "closed": false}, "contacts": [["soup", "robot_gripper"]], "facts": {"grasped(soup)":'
    ' false}, "future_field": 1}'
)


def test_spec_record_round_trips(tmp_path: Path) -> None:
    state = parse_world_state(json.loads(GOOD))
    assert state.objects["soup"].size == (0.07, 0.07, 0.1)
    assert state.fact("grasped( soup )") is False and state.fact("up(soup)") is None
    path = tmp_path / "t.jsonl"
    assert write_trace(path, [state, state.model_copy(update={"t": 0.1})]) == 2
    again = read_trace(path)
    assert again[0] == state and again[1].t == 0.1


def test_facts_only_trace_and_blank_lines() -> None:
    lines = ['{"t": 0, "facts": {"up(a)": true}}', "", "   ", '{"t": 1}']
    assert [(n, s.t) for n, s in iter_trace_records(lines)] == [(1, 0.0), (4, 1.0)]


@pytest.mark.parametrize(
    ("line", "field", "fragment"),
    [
        ('{"t": 0, "objects": {"soup": {"position": [0, 0]}}}', "objects.soup.position[2]", ""),
        (
            '{"t": 0, "objects": {"soup": {"position": [0, 0, 0], "size": [1, -1, 1]}}}',
            "objects.soup.size",
            "non-negative",
        ),
        (
            '{"t": 0, "objects": {"soup": {"position": [0, 0, 0], "orientation": [1, 1, 0, 0]}}}',
            "objects.soup.orientation",
            "unit quaternion",
        ),
        (
            '{"t": 0, "objects": {"soup": {"position": [0, 0, 0], "kind": "planet"}}}',
            "objects.soup.kind",
            "",
        ),
        (
            '{"t": 0, "joints": {"j": {"q": 0, "q_open": 1, "q_closed": 1}}}',
            "joints.j.q_closed",
            "differ",
        ),
        ('{"t": NaN}', "t", "finite"),
        ('{"objects": {}}', "t", "required"),
        ('{"t": 0, "contacts": [["a"]]}', "contacts[0][1]", ""),
    ],
)
def test_bad_records_name_line_and_field(line: str, field: str, fragment: str) -> None:
    lines = ['{"t": 0}', line]
    with pytest.raises(InputError) as info:
        list(iter_trace_records(lines, file="trace.jsonl"))
    err = info.value
    assert (err.file, err.line, err.field) == ("trace.jsonl", 2, field)
    assert fragment in str(err)


def test_json_errors_and_time_order() -> None:
    with pytest.raises(InputError) as info:
        list(iter_trace_records(['{"t": 0}', '{"t": 1,,}'], file="x.jsonl"))
    assert (info.value.line, info.value.column) == (2, 9)
    with pytest.raises(InputError, match="backwards"):
        list(iter_trace_records(['{"t": 2}', '{"t": 1}']))
    with pytest.raises(InputError, match="must be a JSON object"):
        list(iter_trace_records(["[1, 2]"]))


def test_read_trace_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read trace"):
        read_trace(tmp_path / "none.jsonl")


def test_joint_openness() -> None:
    j = JointState(q=-0.04, q_open=-0.16, q_closed=0.0, open_frac=0.9)
    assert j.openness == pytest.approx(0.25)
    assert WorldState(t=0).to_record() == {
        "t": 0.0,
        "objects": {},
        "joints": {},
        "devices": {},
        "contacts": [],
        "facts": {},
    }
