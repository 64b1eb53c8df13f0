"""The schema module III asks with (`grounded_candidate_schema`): actions are the library's
tasks with exactly their parameters, valued by scene ids, and a monitor's `handle_as` is held
to the scene's predicates and ids (`expression_pattern`). A server that enforces the schema
then cannot let a model write what Qwen2.5-Coder-1.5B wrote on LIBERO before it had these
(an unknown predicate `turned_on`, an id `drawer_1`, `close` of a cabinet's side region, which
has no joint); and
the schema is no narrower than what a good oracle needs. Validation here is `jsonschema`'s,
not ours."""

from __future__ import annotations

import copy
import re

import jsonschema
import pytest

from mango.generation.engine import load_function_library
from mango.generation.models import expression_pattern, grounded_candidate_schema
from mango.generation.reliability import predicate_arguments
from mango.oracle.expr import parse_expression


def _pattern(scene, catalog) -> str:
    return expression_pattern(predicate_arguments(scene, catalog))


def _schema(lib, scene, catalog) -> dict:
    return grounded_candidate_schema(
        scene, {t.id: t.parameters for t in lib.atomic_library.atomic_library},
        [o.id for o in lib.oracle_library.atomic_oracle_library],
        predicate_arguments(scene, catalog)).model_json_schema()


def _drawer(scenes):
    return next(s for s in scenes.task_objects if "black bowl" in s.id)


def test_every_oracle_the_offline_planner_writes_fits_its_schema(offline_libero, libero_scenes):
    lib, runs, pipe = offline_libero
    for run, scene in zip(runs, libero_scenes.task_objects, strict=True):
        jsonschema.validate(run.oracle.to_json_dict(), _schema(lib, scene, pipe.catalog))


def _first_action(oracle: dict) -> dict:
    node = oracle["plan"][0]
    while "steps" in node:
        node = node["steps"][0]
    return node["actions"][0]


@pytest.mark.parametrize("change", [
    lambda a: a["parameters"].update({next(iter(a["parameters"])): "drawer_1"}),
    lambda a: a["parameters"].update({"speed": "robot_hand"}),
    lambda a: a["parameters"].pop(next(iter(a["parameters"]))),
    lambda a: a.update({"action_id": "teleport"}),
    lambda a: a["monitoring"][0].update({"handle_as": "turned_on(flat_stove_1)"}),
    lambda a: a["monitoring"][0].update({"handle_as": "close(white_cabinet_1_top_side)"}),
    lambda a: a["monitoring"][0].update({"oracle_id": "made_up"}),
], ids=["invented id", "extra parameter", "missing parameter", "unknown task",
        "unknown predicate", "id inside an expression", "unknown oracle"])
def test_what_the_scene_or_library_lacks_does_not_fit(offline_libero, libero_scenes, change):
    lib, runs, pipe = offline_libero
    index = libero_scenes.task_objects.index(_drawer(libero_scenes))
    schema = _schema(lib, _drawer(libero_scenes), pipe.catalog)
    oracle = runs[index].oracle.to_json_dict()
    jsonschema.validate(oracle, schema)
    bad = copy.deepcopy(oracle)
    change(_first_action(bad))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


@pytest.mark.parametrize("text", [
    "open(drawer_1)",
    "turned_on(flat_stove_1)",
    "open(akita_black_bowl_1)",                 # no joint: the dry run could not evaluate it
    "turnon(white_cabinet_1)",                  # nothing to switch
    "close(white_cabinet_1_top_side)",
    "in(akita_black_bowl_1, white_cabinet_1_bottom_region) and",
    "in(akita_black_bowl_1)) or true",
    "",
])
def test_expressions_outside_the_scene_do_not_match(libero_scenes, text):
    _, catalog = load_function_library(None)
    assert re.fullmatch(_pattern(_drawer(libero_scenes), catalog), text) is None


@pytest.mark.parametrize("text", [
    "in(akita_black_bowl_1, white_cabinet_1_bottom_region)",
    "not grasped(akita_black_bowl_1) and close(white_cabinet_1_bottom_region)",
    "up(akita_black_bowl_1) or incontact(robot_gripper, akita_black_bowl_1)",
])
def test_what_matches_is_an_expression_the_engine_reads(libero_scenes, text):
    _, catalog = load_function_library(None)
    assert re.fullmatch(_pattern(_drawer(libero_scenes), catalog), text)
    parse_expression(text)


def test_without_libraries_the_schema_is_the_plain_oracle(libero_scenes):
    scene = libero_scenes.task_objects[0]
    bare = grounded_candidate_schema(scene, {}, []).model_json_schema()
    assert bare["$defs"]["ActionNode"]["properties"]["action_id"] == {
        "title": "Action Id", "type": "string"}
    assert "pattern" not in bare["$defs"]["Monitor"]["properties"]["handle_as"]
