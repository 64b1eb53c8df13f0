"""World-state records and traces (spec §3): the one format bags, traces and topics share."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from mango.errors import InputError, from_validation_error
from mango.json_files import parse_json, read_lines

EntityKind = Literal["object", "region", "surface", "fixture", "joint", "device", "robot"]
ENTITY_KINDS: tuple[str, ...] = EntityKind.__args__
ROBOT_PARTS: tuple[str, ...] = (
    "robot_gripper",
    "robot_left_finger",
    "robot_right_finger",
    "robot_hand",
)
DEFAULT_CLOSED_FRAC = 0.05

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]

_WS = re.compile(r"\s+")


def normalize_atom(atom: str) -> str:
    """Fact keys are ground atoms whose whitespace is insignificant."""
    return _WS.sub("", atom)


class _Model(BaseModel):
    # Unknown fields are allowed and ignored (spec: readers ignore fields they do not know).
    model_config = ConfigDict(extra="ignore", frozen=False)


class EntityState(_Model):
    """An object, region, surface, fixture or robot part with its box."""

    position: Vec3
    orientation: Quat | None = None  # [w, x, y, z]; None means identity (not given)
    size: Vec3 | None = None  # full extent of the axis-aligned box in the entity frame
    kind: EntityKind = "object"
    parent: str | None = None

    @field_validator("position", "orientation", "size")
    @classmethod
    def _rules(cls, v: Any, info: ValidationInfo) -> Any:
        return _checked(_ENTITY_RULES[info.field_name], v)


class JointState(_Model):
    """A joint with its open and closed positions; openness u = (q-q_closed)/(q_open-q_closed)."""

    q: float
    q_open: float
    q_closed: float
    closed_frac: float | None = None  # close(j) when u <= this (default 0.05)
    open_frac: float | None = None  # open(j) when u >= this (default 1, per the spec)

    @field_validator("q", "q_open", "q_closed", "closed_frac", "open_frac")
    @classmethod
    def _rules(cls, v: float | None, info: ValidationInfo) -> float | None:
        _checked(finite_problem, None if v is None else [v])
        if info.field_name == "q_closed" and "q_open" in info.data:
            _checked(lambda closed: limits_problem(info.data["q_open"], closed), v)
        return v

    @property
    def openness(self) -> float:
        return (self.q - self.q_closed) / (self.q_open - self.q_closed)


class DeviceState(_Model):
    on: bool


class GripperState(_Model):
    width: float | None = None
    closed: bool | None = None

    @field_validator("width")
    @classmethod
    def _rules(cls, v: float | None) -> float | None:
        _checked(finite_problem, None if v is None else [v])
        return v


# ------------------------------------------------------------------ validity (one set of rules)
# What makes a recorded value unusable as evidence. The JSON reader applies these rules through
# the models' validators (a trace file holding such a value is refused, naming its line and
# field); the decoder of live and recorded messages, which builds states without validation
# for speed, applies the same rules (`entity_problem`, `joint_problem`, `gripper_problem`,
# `duplicate_ids`) and says what broke them, and the oracle node, `mango replay` and
# `mango bag export` all skip such a state: a verdict from part of a world can be wrong (drop
# the table and the soup on it counts as lifted).

_UNIT_LOW, _UNIT_HIGH = (1 - 1e-3) ** 2, (1 + 1e-3) ** 2  # |q| within 1e-3 of 1


def _finite(values: Iterable[float]) -> bool:
    return all(math.isfinite(v) for v in values)


def finite_problem(values: Iterable[float] | None) -> str | None:
    if values is not None and not _finite(values):
        return "must be finite"
    return None


def size_problem(size: Iterable[float] | None) -> str | None:
    if size is None:
        return None
    return finite_problem(size) or ("must be non-negative" if min(size) < 0 else None)


def orientation_problem(quat: Iterable[float] | None) -> str | None:
    if quat is None:
        return None
    if not _finite(quat):
        return "must be finite"
    if abs(math.sqrt(sum(c * c for c in quat)) - 1.0) > 1e-3:
        return "must be a unit quaternion [w, x, y, z]"
    return None


def limits_problem(q_open: float, q_closed: float) -> str | None:
    if q_open == q_closed:
        return f"q_open and q_closed must differ (both {q_open})"
    return None


_ENTITY_RULES = {"position": finite_problem, "size": size_problem,
                 "orientation": orientation_problem}


def _checked(rule: Any, value: Any) -> Any:
    problem = rule(value)
    if problem:
        raise ValueError(problem)
    return value


def entity_problem(ent: EntityState) -> str | None:
    """Why an entity's numbers cannot be used, or None."""
    pos, size, quat = ent.position, ent.size, ent.orientation
    # Fast path (every state of every stream comes here): one sum is finite exactly when all
    # its terms are, short of an overflow, which the full rules sort out.
    total = pos[0] + pos[1] + pos[2]
    if size is not None:
        total += size[0] + size[1] + size[2]
    if quat is not None:
        total += quat[0] + quat[1] + quat[2] + quat[3]
    if (total - total == 0.0 and (size is None or min(size) >= 0.0)
            and (quat is None or _UNIT_LOW <= quat[0] * quat[0] + quat[1] * quat[1]
                 + quat[2] * quat[2] + quat[3] * quat[3] <= _UNIT_HIGH)):
        return None
    for name, rule in _ENTITY_RULES.items():
        value = getattr(ent, name)
        problem = rule(value)
        if problem:
            return f"{name} {list(value)} {problem}"
    return None


def joint_problem(joint: JointState) -> str | None:
    values = [joint.q, joint.q_open, joint.q_closed]
    values += [v for v in (joint.closed_frac, joint.open_frac) if v is not None]
    if finite_problem(values):
        return f"q, q_open, q_closed and the fractions must be finite ({values})"
    return limits_problem(joint.q_open, joint.q_closed)


def gripper_problem(gripper: GripperState) -> str | None:
    if gripper.width is not None and finite_problem([gripper.width]):
        return f"width {gripper.width} must be finite"
    return None


def duplicate_ids(ids: Iterable[str]) -> list[str]:
    """Ids that occur more than once (a message's entity lists; JSON objects cannot)."""
    seen: set[str] = set()
    return sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]


GRIPPER_FINGERS = ("robot_left_finger", "robot_right_finger")


def grasp_facts(contacts: Iterable[tuple[str, str]], movable: Iterable[str]) -> dict[str, bool]:
    """`grasped(x)` facts for the movable entities: x is held when both fingers touch it.

    The simulator (from its physics contacts) and the perception-based estimator (from the
    contacts it infers) decide a grasp with this one rule, so the two world states agree on
    what a grasp is."""
    touching: dict[str, set[str]] = {}
    for a, b in contacts:
        touching.setdefault(a, set()).add(b)
        touching.setdefault(b, set()).add(a)
    return {f"grasped({e})": all(f in touching.get(e, ()) for f in GRIPPER_FINGERS)
            for e in movable}


class WorldState(_Model):
    """One world state at time `t` (seconds)."""

    t: float  # world time (s); a state without a finite one is no evidence at all
    objects: dict[str, EntityState] = Field(default_factory=dict)
    joints: dict[str, JointState] = Field(default_factory=dict)
    devices: dict[str, DeviceState] = Field(default_factory=dict)
    gripper: GripperState | None = None
    contacts: list[tuple[str, str]] = Field(default_factory=list)
    facts: dict[str, bool] = Field(default_factory=dict)

    @field_validator("t")
    @classmethod
    def _rules(cls, v: float) -> float:
        _checked(finite_problem, [v])
        return v

    def to_record(self) -> dict[str, Any]:
        """The spec's JSON record; optional fields that were not given are left out."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=False)

    def fact(self, atom: str) -> bool | None:
        """The simulator's own decision for a ground atom, if it made one."""
        if not self.facts:
            return None
        table = self.__dict__.get("_facts_norm")
        if table is None:
            table = {normalize_atom(k): v for k, v in self.facts.items()}
            self.__dict__["_facts_norm"] = table
        return table.get(normalize_atom(atom))


def parse_world_state(record: Any, file: str | None = None, line: int | None = None) -> WorldState:
    """Validate one record (a dict), raising `InputError` that names file, line and field."""
    if not isinstance(record, dict):
        raise InputError("a world state must be a JSON object", file=file, line=line)
    try:
        return WorldState.model_validate(record)
    except ValidationError as exc:
        raise from_validation_error(exc, file=file, line=line) from None


def iter_trace_lines(lines: Iterable[str], file: str | None = None) -> Iterator[WorldState]:
    """Parse JSON Lines world states; blank lines are skipped; time must not go backwards."""
    for _, state in iter_trace_records(lines, file=file):
        yield state


def iter_trace_records(
    lines: Iterable[str], file: str | None = None
) -> Iterator[tuple[int, WorldState]]:
    """Like `iter_trace_lines`, with each state's 1-based line number (for error messages)."""
    last_t = -math.inf
    for lineno, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        record = parse_json(text, file=file, line=lineno)
        state = parse_world_state(record, file=file, line=lineno)
        if state.t < last_t:
            raise InputError(
                f"time goes backwards ({state.t} after {last_t})", file=file, line=lineno, field="t"
            )
        last_t = state.t
        yield lineno, state


def read_trace(path: str | Path) -> list[WorldState]:
    """Read a whole trace file (spec §3): a regular file, streamed line by line
    (`json_files.read_lines`)."""
    with read_lines(path, "trace") as lines:
        return list(iter_trace_lines(lines, file=str(path)))


def trace_lines(states: Iterable[WorldState | dict[str, Any]]) -> Iterator[str]:
    """The JSON Lines of a trace, one state per line (the one writer of the format)."""
    for s in states:
        rec = s.to_record() if isinstance(s, WorldState) else s
        yield json.dumps(rec, separators=(",", ":")) + "\n"


def write_trace(path: str | Path, states: Iterable[WorldState | dict[str, Any]]) -> int:
    """Write states as JSON Lines; returns how many were written."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for line in trace_lines(states):
            fh.write(line)
            n += 1
    return n
