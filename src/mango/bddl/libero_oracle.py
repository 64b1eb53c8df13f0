"""The fine-grained oracle of a LIBERO task, judged in LIBERO's own meaning.

A LIBERO episode has two verdicts: LIBERO's `check_success()` (its BDDL goal, all or nothing)
and the fine-grained oracle MANGO generates from the task's instruction, step by step. For the
second to be comparable with the first it must mean what LIBERO means by the goal's state
predicates: LIBERO's `On` of a region is not ours (a bowl resting on the stove's cook region
is `On` for LIBERO a few millimetres before our bottom-on-top rule says so), nor are its `In`,
`Open`, `Close`, `TurnOn`, `TurnOff`. So the oracle is generated offline exactly as
`mango bddl import` + `mango generate oracle` do (the scene imported from the task's BDDL file,
modules I+II over the LIBERO-10 instructions as `bench_libero_generation.py` runs them), and
its state atoms are then read in LIBERO's semantics (`libero_on`, ... of the `libero` function
library, `config/functions/libero.json`). Its intermediate actions (approach, grasp, lift)
keep their own predicates: LIBERO has no notion of them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mango.bddl.convert import libero_expression, scene_json, task_json
from mango.bddl.parser import read_bddl
from mango.oracle.expr import format_expression, parse_expression
from mango.oracle.library import FunctionLibrary
from mango.oracle.model import FineGrainedOracle
from mango.oracle.tracker import Report, check_trace
from mango.oracle.world_state import WorldState
from mango.sim.scene import REPO_ROOT

if TYPE_CHECKING:
    from mango.generation.models import SceneTask

LIBERO_FUNCTIONS = REPO_ROOT / "config" / "functions" / "libero.json"
LIBRARY_TASKS = REPO_ROOT / "config" / "tasks" / "libero10.json"


def in_libero_semantics(oracle: dict[str, Any]) -> dict[str, Any]:
    """The same oracle (spec §2 JSON) with every `handle_as`'s state predicates (in, on,
    open, close, turnon, turnoff) replaced by LIBERO's (`mango.bddl.convert.libero_expression`,
    the rule `mango bddl import` writes `goal_libero` by)."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            if isinstance(out.get("handle_as"), str):
                out["handle_as"] = format_expression(
                    libero_expression(parse_expression(out["handle_as"])))
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(oracle)


@functools.cache
def _generation() -> tuple[Any, Any]:
    """The offline pipeline and the libraries (modules I+II) it grounds every LIBERO task's
    module III in: built once per process (milliseconds each, but shared by every episode)."""
    from mango.generation.backends import make_backend
    from mango.generation.engine import load_function_library
    from mango.generation.models import load_tasks
    from mango.generation.pipeline import GenerationConfig, make_pipeline

    library, catalog = load_function_library(None)
    pipe = make_pipeline(make_backend("offline"), catalog, GenerationConfig(), library=library)
    return pipe, pipe.generate_library(load_tasks(LIBRARY_TASKS))


@functools.cache
def libero_library() -> FunctionLibrary:
    return FunctionLibrary.load(LIBERO_FUNCTIONS)


def scene_task(bddl: str | Path) -> SceneTask:
    """The task's objects as the grounder reads them: imported from its BDDL file with the
    descriptions LIBERO's categories give and the initial layout (`mango.bddl.convert`)."""
    from mango.generation.models import SceneTask

    return SceneTask.model_validate(scene_json(read_bddl(bddl))["task_objects"][0])


def task_oracle(bddl: str | Path) -> tuple[FineGrainedOracle, bool]:
    """(the fine-grained oracle of the task's own instruction in LIBERO's semantics, whether
    module III approved it). Raises `mango.llm.backend.Refusal` when the reader refuses the
    instruction (the generation bench lists which do)."""
    instruction = task_json(read_bddl(bddl))["instruction"]
    scene = scene_task(bddl)
    pipe, lib = _generation()
    run = pipe.module3(instruction, scene, lib.atomic_library, lib.oracle_library)
    oracle = FineGrainedOracle.model_validate(in_libero_semantics(run.oracle.to_json_dict()))
    return oracle, run.approved


def judge(oracle: FineGrainedOracle, states: Iterable[WorldState]) -> Report:
    """The oracle's report over an episode's world states, with LIBERO's predicates."""
    return check_trace(oracle, states, libero_library())


def verdict_fields(bddl: str | Path, states: list[WorldState]) -> dict[str, Any]:
    """The label fields of a LIBERO episode's fine-grained verdict (beside `libero_success`):
    `oracle_verdict` (pass/fail), `oracle_failed_step` (the first step not completed),
    `oracle_approved` (module III's judge), or `oracle_error` when no oracle was generated."""
    from mango.llm.backend import Refusal

    try:
        oracle, approved = task_oracle(bddl)
    except Refusal as exc:
        return {"oracle_verdict": None, "oracle_failed_step": None, "oracle_approved": False,
                "oracle_error": f"no oracle generated: {exc}"}
    report = judge(oracle, states)
    return {"oracle_verdict": report.verdict, "oracle_failed_step": report.failed_step,
            "oracle_approved": approved, "oracle_error": None}
