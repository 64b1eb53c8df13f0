"""Static checking of oracles against a scene ("execution reliability").

Reports, for every `handle_as` and without running anything: parse errors, unknown predicates,
wrong arity, wrong argument kinds and entities the scene does not have, each with its step
path and field. Then, if a sample world state is given, every expression that passed is
evaluated once on it, so an oracle that checks cleanly can also run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mango.errors import InputError
from mango.json_files import parse_json, read_lines, read_text
from mango.oracle.compile import compile_expression
from mango.oracle.expr import Atom, ExpressionError, iter_atoms, parse_expression
from mango.oracle.library import FunctionLibrary
from mango.oracle.model import FineGrainedOracle, load_oracle, plan_entries
from mango.oracle.predicates import EvaluationError, StateView
from mango.oracle.world_state import ENTITY_KINDS, ROBOT_PARTS, WorldState, parse_world_state

ProblemKind = Literal[
    "parse_error", "unknown_predicate", "arity", "argument_kind", "self_relation",
    "ungrounded", "dry_run"
]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an oracle; `path` is the step path, "" for the oracle itself."""

    path: str
    kind: ProblemKind
    message: str
    field: str = ""
    action_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "message": self.message,
            "field": self.field,
            "action_id": self.action_id,
        }

    def __str__(self) -> str:
        where = f"step {self.path}" if self.path else "oracle"
        return f"{where} [{self.kind}] {self.message}"


@dataclass(frozen=True)
class SceneEntities:
    """The ids a scene offers and, where known, their kinds (an id may have several)."""

    ids: frozenset[str]
    kinds: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.ids or name in ROBOT_PARTS

    def kinds_of(self, name: str) -> frozenset[str] | None:
        if name in ROBOT_PARTS:
            return frozenset({"robot"})
        return self.kinds.get(name)

    @classmethod
    def from_world_state(cls, state: WorldState) -> SceneEntities:
        kinds: dict[str, set[str]] = {}
        for name, ent in state.objects.items():
            kinds.setdefault(name, set()).add(ent.kind)
        for name in state.joints:
            kinds.setdefault(name, set()).add("joint")
        for name in state.devices:
            kinds.setdefault(name, set()).add("device")
        return cls(frozenset(kinds), {k: frozenset(v) for k, v in kinds.items()})

    @classmethod
    def coerce(cls, value: SceneEntities | Mapping[str, Any] | Iterable[str]) -> SceneEntities:
        """Accept a SceneEntities, an {id: kind(s)} mapping or a plain list of ids."""
        if isinstance(value, SceneEntities):
            return value
        if isinstance(value, Mapping):
            kinds = {
                str(k): frozenset([v] if isinstance(v, str) else v)
                for k, v in value.items()
                if v is not None
            }
            return cls(frozenset(str(k) for k in value), kinds)
        return cls(frozenset(value))

    @classmethod
    def from_task_objects(
        cls, data: Any, instruction: str | None = None, file: str | None = None
    ) -> SceneEntities:
        """The spec §4 scene-objects form; picks the entry for `instruction` (or the only one)."""
        entries = data.get("task_objects") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not entries:
            raise InputError("expected a non-empty list", file=file, field="task_objects")
        chosen = None
        if len(entries) == 1:
            chosen = 0
        elif instruction is not None:
            want = " ".join(instruction.split()).casefold()
            for i, e in enumerate(entries):
                if (
                    isinstance(e, dict)
                    and " ".join(str(e.get("id", "")).split()).casefold() == want
                ):
                    chosen = i
                    break
        if chosen is None:
            raise InputError(
                f"{len(entries)} scenes and none has the id {instruction!r}",
                file=file,
                field="task_objects",
            )
        entry, where = entries[chosen], f"task_objects[{chosen}]"
        if not isinstance(entry, dict):
            raise InputError("must be an object", file=file, field=where)
        ids: set[str] = set()
        for key in ("objects", "states"):
            values = entry.get(key, [])
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise InputError("must be a list of ids", file=file, field=f"{where}.{key}")
            ids.update(values)
        kinds_in = entry.get("kinds") or {}
        if not isinstance(kinds_in, dict):
            raise InputError("must be an object {id: kind}", file=file, field=f"{where}.kinds")
        kinds: dict[str, frozenset[str]] = {}
        for k, v in kinds_in.items():
            ks = [v] if isinstance(v, str) else v
            if not isinstance(ks, list) or not all(x in ENTITY_KINDS for x in ks):
                raise InputError(
                    f"must be one of {', '.join(ENTITY_KINDS)}",
                    file=file,
                    field=f"{where}.kinds.{k}",
                )
            kinds[k] = frozenset(ks)
            ids.add(k)
        return cls(frozenset(ids), kinds)


def load_scene(
    path: str | Path, instruction: str | None = None
) -> tuple[SceneEntities, WorldState | None]:
    """Read a scene: the spec §4 scene-objects form, or a world state (JSON or the first line
    of a JSONL trace), which then also serves as the sample state for the dry run."""
    p = Path(path)
    with read_lines(p, "scene") as lines:  # a trace of any length: its first lines are read
        numbered = ((n, ln) for n, ln in enumerate(lines, start=1) if ln.strip())
        line, first = next(numbered, (None, ""))
        more = next(numbered, None) is not None
    try:  # one JSON document on one line, or a JSON Lines trace: its first state
        data = parse_json(first, str(p), line)
        line = line if more else None
    except InputError:  # a document over several lines, read whole
        data = parse_json(read_text(p, "scene"), str(p))
        line = None
    if isinstance(data, dict) and "task_objects" in data:
        return SceneEntities.from_task_objects(data, instruction, file=str(p)), None
    if isinstance(data, dict) and "t" in data:
        state = parse_world_state(data, file=str(p), line=line)
        return SceneEntities.from_world_state(state), state
    raise InputError(
        'a scene must be a {"task_objects": [...]} object or a world state', file=str(p)
    )


def static_check(
    oracle: FineGrainedOracle | str | Path | dict[str, Any],
    library: FunctionLibrary | None = None,
    scene_entities: SceneEntities | Mapping[str, Any] | Iterable[str] | None = None,
    sample_state: WorldState | None = None,
) -> list[Problem]:
    """Every problem of the oracle against the scene, in plan order (empty list: reliable).

    Without `scene_entities` but with `sample_state`, the state's entities are the scene.
    Kinds are only checked where the scene knows an entity's kind.
    """
    oracle = load_oracle(oracle)
    library = library or FunctionLibrary.default()
    scene = None
    if scene_entities is not None:
        scene = SceneEntities.coerce(scene_entities)
    elif sample_state is not None:
        scene = SceneEntities.from_world_state(sample_state)
    view = StateView(sample_state, library.thresholds) if sample_state is not None else None

    problems: list[Problem] = []
    targets: list[tuple[str, str, str, str]] = []  # path, action_id, field, text
    for entry in plan_entries(oracle):
        for k, mon in enumerate(entry.action.monitoring):
            targets.append(
                (
                    entry.path,
                    entry.action.action_id,
                    f"{entry.field}.monitoring[{k}].handle_as",
                    mon.handle_as,
                )
            )
    if oracle.goal is not None:
        targets.append(("", "", "goal", oracle.goal))

    for path, action_id, fld, text in targets:
        found = _check_expression(path, action_id, fld, text, library, scene, view)
        problems.extend(found)
    return problems


def _check_expression(
    path: str,
    action_id: str,
    fld: str,
    text: str,
    library: FunctionLibrary,
    scene: SceneEntities | None,
    view: StateView | None,
) -> list[Problem]:
    def problem(kind: ProblemKind, message: str) -> Problem:
        return Problem(path, kind, message, fld, action_id)

    try:
        expr = parse_expression(text)
    except ExpressionError as exc:
        return [problem("parse_error", exc.message)]
    out: list[Problem] = []
    seen: set[str] = set()
    for atom in iter_atoms(expr):
        if atom.key in seen:
            continue
        seen.add(atom.key)
        out.extend(problem(kind, msg) for kind, msg in _check_atom(atom, library, scene))
    if out or view is None:
        return out
    try:
        compile_expression(expr, library)(view)
    except EvaluationError as exc:
        out.append(problem("dry_run", f"evaluation on the sample state failed: {exc.message}"))
    return out


def kind_accepted(have: Iterable[str] | None, accepted: Iterable[str] | None) -> bool:
    """An argument of kinds `have` fits a position accepting `accepted` (None: unknown, any)."""
    return accepted is None or have is None or bool(set(have) & set(accepted))


def _check_atom(
    atom: Atom, library: FunctionLibrary, scene: SceneEntities | None
) -> list[tuple[ProblemKind, str]]:
    out: list[tuple[ProblemKind, str]] = []
    spec = library.get(atom.predicate)
    if spec is None:
        out.append(("unknown_predicate", library.unknown(atom.predicate)))
    elif spec.arity != len(atom.args):
        out.append(
            (
                "arity",
                f"'{atom.predicate}' takes {spec.arity} argument(s) "
                f"({', '.join(spec.input_arguments)}), got {len(atom.args)} in {atom}",
            )
        )
    twice = sorted({a for a in atom.args if atom.args.count(a) > 1})
    if twice:  # in(x, x), near(x, x): never a condition anyone means (a model's slip)
        out.append(("self_relation", f"{atom} relates '{twice[0]}' to itself"))
    if scene is None:
        return out
    for i, arg in enumerate(atom.args):
        if arg not in scene:
            out.append(("ungrounded", f"'{arg}' in {atom} is not an entity of the scene"))
            continue
        if spec is None or spec.arity != len(atom.args):
            continue
        accepted = spec.argument_kinds[i]
        have = scene.kinds_of(arg)
        if kind_accepted(have, accepted):
            continue
        out.append(
            (
                "argument_kind",
                f"argument {i + 1} of {atom} ({spec.input_arguments[i]}) must be "
                f"{' or '.join(accepted)}, but '{arg}' is {' and '.join(sorted(have))}",
            )
        )
    return out
