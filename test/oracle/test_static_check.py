"""Static check ("execution reliability"): every problem kind with its step path, then a dry run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.errors import InputError
from mango.oracle import (
    FunctionLibrary,
    SceneEntities,
    WorldState,
    load_scene,
    read_trace,
    static_check,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "test/data/oracle"


def oracle(*exprs: str, goal: str | None = None) -> dict:
    actions = [
        {"action_id": f"a{i}", "monitoring": [{"handle_as": e}]} for i, e in enumerate(exprs)
    ]
    o: dict = {
        "execution_mode": "sequential",
        "plan": [{"execution_mode": "sequential", "actions": actions}],
    }
    if goal is not None:
        o["goal"] = goal
    return o


SCENE = {
    "soup": "object",
    "basket_region": "region",
    "table": "surface",
    "stove": "device",
    "drawer": "joint",
    "cabinet": "fixture",
}


def kinds(problems: list) -> list[tuple[str, str]]:
    return [(p.path, p.kind) for p in problems]


def test_clean_oracle_has_no_problems() -> None:
    o = oracle(
        "grasped(soup) and up(soup)",
        "in(soup, basket_region)",
        "on(soup, table)",
        "turnon(stove)",
        "close(drawer) and open(cabinet)",
        "near(robot_hand, soup)",
    )
    assert static_check(o, FunctionLibrary.default(), SCENE) == []


def test_each_problem_kind_with_its_step_path() -> None:
    o = oracle(
        "up(soup) and",  # 1.1 parse error
        "levitate(soup)",  # 1.2 unknown predicate
        "in(soup)",  # 1.3 arity
        "in(soup, table)",  # 1.4 argument kind: a surface is not a container
        "grasped(spoon)",  # 1.5 ungrounded
        "on(soup, stove) and turnon(soup)",  # 1.6 argument kind on the 2nd atom only
        "grasped(soup) and in(soup, soup)",  # 1.7 a thing related to itself
        goal="in(soup, basket_region) and up(ghost)",
    )
    problems = static_check(o, FunctionLibrary.default(), SCENE)
    assert kinds(problems) == [
        ("1.1", "parse_error"),
        ("1.2", "unknown_predicate"),
        ("1.3", "arity"),
        ("1.4", "argument_kind"),
        ("1.5", "ungrounded"),
        ("1.6", "argument_kind"),
        ("1.7", "self_relation"),
        ("", "ungrounded"),
    ]
    assert problems[0].field == "plan[0].actions[0].monitoring[0].handle_as"
    assert "column 13" in problems[0].message
    assert problems[3].message.startswith("argument 2 of in(soup, table)")
    assert "'spoon'" in problems[4].message
    assert problems[5].action_id == "a5"
    assert problems[6].message == "in(soup, soup) relates 'soup' to itself"
    assert problems[7].field == "goal"
    assert all(isinstance(p.to_json(), dict) for p in problems)


def test_kinds_are_only_checked_where_known() -> None:
    o = oracle("in(soup, table)")
    assert static_check(o, None, ["soup", "table"]) == []  # plain id list: no kinds
    assert kinds(static_check(o, None, SCENE)) == [("1.1", "argument_kind")]


def test_without_scene_only_language_problems() -> None:
    o = oracle("in(soup, table)", "up(a, b)")
    assert kinds(static_check(o)) == [("1.2", "arity")]


def test_dry_run_on_a_sample_state() -> None:
    state = WorldState.model_validate(
        {
            "t": 0,
            "objects": {
                "soup": {"position": [0, 0, 1], "size": [0.1, 0.1, 0.1]},
                "basket_region": {"position": [0, 0, 1], "kind": "region"},
            },
            "devices": {"stove": {"on": False}},
        }
    )
    o = oracle("in(soup, basket_region)", "turnon(stove)", "open(stove)")
    # scene says the stove is a fixture (so open() is fine by kind), but it has no joint
    problems = static_check(
        o, None, {"soup": "object", "basket_region": "region", "stove": "fixture"}, state
    )
    assert kinds(problems) == [("1.3", "dry_run")]
    assert "unknown joint 'stove'" in problems[0].message
    # the sample state alone grounds the check
    assert kinds(static_check(oracle("up(spoon)"), None, None, state)) == [("1.1", "ungrounded")]


def test_robot_parts_are_always_grounded() -> None:
    o = oracle("incontact(soup, robot_gripper) and near(robot_hand, soup)")
    assert static_check(o, None, SCENE) == []


def test_scene_entities_forms() -> None:
    s = SceneEntities.from_task_objects(
        {
            "task_objects": [
                {
                    "id": "put soup in basket",
                    "objects": ["soup"],
                    "states": ["soup", "basket_region"],
                    "kinds": {"basket_region": "region", "soup": ["object"]},
                },
                {"id": "other", "objects": [], "states": ["x"]},
            ]
        },
        instruction="Put  soup in basket",
    )
    assert "soup" in s and "robot_hand" in s and "x" not in s
    assert s.kinds_of("basket_region") == {"region"}
    with pytest.raises(InputError, match="none has the id"):
        SceneEntities.from_task_objects({"task_objects": [{"id": "a"}, {"id": "b"}]}, "c")
    with pytest.raises(InputError) as info:
        SceneEntities.from_task_objects({"task_objects": [{"states": "soup"}]}, file="s.json")
    assert info.value.field == "task_objects[0].states"


def test_load_scene_from_task_objects_and_from_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "scene.json"
    p.write_text(
        json.dumps({"task_objects": [{"id": "x", "objects": ["soup"], "states": ["soup"]}]})
    )
    scene, sample = load_scene(p)
    assert "soup" in scene and sample is None
    trace = DATA / "libero/bowl_drawer_pass.jsonl"
    scene, sample = load_scene(trace)
    assert sample is not None and sample.t == 0.0
    assert scene.kinds_of("white_cabinet_1_bottom_region") == {"region", "joint"}
    bad = tmp_path / "bad.json"
    bad.write_text('{"objects": {}}')
    with pytest.raises(InputError, match="a scene must be"):
        load_scene(bad)


@pytest.mark.parametrize("path", sorted((ROOT / "config/oracles").glob("libero10_*.json")))
def test_libero_oracles_are_clean_against_the_libero_entities(path: Path) -> None:
    data = json.loads(path.read_text())
    ids = {
        "alphabet_soup_1",
        "tomato_sauce_1",
        "cream_cheese_1",
        "butter_1",
        "moka_pot_1",
        "moka_pot_2",
        "akita_black_bowl_1",
        "porcelain_mug_1",
        "white_yellow_mug_1",
        "plate_1",
        "plate_2",
        "black_book_1",
        "chocolate_pudding_1",
        "basket_1",
        "main_table",
    }
    scene = {i: "object" for i in ids} | {
        "main_table": "surface",
        "flat_stove_1": "device",
        "white_cabinet_1": "fixture",
        "microwave_1": ["fixture", "joint"],
        "desk_caddy_1": "fixture",
        "basket_1_contain_region": "region",
        "flat_stove_1_cook_region": "region",
        "white_cabinet_1_bottom_region": ["region", "joint"],
        "microwave_1_heating_region": "region",
        "desk_caddy_1_back_contain_region": "region",
        "living_room_table_plate_right_region": "region",
    }
    assert static_check(data, FunctionLibrary.default(), scene) == []
    assert data["goal"]


@pytest.mark.parametrize(
    "name", ["soup_sauce_basket", "stove_moka", "bowl_drawer", "mug_microwave"]
)
def test_libero_oracles_dry_run_on_their_traces(name: str) -> None:
    state = read_trace(DATA / f"libero/{name}_pass.jsonl")[0]
    assert static_check(ROOT / f"config/oracles/libero10_{name}.json", None, None, state) == []
