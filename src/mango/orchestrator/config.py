"""Modes, monitors and deciders as data: what a run may do is chosen here, never by a code
path written for one variant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mango.errors import InputError


@dataclass(frozen=True)
class ModeSpec:
    """A mode: the tool that executes a subgoal and the decisions (action, tool) allowed."""

    name: str
    executor: Literal["vla", "tools"]
    pairs: frozenset[tuple[str, str]]  # allowed (action, tool) decisions

    def allows(self, action: str, tool: str = "noop") -> bool:
        return (action, tool) in self.pairs


_ROUTE = {("next_subgoal", "noop"), ("abort", "noop"), ("replan", "noop")}
MODES: dict[str, ModeSpec] = {
    # verbal steering only: the VLA is told again, or told something else
    "vla_only": ModeSpec("vla_only", "vla", frozenset(
        _ROUTE | {("continue", "vla"), ("rewrite", "vla")})),
    # the grasp/place chain: advance / continue / replan / abort, each with grasp|place|noop
    "tools_only": ModeSpec("tools_only", "tools", frozenset(
        _ROUTE | {("continue", "grasp"), ("continue", "place"), ("continue", "noop")})),
    # VLA steering plus the primitives: grasp only for a wrong object, place only for a
    # wrong destination
    "full": ModeSpec("full", "vla", frozenset(
        _ROUTE | {("continue", "vla"), ("rewrite", "vla"), ("grasp_tool", "grasp"),
                  ("place_tool", "place")})),
}
MONITORS = ("none", "oracle", "gt", "vlm")
DECIDERS = ("offline", "local", "vlm")
NOT_BUILT = {
    "mode": {"motor": "MotorMind's motor mode (ExecuteMotion batches) is not built yet"},
    "monitor": {"vlm": "the vlm monitor (images at a rate to a model) is not built yet"},
    "decider": {"vlm": "the vlm decider is not built yet (use --decider offline)",
                "local": "the local llama.cpp decider is not built yet (use --decider offline)"},
}


@dataclass(frozen=True)
class OrchestratorConfig:
    """One orchestrated run's choices and rates."""

    mode: str = "full"
    monitor: str = "oracle"
    decider: str = "offline"
    monitor_hz: float = 15.0  # how often the monitor context is read (VoLo: 0.2 Hz)
    no_progress_s: float = 10.0  # oracle monitor: no step completion for this long: a failure
    halt_settle_s: float = 0.3  # at least this long held still before deliberating
    max_recoveries: int = 3  # per subgoal, then abort
    finish_grace_s: float = 3.0  # a tool still running this long after its subgoal completed
    # is stopped (the expert ends itself; a VLA that does not is routed on)
    horizon_s: float | None = None  # robot time budget (default: the scene's horizon x 2)
    world: str = "physics"  # the monitor's and oracle's world state: physics | estimated

    def __post_init__(self) -> None:
        for key, value, known in (("mode", self.mode, (*MODES, "motor")),
                                  ("monitor", self.monitor, MONITORS),
                                  ("decider", self.decider, DECIDERS)):
            if value not in known:
                raise InputError(f"unknown {key} '{value}' (known: {', '.join(known)})",
                                 field=key)
            why = NOT_BUILT[key].get(value)
            if why:
                raise InputError(why, field=key)
        if self.world not in ("physics", "estimated"):
            raise InputError(f"unknown world '{self.world}' (known: physics, estimated)",
                             field="world")
        if self.monitor_hz <= 0 or self.no_progress_s <= 0:
            raise InputError("monitor_hz and no_progress_s must be positive", field="monitor_hz")

    @property
    def spec(self) -> ModeSpec:
        return MODES[self.mode]
