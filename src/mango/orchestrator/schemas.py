"""What the orchestrator reads and writes: the plan, monitor signals, decisions, the episode
record. Each is a validated model; a decision's JSON Schema is what any decider's output must
satisfy (a model's answer is validated against it exactly like the rules' own)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mango.errors import InputError

# VoLo's vocabulary, one set for every mode; a mode allows a subset (`config.MODES`)
Action = Literal["continue", "next_subgoal", "recovery", "replan", "rewrite", "grasp_tool",
                 "place_tool", "abort"]
ToolName = Literal["vla", "grasp", "place", "halt", "noop"]
Phase = Literal["plan", "route", "recovery"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Subgoal(_Model):
    """One atomic subgoal: the instruction its tool is given, and how it is checked."""

    id: str  # "1", "2", ... in plan order
    instruction: str
    expert_step: int  # 0-based step of the scene's expert plan it corresponds to
    oracle_step: str | None = None  # the oracle's top-level step path that monitors it
    object: str | None = None  # what it moves (pick-and-place), or acts on
    destination: str | None = None  # where it goes (a region or an entity id)
    relation: str | None = None  # "in" | "on"
    object_phrase: str | None = None  # how perception and the tools are asked for it
    destination_phrase: str | None = None  # the place phrasing ("in the basket")


class Plan(_Model):
    """Decomposition of an instruction into atomic subgoals, stored with the initial scene."""

    instruction: str
    subgoals: list[Subgoal]
    ordered: bool  # must they run in this order (the oracle's execution mode)
    source: str  # where the decomposition came from ("oracle FILE", "instruction")
    initial_scene: dict[str, list[float]] = Field(default_factory=dict)  # id -> position


class Signal(_Model):
    """What a monitor saw: a completed subgoal, a failure, or nothing wrong."""

    t: float
    kind: Literal["completed", "failure"]
    subgoal: str | None = None
    reason: str  # the monitor's own word: regression, out_of_order, no_progress, ...
    detail: str = ""
    monitor: str


class Decision(_Model):
    """One decision: routing, recovery or a plan; `rule` names the rule (offline decider)."""

    phase: Phase
    action: Action | Literal["plan"]
    tool: ToolName = "noop"
    subgoal: str | None = None
    instruction: str | None = None  # rewrite: the VLA's new instruction
    remaining: list[str] | None = None  # replan: ids of the ORIGINAL subgoals still to do
    reason: str = ""
    rule: str | None = None


DECISION_SCHEMA: dict[str, Any] = Decision.model_json_schema()


def digest(data: Any) -> str:
    """A short stable digest of a decision's inputs (what it saw), for auditing a record."""
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class EpisodeRecord:
    """The JSONL episode record: one line per plan, signal, decision, tool run and event."""

    def __init__(self, path: str | Path | None = None,
                 on_line: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.lines: list[dict[str, Any]] = []
        self.on_line = on_line  # each line as it is written (a node publishes them)
        self.path = Path(path) if path is not None else None
        self._fh = None
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("w", encoding="utf-8")
            except OSError as exc:
                raise InputError(f"cannot write the episode record: {exc.strerror}",
                                 file=str(self.path)) from None

    def write(self, record: str, t: float, **data: Any) -> dict[str, Any]:
        """One line: `record` says what it is (plan, signal, decision, halt, tool_start,
        tool_end, world_event, cancelled, server_lost, result), `t` the robot time."""
        line = {"record": record, "t": round(t, 4), **data}
        self.lines.append(line)
        if self._fh is not None:
            self._fh.write(json.dumps(line, default=str) + "\n")
            self._fh.flush()
        if self.on_line is not None:
            self.on_line(line)
        return line

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
