"""Oracle JSON models (spec §2): loading from path/text/dict, paths, errors naming fields."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from mango.errors import InputError
from mango.oracle import FineGrainedOracle, load_oracle, plan_entries

ROOT = Path(__file__).resolve().parents[2]
SPEC_EXAMPLE = {
    "instruction": "Put both the alphabet soup and the tomato sauce in the basket",
    "execution_mode": "any_order",
    "plan": [
        {
            "step": 1,
            "execution_mode": "sequential",
            "actions": [
                {
                    "action_id": "pick_up",
                    "parameters": {"obj_id": "alphabet_soup_1"},
                    "monitoring": [
                        {
                            "oracle_id": "pick_up",
                            "handle_as": "up(alphabet_soup_1) and grasped(alphabet_soup_1)",
                        }
                    ],
                },
                {
                    "action_id": "place_in",
                    "parameters": {"obj_id": "alphabet_soup_1", "target_id": "basket_1"},
                    "monitoring": [
                        {
                            "oracle_id": "place_in",
                            "handle_as": "in(alphabet_soup_1, basket_1_contain_region)",
                        }
                    ],
                },
            ],
        },
        {
            "step": 2,
            "execution_mode": "sequential",
            "actions": [
                {
                    "action_id": "pick_up",
                    "parameters": {"obj_id": "tomato_sauce_1"},
                    "monitoring": [
                        {"oracle_id": "pick_up", "handle_as": "grasped(tomato_sauce_1)"}
                    ],
                }
            ],
        },
    ],
    "author": "someone",
}


def test_load_from_dict_text_and_path(tmp_path: Path) -> None:
    a = load_oracle(SPEC_EXAMPLE)
    b = load_oracle(json.dumps(SPEC_EXAMPLE))
    p = tmp_path / "o.json"
    p.write_text(json.dumps(SPEC_EXAMPLE))
    c = load_oracle(p)
    d = load_oracle(str(p))
    assert a == b == c == d
    assert isinstance(a, FineGrainedOracle)
    assert [(path, act.action_id) for path, act in a.actions()] == [
        ("1.1", "pick_up"),
        ("1.2", "place_in"),
        ("2.1", "pick_up"),
    ]


def test_to_json_keeps_unknown_fields_and_round_trips() -> None:
    o = load_oracle(SPEC_EXAMPLE)
    data = o.to_json()
    assert data["author"] == "someone"
    assert load_oracle(data) == o
    assert data["plan"][0]["actions"][0]["parameters"] == {"obj_id": "alphabet_soup_1"}


def test_chain_ends_and_predecessors() -> None:
    entries = plan_entries(load_oracle(SPEC_EXAMPLE))
    assert [e.chain_end for e in entries] == [False, True, True]
    assert [e.predecessors for e in entries] == [(), (0,), ()]
    assert entries[1].field == "plan[0].actions[1]"


@pytest.mark.parametrize(
    ("mutate", "field", "fragment"),
    [
        (lambda d: d.update(plan=[]), "plan", "at least 1"),
        (lambda d: d.pop("plan"), "plan", "required"),
        (lambda d: d.update(execution_mode="parallel"), "execution_mode", "sequential"),
        (lambda d: d["plan"][0].update(execution_mode="random"), "plan[0].execution_mode", ""),
        (
            lambda d: d["plan"][0]["actions"][1].update(monitoring=[]),
            "plan[0].actions[1].monitoring",
            "at least 1",
        ),
        (
            lambda d: d["plan"][0]["actions"][1]["monitoring"][0].pop("handle_as"),
            "plan[0].actions[1].monitoring[0].handle_as",
            "required",
        ),
        (
            lambda d: d["plan"][1]["actions"][0]["monitoring"][0].update(handle_as=7),
            "plan[1].actions[0].monitoring[0].handle_as",
            "string",
        ),
        (lambda d: d["plan"][1].pop("actions"), "plan[1]", "exactly one of"),
        (lambda d: d["plan"][1].update(steps=[]), "plan[1]", "exactly one of"),
        (lambda d: d["plan"].append("step three"), "plan[2]", ""),
    ],
)
def test_errors_name_the_field(mutate: Callable[[dict], object], field: str, fragment: str) -> None:
    data = json.loads(json.dumps(SPEC_EXAMPLE))
    mutate(data)
    with pytest.raises(InputError) as info:
        load_oracle(data, file="o.json")
    assert info.value.field == field
    assert info.value.file == "o.json"
    assert fragment in str(info.value)


def test_json_syntax_errors_name_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "o.json"
    p.write_text('{\n  "plan": [,]\n}')
    with pytest.raises(InputError) as info:
        load_oracle(p)
    assert (info.value.file, info.value.line, info.value.column) == (str(p), 2, 12)
    with pytest.raises(InputError, match="cannot read oracle"):
        load_oracle(tmp_path / "nope.json")
    with pytest.raises(InputError, match="must be a JSON object"):
        load_oracle("[1, 2]")


def test_goal_field() -> None:
    o = load_oracle(json.loads((ROOT / "config/oracles/libero10_stove_moka.json").read_text()))
    assert o.goal == "turnon(flat_stove_1) and on(moka_pot_1, flat_stove_1_cook_region)"
    assert load_oracle(SPEC_EXAMPLE).goal is None
