"""The oracle engine as the generation pipeline uses it (one place that imports it).

Execution Reliability, metrics and the CLI need the engine's parser, function library,
oracle loader, static check and tracker; they reach them only through this module so the
rest of the generation code does not depend on the engine's module layout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mango.generation.models import FunctionCatalog, SceneTask
from mango.oracle.compile import compile_expression
from mango.oracle.expr import Expr, format_expression, iter_atoms, parse_expression
from mango.oracle.library import FunctionLibrary
from mango.oracle.model import FineGrainedOracle, load_oracle
from mango.oracle.predicates import EvaluationError, StateView
from mango.oracle.static_check import Problem, SceneEntities, static_check
from mango.oracle.tracker import Report, check_trace
from mango.oracle.world_state import (
    ROBOT_PARTS,
    DeviceState,
    EntityState,
    GripperState,
    JointState,
    WorldState,
)

__all__ = [
    "EvaluationError",
    "Expr",
    "FineGrainedOracle",
    "FunctionLibrary",
    "Problem",
    "Report",
    "SceneEntities",
    "StateView",
    "check_trace",
    "compile_expression",
    "default_function_catalog",
    "format_expression",
    "iter_atoms",
    "load_function_library",
    "load_oracle",
    "parse_expression",
    "sample_state",
    "scene_entities",
    "static_check",
]


def _catalog(lib: FunctionLibrary) -> FunctionCatalog:
    return FunctionCatalog.model_validate(lib.to_json())


def default_function_catalog() -> FunctionCatalog:
    """The engine's default function library as data."""
    return _catalog(FunctionLibrary.default())


def load_function_library(path: str | Path | None) -> tuple[FunctionLibrary, FunctionCatalog]:
    """The engine library (for checks) and its data view (for prompts and the planner)."""
    lib = FunctionLibrary.default() if path is None else FunctionLibrary.load(path)
    return lib, _catalog(lib)


def scene_entities(scene: SceneTask) -> SceneEntities:
    """The engine's view of a scene: ids and, where declared, kinds."""
    kinds: dict[str, str | None] = {e: scene.kinds.get(e) for e in scene.entities()}
    for obj in scene.objects:
        kinds[obj] = kinds[obj] or "object"
    for e, k in scene.kinds.items():
        kinds.setdefault(e, k)
    return SceneEntities.coerce(kinds)


def sample_state(scene: SceneTask, kind_of: Callable[[str], str | None],
                 closable: Callable[[str], bool], switchable: Callable[[str], bool],
                 parent_of: Callable[[str], str | None]) -> WorldState:
    """A plausible first world state of a scene, for dry runs.

    Every id gets a box of its kind; anything that can open gets a closed joint, anything
    that can be switched a device entry, so that every well-typed expression evaluates.
    """
    objects: dict[str, EntityState] = {}
    joints: dict[str, JointState] = {}
    devices: dict[str, DeviceState] = {}
    for i, ent in enumerate(scene.entities()):
        kind = kind_of(ent) or "object"
        x = 0.3 * (i % 6)
        y = 0.3 * (i // 6)
        if kind == "surface":
            objects[ent] = EntityState(position=(0.0, 0.0, 0.4), size=(4.0, 4.0, 0.8),
                                       kind="surface")
            continue
        if kind == "joint":
            joints[ent] = JointState(q=0.0, q_open=1.0, q_closed=0.0)
            continue
        size = (0.2, 0.2, 0.1) if kind == "region" else (0.06, 0.06, 0.08)
        ek = kind if kind in {"object", "region", "fixture", "device", "robot"} else "object"
        objects[ent] = EntityState(position=(x, y, 0.85), size=size, kind=ek,
                                   parent=parent_of(ent) if ek == "region" else None)
        if closable(ent):
            joints[ent] = JointState(q=0.0, q_open=1.0, q_closed=0.0)
        if switchable(ent):
            devices[ent] = DeviceState(on=False)
    for part in ROBOT_PARTS:
        objects.setdefault(part, EntityState(position=(0.0, -0.5, 1.2), size=(0.02, 0.02, 0.02),
                                             kind="robot"))
    return WorldState(t=0.0, objects=objects, joints=joints, devices=devices,
                      gripper=GripperState(width=0.08, closed=False), contacts=[])
