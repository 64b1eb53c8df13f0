"""World-state records and traces (spec §3): the one format bags, traces and topics share."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mango.errors import InputError, from_validation_error
from mango.json_files import parse_json

EntityKind = Literal["object", "region", "surface", "fixture", "joint", "device", "robot"]
ENTITY_KINDS: tuple[str, ...] = EntityKind.__args__
ROBOT_PARTS: tuple[str, ...] = (
    "robot_gripper",
    "robot_left_finger",
    "robot_right_finger",
    "robot_hand",
)
DEFAULT_CLOSED_FRAC = 0.05

Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = tuple[Finite, Finite, Finite]
Quat = tuple[Finite, Finite, Finite, Finite]

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

    @field_validator("size")
    @classmethod
    def _size_non_negative(cls, v: Vec3 | None) -> Vec3 | None:
        if v is not None and min(v) < 0:
            raise ValueError("size must be non-negative")
        return v

    @field_validator("orientation")
    @classmethod
    def _unit_quaternion(cls, v: Quat | None) -> Quat | None:
        if v is not None and abs(math.sqrt(sum(c * c for c in v)) - 1.0) > 1e-3:
            raise ValueError("orientation must be a unit quaternion [w, x, y, z]")
        return v


class JointState(_Model):
    """A joint with its open and closed positions; openness u = (q-q_closed)/(q_open-q_closed)."""

    q: Finite
    q_open: Finite
    q_closed: Finite
    closed_frac: Finite | None = None  # close(j) when u <= this (default 0.05)
    open_frac: Finite | None = None  # open(j) when u >= this (default 1, per the spec)

    @field_validator("q_closed")
    @classmethod
    def _distinct(cls, v: float, info: Any) -> float:
        if "q_open" in info.data and info.data["q_open"] == v:
            raise ValueError("q_open and q_closed must differ")
        return v

    @property
    def openness(self) -> float:
        return (self.q - self.q_closed) / (self.q_open - self.q_closed)


class DeviceState(_Model):
    on: bool


class GripperState(_Model):
    width: Finite | None = None
    closed: bool | None = None


class WorldState(_Model):
    """One world state at time `t` (seconds)."""

    t: Finite
    objects: dict[str, EntityState] = Field(default_factory=dict)
    joints: dict[str, JointState] = Field(default_factory=dict)
    devices: dict[str, DeviceState] = Field(default_factory=dict)
    gripper: GripperState | None = None
    contacts: list[tuple[str, str]] = Field(default_factory=list)
    facts: dict[str, bool] = Field(default_factory=dict)

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
    """Read a whole trace file (spec §3)."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as fh:
            return list(iter_trace_lines(fh, file=str(p)))
    except OSError as exc:
        raise InputError(f"cannot read trace: {exc.strerror}", file=str(p)) from None


def write_trace(path: str | Path, states: Iterable[WorldState | dict[str, Any]]) -> int:
    """Write states as JSON Lines; returns how many were written."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for s in states:
            rec = s.to_record() if isinstance(s, WorldState) else s
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            n += 1
    return n
