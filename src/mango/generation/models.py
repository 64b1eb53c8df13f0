"""Schemas of everything the MANGO agents exchange, and the user inputs they read.

The agent answers (`AtomicLibraryAnswer`, `AtomicOracle`, `OracleCandidate`,
`AssessorReport`, `HackerReport`, `JudgeVerdict`, `Feedback`) are what any backend must
return, so they stay flat and JSON-schema friendly: plain strings, lists and small enums.
The formats follow spec §2 (oracle) and §4 (libraries, scene objects, function library).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    ValidationError,
    field_validator,
)

from mango import json_files
from mango.errors import InputError, from_validation_error
from mango.oracle.world_state import ROBOT_PARTS

ExecutionMode = Literal["sequential", "any_order"]
EntityKind = Literal["object", "region", "surface", "fixture", "joint", "device", "robot"]
_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


# ----------------------------------------------------------------------------- libraries (§4)


class AtomicTask(_Model):
    """One atomic task (module I): a single skill with parameters and its effects."""

    id: str
    description: str = ""
    parameters: list[str] = Field(default_factory=list)
    pre_conditions: list[str] = Field(default_factory=list)
    post_conditions: list[str] = Field(default_factory=list)


class AtomicLibraryAnswer(_Model):
    """Module I output: `{"atomic_library": [...]}`."""

    atomic_library: list[AtomicTask]


class AtomicOracle(_Model):
    """One atomic task oracle (module II): a predicate expression over the task's parameters."""

    id: str
    description: str = ""
    parameters: list[str] = Field(default_factory=list)
    correctness_oracle: str


class AtomicOracleLibrary(_Model):
    """Module II output: `{"atomic_oracle_library": [...]}`."""

    atomic_oracle_library: list[AtomicOracle]

    def get(self, oracle_id: str) -> AtomicOracle | None:
        return next((o for o in self.atomic_oracle_library if o.id == oracle_id), None)


# ----------------------------------------------------------------------------- oracle (§2)


class Monitor(_Model):
    oracle_id: str
    handle_as: str


class ActionNode(_Model):
    action_id: str
    parameters: dict[str, str] = Field(default_factory=dict)
    monitoring: list[Monitor] = Field(default_factory=list)


class StepNode(_Model):
    step: int
    execution_mode: ExecutionMode = "sequential"
    actions: list[ActionNode] | None = None
    steps: list[StepNode] | None = None


class OracleCandidate(_Model):
    """A fine-grained oracle (spec §2), the module III candidate."""

    instruction: str
    execution_mode: ExecutionMode = "sequential"
    plan: list[StepNode]

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def actions(self) -> list[tuple[str, ActionNode]]:
        """Every action with its step path (spec §2 "step paths")."""
        out: list[tuple[str, ActionNode]] = []

        def walk(nodes: list[StepNode], prefix: str) -> None:
            for i, node in enumerate(nodes, start=1):
                path = f"{prefix}{i}"
                if node.steps:
                    walk(node.steps, path + ".")
                for j, act in enumerate(node.actions or [], start=1):
                    out.append((f"{path}.{j}", act))

        walk(self.plan, "")
        return out


def expression_pattern(arguments: dict[str, list[str]]) -> str:
    """A regular expression for the spec-§1 expressions that name only these predicates, each
    on the ids its arguments may take (`arguments`: predicate → ids): atoms, each optionally
    negated, joined by `and` / `or`. Given to a server as a string's `pattern`, llama.cpp
    compiles it into the grammar, so a model asked for a `handle_as` can write neither an
    unknown predicate nor an id the scene lacks, nor open a thing without a joint."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for predicate, ids in sorted(arguments.items()):
        if ids:
            groups.setdefault(tuple(sorted(set(ids))), []).append(predicate)
    calls = []
    for ids, predicates in groups.items():
        ident = "|".join(ids)
        calls.append(rf"({'|'.join(predicates)})\(({ident})(, ({ident}))*\)")
    atom = f"(not )?({'|'.join(calls)})"
    return rf"^{atom}( (and|or) {atom})*$"


# Bounds a grammar needs so that a small model cannot write steps until its token budget runs
# out (Qwen 0.5B at temperature 0 repeated pick/place steps to 768 tokens under every schema
# variant tried, and stopped at 4 steps when the plan was capped): what one step needs
# (open, pick, place, close) and what one action checks.
MAX_ACTIONS_PER_STEP = 4
MAX_MONITORS_PER_ACTION = 3


def grounded_candidate_schema(scene: SceneTask, tasks: dict[str, list[str]],
                              oracle_ids: list[str], arguments: dict[str, list[str]] | None = None,
                              max_steps: int | None = None,
                              parameter_ids: dict[str, dict[str, list[str]]] | None = None,
                              ) -> type[OracleCandidate]:
    """`OracleCandidate` whose JSON schema names only what exists: an action is one of the
    library's atomic `tasks` (id → parameter names) with exactly its parameters, each valued
    by a scene id (its entities and the robot's parts, or the ids `parameter_ids` gives
    that task's parameter); oracle ids are the oracle library's;
    a monitor's `handle_as` is held to `expression_pattern` over the predicates and the ids
    each may take (`arguments`). A server that enforces the schema (llama.cpp's grammar) then
    cannot let a model invent an id, a parameter or a predicate; answers validate exactly as
    `OracleCandidate`. The parameters are a closed object per task, not an open-keyed one:
    open keys let the 0.5B model run on past its token budget under llama.cpp's grammar
    (three answers cut off at 768 tokens). The plan has at most `max_steps` steps (the
    caller's reading of the instruction), a step `MAX_ACTIONS_PER_STEP` actions, an action
    `MAX_MONITORS_PER_ACTION` checks."""
    schema = copy.deepcopy(OracleCandidate.model_json_schema())
    defs = schema["$defs"]
    ids = sorted(set([*scene.entities(), *ROBOT_PARTS]))
    monitor = defs["Monitor"]["properties"]
    if oracle_ids:
        monitor["oracle_id"] = {"type": "string", "enum": sorted(set(oracle_ids))}
    if arguments and any(arguments.values()):
        monitor["handle_as"] = {"type": "string", "pattern": expression_pattern(arguments)}
    if max_steps:
        schema["properties"]["plan"]["maxItems"] = max_steps
    step = defs["StepNode"]["properties"]
    # a step holds actions or steps, never both or neither (the model's rule, as a grammar)
    defs["StepNode"] = {"title": "StepNode", "anyOf": [
        {"type": "object", "additionalProperties": False, "required": ["step", key],
         "properties": {"step": step["step"], "execution_mode": step["execution_mode"],
                        key: {**step[key]["anyOf"][0], "minItems": 1}}}
        for key in ("actions", "steps")]}
    defs["StepNode"]["anyOf"][0]["properties"]["actions"]["maxItems"] = MAX_ACTIONS_PER_STEP
    defs["ActionNode"]["properties"]["monitoring"]["maxItems"] = MAX_MONITORS_PER_ACTION
    if tasks:
        monitoring = defs["ActionNode"]["properties"]["monitoring"]
        defs["SceneId"] = {"type": "string", "enum": ids}  # once, however many parameters
        names_of: dict[tuple[str, ...], str] = {tuple(ids): "SceneId"}

        def ref(task: str, name: str) -> dict[str, str]:
            allowed = tuple(sorted((parameter_ids or {}).get(task, {}).get(name) or ids))
            if allowed not in names_of:
                names_of[allowed] = f"SceneId{len(names_of)}"
                defs[names_of[allowed]] = {"type": "string", "enum": list(allowed)}
            return {"$ref": f"#/$defs/{names_of[allowed]}"}

        defs["ActionNode"] = {"title": "ActionNode", "anyOf": [
            {"type": "object", "additionalProperties": False,
             "required": ["action_id", "parameters", "monitoring"],
             "properties": {
                 "action_id": {"type": "string", "const": task},
                 "parameters": {
                     "type": "object", "additionalProperties": False,
                     "required": list(dict.fromkeys(names)),
                     "properties": {n: ref(task, n) for n in names}},
                 "monitoring": monitoring}}
            for task, names in sorted(tasks.items())]}

    class GroundedOracleCandidate(OracleCandidate):
        # what a prompt shows: the enums change with every scene, and a prompt that starts
        # with them shares no prefix with the last one (a server's grammar holds to them)
        prompt_model: ClassVar[type[BaseModel]] = OracleCandidate

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    GroundedOracleCandidate.__name__ = "OracleCandidate"
    GroundedOracleCandidate.__qualname__ = "OracleCandidate"
    return GroundedOracleCandidate


# ----------------------------------------------------------------------------- agent answers


class AssessorReport(_Model):
    """What every assessor returns: the problems it found and a 0-10 score."""

    aspect: str = ""
    issues: list[str] = Field(default_factory=list)
    score: int = Field(ge=0, le=10)


class HackerReport(_Model):
    """The Oracle Hacker's answer: a state that wrongly passes the oracle, if it found one."""

    exploit_found: bool
    counterexample: str = ""
    issues: list[str] = Field(default_factory=list)


class JudgeVerdict(_Model):
    verdict: Literal["APPROVED", "REJECTED"]
    reasons: list[str] = Field(default_factory=list)
    refinement_instructions: list[str] = Field(default_factory=list)

    @property
    def approved(self) -> bool:
        return self.verdict == "APPROVED"


class Feedback(_Model):
    """Report Interpretation: the rejection turned into instructions for the next iteration."""

    feedback: list[str] = Field(default_factory=list)


# ----------------------------------------------------------------------------- inputs


class PredicateInfo(_Model):
    """One simulator function of a function library (spec §4)."""

    predicate: str
    description: str = ""
    input_arguments: list[str] = Field(default_factory=list)
    type: str = ""
    # per argument, the scene kinds the static check accepts there (None: any)
    argument_kinds: list[list[str] | None] | None = None

    @property
    def arity(self) -> int:
        return len(self.input_arguments)


class FunctionCatalog(_Model):
    """A function library as data, for prompts and the offline planner (spec §4 form)."""

    predicates: dict[str, PredicateInfo]

    def names(self) -> list[str]:
        return sorted(self.predicates)

    def has(self, name: str) -> bool:
        return name in self.predicates


class LayoutEntry(_Model):
    """Where an entity starts (commands.md §6 `layout`): table-frame x, y in metres and what it
    stands on or in, so "the left plate" or "the bowl on the cookie box" can be grounded."""

    position: tuple[FiniteFloat, FiniteFloat] | None = None  # NaN would order alike things
    on: str | None = None
    relation: Literal["on", "in"] = "on"
    frame: str | None = None


class SceneTask(_Model):
    """The grounding input for one instruction (spec §4 scene objects)."""

    id: str
    objects: list[str] = Field(default_factory=list)
    states: list[str] = Field(default_factory=list)
    descriptions: dict[str, str] = Field(default_factory=dict)
    kinds: dict[str, EntityKind] = Field(default_factory=dict)
    layout: dict[str, LayoutEntry] = Field(default_factory=dict)

    @field_validator("objects", "states")
    @classmethod
    def _ids(cls, v: list[str]) -> list[str]:
        for item in v:
            if not _ID.match(item):
                raise ValueError(f"'{item}' is not a valid entity id")
        return v

    def entities(self) -> list[str]:
        """Every id a predicate may take, movable objects first, without duplicates."""
        return list(dict.fromkeys([*self.objects, *self.states]))

    def kind_of(self, entity: str) -> str | None:
        """The declared kind; else `object` for movable ones; else None (unknown)."""
        if entity in self.kinds:
            return self.kinds[entity]
        if entity in self.objects:
            return "object"
        return None


class SceneFile(_Model):
    task_objects: list[SceneTask]


# ----------------------------------------------------------------------------- readers


def read_json(path: str | Path) -> Any:
    """Read a JSON file; a syntax error names the file, line and column."""
    return json_files.read_json(path, "file")


def _validate(model: type[_Model], data: Any, file: str, prefix: str = "") -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, file=file, prefix=prefix) from None


# The longest instruction read (characters): LIBERO's longest is ~110 and a paragraph of
# directions stays far below; the reader's work grows with the length (120 KB took 10 s).
MAX_INSTRUCTION_CHARS = 1000


def instruction_problem(text: str) -> str | None:
    """Why `text` cannot be an instruction (empty, too long), or None."""
    if not text.strip():
        return "the instruction is empty"
    if len(text) > MAX_INSTRUCTION_CHARS:
        return (f"the instruction is {len(text)} characters long; an instruction has at most "
                f"{MAX_INSTRUCTION_CHARS}")
    return None


def load_tasks(path: str | Path) -> list[str]:
    """TASKS.json (spec §7): a non-empty JSON list of instruction strings."""
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise InputError("expected a non-empty JSON list of instruction strings", file=str(path))
    for i, item in enumerate(data):
        why = instruction_problem(item) if isinstance(item, str) else "not a string"
        if why is not None:
            raise InputError(why, file=str(path), field=f"[{i}]")
    return [s.strip() for s in data]


def load_scene_file(path: str | Path) -> SceneFile:
    """SCENES.json (spec §4): `{"task_objects": [...]}`, or a single entry."""
    return parse_scene_file(read_json(path), str(path))


def parse_scene_file(data: Any, path: str) -> SceneFile:
    """Scene objects already read (a file, or a sim scene's objects), validated."""
    if isinstance(data, dict) and "task_objects" not in data and "id" in data:
        data = {"task_objects": [data]}  # a single entry is accepted as well
    scene = _validate(SceneFile, data, str(path))
    if not scene.task_objects:
        raise InputError("no entries", file=str(path), field="task_objects")
    for i, entry in enumerate(scene.task_objects):
        if not entry.entities():
            raise InputError(
                "an entry needs 'objects' or 'states'", file=str(path), field=f"task_objects[{i}]"
            )
    return scene


def _norm_text(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())


def select_scene(scene: SceneFile, instruction: str, file: str | None = None) -> SceneTask:
    """The entry whose id is the instruction (case/punctuation-insensitive), or the only one."""
    want = _norm_text(instruction)
    for entry in scene.task_objects:
        if _norm_text(entry.id) == want:
            return entry
    if len(scene.task_objects) == 1:
        return scene.task_objects[0]
    raise InputError(
        f"no entry for instruction '{instruction}' among {len(scene.task_objects)} entries",
        file=file,
        field="task_objects[].id",
    )


def load_atomic_library(path: str | Path) -> AtomicLibraryAnswer:
    return _validate(AtomicLibraryAnswer, read_json(path), str(path))


def load_atomic_oracle_library(path: str | Path) -> AtomicOracleLibrary:
    return _validate(AtomicOracleLibrary, read_json(path), str(path))
