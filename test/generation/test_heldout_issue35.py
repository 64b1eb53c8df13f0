"""The issue-35 held-out set (test/data/generation/heldout/issue35.yaml) and the development
sets beside it (test/data/generation/dev/) are well formed: each item names a scene that
exists, every goal atom it expects or excludes is one of LIBERO's goal predicates over ids that
scene has, and each set is as large as the issue asks. Scoring the generator on them is
bench/bench_heldout.py --file ..., not a test: the held-out set is kept out of every tuning
loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mango.cli.scenes import scene_file
from mango.oracle.expr import Atom, parse_expression
from mango.yaml_files import read_yaml_mapping

HELDOUT = Path(__file__).resolve().parents[2] / "test" / "data" / "generation" / "heldout"
SET = HELDOUT / "issue35.yaml"
DEV = HELDOUT.parent / "dev"
SETS = [SET, DEV / "issue35_dev.yaml", DEV / "issue35_dev2.yaml", DEV / "issue35_dev3.yaml",
        DEV / "issue35_dev4.yaml"]
# LIBERO's BDDL goal predicates, as the oracle language spells them
LIBERO_GOAL_PREDICATES = {"on", "in", "open", "close", "turnon", "turnoff"}
KINDS = {"coordination", "locative", "phrasal", "preposition", "pronoun", "ordinal", "except",
         "purpose", "paraphrase", "refuse"}


@pytest.fixture(scope="module", params=SETS, ids=lambda p: p.name)
def items(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return read_yaml_mapping(request.param, "held-out set")["items"]


def _scene_ids(scene: str) -> set[str]:
    path = HELDOUT / scene if scene.endswith(".json") else Path(scene)
    if scene.endswith(".json"):
        assert path.is_file(), f"{scene}: no such scene file under {HELDOUT}"
    (task,) = scene_file(path).task_objects
    return set(task.entities())


def _atoms(item: dict[str, Any]) -> list[str]:
    pairs = [atom for pair in item.get("order", []) for atom in pair]
    return [*item.get("expect", []), *item.get("absent", []), *pairs]


def test_the_set_is_large_enough_and_its_ids_unique(items: list[dict[str, Any]]) -> None:
    assert len(items) >= 60
    ids = [i["id"] for i in items]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_item_has_its_fields(items: list[dict[str, Any]]) -> None:
    for item in items:
        where = item.get("id", item)
        for key in ("id", "scene", "kind", "instruction"):
            assert isinstance(item.get(key), str) and item[key].strip(), f"{where}: {key}"
        assert ("expect" in item) != ("refuse" in item), f"{where}: expect or refuse, not both"
        if "refuse" in item:
            assert item["kind"] == "refuse", where
            assert str(item["refuse"]).lower() in item["instruction"].lower(), where
            assert not ({"order", "absent"} & item.keys()), where
            continue
        assert item["expect"], f"{where}: expects no atom"
        for first, then in item.get("order", []):
            assert first in item["expect"] and then in item["expect"], f"{where}: order"
        assert not set(item.get("absent", [])) & set(item["expect"]), f"{where}: absent"


def test_the_held_out_items_are_of_the_issues_kinds() -> None:
    for item in read_yaml_mapping(SET, "held-out set")["items"]:
        assert item["kind"] in KINDS, f"{item['id']}: kind {item['kind']!r}"


def test_every_atom_names_ids_of_its_scene(items: list[dict[str, Any]]) -> None:
    scenes: dict[str, set[str]] = {}
    for item in items:
        if "refuse" in item:
            continue
        ids = scenes.setdefault(item["scene"], _scene_ids(item["scene"]))
        for text in _atoms(item):
            atom = parse_expression(text)
            assert isinstance(atom, Atom), f"{item['id']}: {text} is not one atom"
            assert atom.predicate in LIBERO_GOAL_PREDICATES, f"{item['id']}: {text}"
            unknown = [a for a in atom.args if a not in ids]
            assert not unknown, f"{item['id']}: {text}: {unknown} not in {item['scene']}"


def test_refusals_name_a_scene_that_exists(items: list[dict[str, Any]]) -> None:
    for item in items:
        if "refuse" in item:
            assert _scene_ids(item["scene"]), item["id"]
