"""Fine-grained oracle models (spec §2) and the plan's partial order.

A plan node is a step (with `actions` or nested `steps`) or an action. We also accept an
action directly in `plan` or a step inside `actions`, since both describe the same
series-parallel order. Unknown fields are kept, so `to_json()` returns what was read (our own
`goal` field included). No name, parameter or expression may hold a control or format
character (NUL, an escape, a right-to-left override: text that prints as something it is not).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from mango.errors import InputError, field_path
from mango.json_files import parse_json, read_text

ExecutionMode = Literal["sequential", "any_order"]


_REFUSED = frozenset({"Cc", "Cf", "Zl", "Zp"})  # controls, format (bidi, zero-width), breaks
_FREE_TEXT = frozenset("\t\n\r\u200c\u200d")  # whitespace; the joiners some scripts spell with


def _visible(text: str) -> str:
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def _refuse_controls(value: Any, free_text: bool = False) -> Any:
    """`value` (a string, or JSON data whose keys and strings are checked) unless it holds a
    control or format character; tab, line ends and joiners pass in free text (an instruction,
    an expression)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, part = stack.pop()
        if isinstance(v, dict):  # pushed last first: the first in the file is said
            for k, item in reversed(v.items()):
                key = f"{part}.{k}" if part else str(k)
                stack += [(item, key), (k, key)]
        elif isinstance(v, list):
            stack.extend((item, f"{part}[{i}]") for i, item in reversed(list(enumerate(v))))
        elif isinstance(v, str) and not v.isprintable():
            for c in v:
                if unicodedata.category(c) in _REFUSED and not (free_text and c in _FREE_TEXT):
                    name = unicodedata.name(c, "")
                    raise PydanticCustomError(
                        "control_character",
                        "control character {char}: names, parameters and expressions are "
                        "printable text",
                        {"char": f"U+{ord(c):04X}" + (f" ({name})" if name else ""),
                         "part": _visible(part)})
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Monitoring(_Model):
    """One condition of an action: an oracle id and its predicate expression."""

    oracle_id: str = ""
    handle_as: str

    @field_validator("oracle_id")
    @classmethod
    def _printable_id(cls, v: str) -> str:
        return _refuse_controls(v)

    @field_validator("handle_as")
    @classmethod
    def _printable_expression(cls, v: str) -> str:
        return _refuse_controls(v, free_text=True)


class Action(_Model):
    """A plan leaf; it completes when every `handle_as` of its `monitoring` holds."""

    action_id: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    monitoring: list[Monitoring] = Field(min_length=1)

    @field_validator("action_id", "parameters")
    @classmethod
    def _printable(cls, v: Any) -> Any:
        return _refuse_controls(v)


def _node_tag(v: Any) -> str:
    if isinstance(v, dict):
        return "Action" if "action_id" in v else "Step"
    return "Action" if isinstance(v, Action) else "Step"


PlanNode = Annotated[
    Annotated[Action, Tag("Action")] | Annotated["Step", Tag("Step")],
    Discriminator(_node_tag),
]


class Step(_Model):
    """A group of children that complete in order (`sequential`) or in any order."""

    step: int | str | None = None
    execution_mode: ExecutionMode = "sequential"
    actions: list[PlanNode] | None = None
    steps: list[Step] | None = None

    @field_validator("step")
    @classmethod
    def _printable(cls, v: int | str | None) -> int | str | None:
        return _refuse_controls(v)

    @model_validator(mode="after")
    def _one_kind_of_children(self) -> Step:
        if (self.actions is None) == (self.steps is None):
            raise ValueError("a step needs exactly one of 'actions' or 'steps'")
        if not self.children:
            raise ValueError("a step needs at least one child")
        return self

    @property
    def children(self) -> list[Action | Step]:
        return list(self.actions if self.actions is not None else self.steps or [])


class FineGrainedOracle(_Model):
    """A fine-grained oracle: an instruction and a plan of monitored actions."""

    instruction: str = ""
    execution_mode: ExecutionMode = "sequential"
    plan: list[PlanNode] = Field(min_length=1)
    _source: str | None = PrivateAttr(default=None)
    _text: str | None = PrivateAttr(default=None)

    @field_validator("instruction")
    @classmethod
    def _strip(cls, v: str) -> str:
        return _refuse_controls(v.strip(), free_text=True)

    def actions(self) -> list[tuple[str, Action]]:
        """(step path, action) for every action, in plan order."""
        return [(e.path, e.action) for e in plan_entries(self)]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def __eq__(self, other: object) -> bool:
        # Content equality: where the oracle was read from does not matter.
        return isinstance(other, FineGrainedOracle) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    @property
    def goal(self) -> str | None:
        """The benchmark's end-state goal, when the file carries one (our extra field)."""
        g = (self.model_extra or {}).get("goal")
        return g if isinstance(g, str) else None


Step.model_rebuild()
FineGrainedOracle.model_rebuild()


@dataclass(frozen=True)
class PlanEntry:
    """An action with its place in the partial order."""

    index: int  # plan order
    path: str  # "1.2"
    field: str  # "plan[0].actions[1]", for error messages
    action: Action
    predecessors: tuple[int, ...]  # indices that must complete first
    chain_end: bool  # ends its sequential chain: a goal state that must keep holding


def plan_entries(oracle: FineGrainedOracle) -> list[PlanEntry]:
    """Flatten the plan: paths, fields, predecessor sets and chain ends."""
    out: list[PlanEntry] = []

    def walk(
        nodes: list[Action | Step],
        mode: str,
        path: str,
        field: str,
        key: str,
        before: tuple[int, ...],
        ends_chain: bool,
    ) -> list[int]:
        # `ends_chain`: this group is last in its nearest sequential ancestor (or has none).
        mine: list[int] = []
        preds = before
        for i, node in enumerate(nodes):
            p = f"{path}.{i + 1}" if path else str(i + 1)
            f = f"{field}.{key}[{i}]" if field else f"{key}[{i}]"
            last = i == len(nodes) - 1 if mode == "sequential" else ends_chain
            if isinstance(node, Action):
                out.append(PlanEntry(len(out), p, f, node, preds, last))
                added = [len(out) - 1]
            else:
                child_key = "actions" if node.actions is not None else "steps"
                added = walk(node.children, node.execution_mode, p, f, child_key, preds, last)
            mine.extend(added)
            if mode == "sequential":
                preds = preds + tuple(added)
        return mine

    walk(list(oracle.plan), oracle.execution_mode, "", "", "plan", (), True)
    return out


def _step_path(loc: tuple[int | str, ...]) -> str:
    """The step path (`1.2`) of a plan field's location (`plan[0].actions[1]...`)."""
    return ".".join(str(i + 1) for prev, i in pairwise(loc)
                    if prev in ("plan", "actions", "steps") and isinstance(i, int))


def _clean_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    # Drop pydantic's union tags so the field reads plan[0].actions[1].monitoring.
    return tuple(p for p in loc if p not in ("Action", "Step"))


def load_oracle(
    source: str | Path | dict[str, Any] | FineGrainedOracle, file: str | None = None
) -> FineGrainedOracle:
    """Read an oracle from a path, JSON text or dict; errors name file, line and field."""
    if isinstance(source, FineGrainedOracle):
        return source
    data: Any
    if isinstance(source, dict):
        data = source
    else:
        text: str
        if isinstance(source, Path) or not str(source).lstrip().startswith(("{", "[")):
            file = file or str(source)
            text = read_text(source, "oracle")
        else:
            text = str(source)
        data = parse_json(text, file)
    if not isinstance(data, dict):
        raise InputError("an oracle must be a JSON object", file=file)
    try:
        oracle = FineGrainedOracle.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = _clean_loc(tuple(err["loc"]))
        where = field_path(loc)
        msg = err["msg"]
        if err["type"] == "control_character":  # where in the field, and in the plan
            part = err["ctx"]["part"]
            where += part if part.startswith("[") or not part else f".{part}"
            if loc[:1] == ("plan",):
                msg = f"step {_step_path(loc)}: {msg}"
        more = len(exc.errors()) - 1
        if more:
            msg += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise InputError(msg, file=file, field=where or None) from None
    oracle._source = file
    if not isinstance(source, dict):
        oracle._text = text
    return oracle


def oracle_source(oracle: FineGrainedOracle) -> str | None:
    """The file an oracle was read from, if any (for error messages)."""
    return oracle._source


def source_position(oracle: FineGrainedOracle, value: str, offset: int) -> tuple[int, int] | None:
    """Line and column in the oracle's JSON text of character `offset` of a string `value`,
    when the oracle was read from text and the string occurs there exactly once."""
    text = oracle._text
    if not text:
        return None
    for ascii_only in (True, False):
        encoded = json.dumps(value, ensure_ascii=ascii_only)
        at = text.find(encoded)
        if at >= 0:
            if text.find(encoded, at + 1) >= 0:
                return None  # ambiguous
            pos = at + len(json.dumps(value[:offset], ensure_ascii=ascii_only)) - 1
            return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
    return None
