"""Modes, monitors and deciders as data: what a run may do is chosen here, never by a code
path written for one variant."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mango.errors import InputError


@dataclass(frozen=True)
class ModeSpec:
    """A mode: the tool that executes a subgoal and the decisions (action, tool) allowed."""

    name: str
    executor: Literal["vla", "tools", "motion"]
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
    # MotorMind's roles around mid-level motion batches (`orchestrator.motor`)
    "motor": ModeSpec("motor", "motion", frozenset(_ROUTE)),
}
MONITORS = ("none", "oracle", "gt", "vlm")
DECIDERS = ("offline", "local", "vlm")
NOT_BUILT: dict[str, dict[str, str]] = {
    "mode": {},
    "monitor": {},
    "decider": {},
}
IMAGE_FORMATS = ("png", "jpeg")


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
    # the model behind the `vlm` / `local` decider and the `vlm` monitor: a backend name of
    # `mango.llm.registry` (default: openai for vlm, local for local), the model, and the
    # backend's options as `mango generate --opt` takes them (base_url=..., timeout_s=...)
    backend: str | None = None
    model: str | None = None
    backend_opts: tuple[tuple[str, str], ...] = ()
    vlm_monitor_hz: float = 0.2  # how often the vlm monitor sends images (VoLo: 0.2 Hz)
    image_size: tuple[int, int] = (640, 480)  # (width, height) of the images a model sees
    image_format: str = "png"  # png | jpeg (data URLs)
    world: str = "physics"  # the monitor's and oracle's world state: physics | estimated

    def __post_init__(self) -> None:
        for key, value, known in (("mode", self.mode, tuple(MODES)),
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
        for key in ("monitor_hz", "no_progress_s", "halt_settle_s", "finish_grace_s",
                    "vlm_monitor_hz"):
            finite_positive(getattr(self, key), key)
        if self.horizon_s is not None:
            finite_positive(self.horizon_s, "horizon_s")
        if isinstance(self.max_recoveries, bool) or not isinstance(self.max_recoveries, int) \
                or self.max_recoveries < 0:
            raise InputError(f"must be a whole number, 0 or more (got {self.max_recoveries!r})",
                             field="max_recoveries")
        w, h = self.image_size
        if not (16 <= w <= 4096 and 16 <= h <= 4096):
            raise InputError(f"must be within 16..4096 pixels a side (got {w}x{h})",
                             field="image_size")
        if self.image_format not in IMAGE_FORMATS:
            raise InputError(f"must be one of {', '.join(IMAGE_FORMATS)} "
                             f"(got {self.image_format!r})", field="image_format")

    @property
    def spec(self) -> ModeSpec:
        return MODES[self.mode]


def finite_positive(value: float, field: str) -> float:
    """`value` as a float when it is a finite number above 0; else an `InputError` naming
    `field` (NaN passes every `<= 0` test, so it is refused here by name)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"must be a number (got {value!r})", field=field)
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"must be a finite number above 0 (got {value!r})", field=field)
    return float(value)


MAX_STEP_BUDGET = 2**32 - 1  # ExecuteTask's uint32


@dataclass(frozen=True)
class TaskBudgets:
    """An ExecuteTask goal's budgets as the loop takes them (None: no goal-given limit)."""

    horizon_s: float | None  # robot time (s); None: twice the scene's horizon
    max_decisions: int | None  # None: no limit


def task_budgets(time_budget: float, step_budget: int) -> TaskBudgets:
    """Check an ExecuteTask goal's numeric fields before anything runs (action/
    ExecuteTask.action): `time_budget` is 0 (the default: twice the scene's horizon) or a
    finite number of seconds above 0 (NaN, an infinity or a negative budget is refused);
    `step_budget` is 0 (no limit) or a whole number of decisions up to 2^32 - 1. Each refusal
    is an `InputError` naming the field."""
    if isinstance(time_budget, bool) or not isinstance(time_budget, int | float) or not (
            math.isfinite(time_budget) and time_budget >= 0):
        raise InputError("must be 0 (twice the scene's horizon) or a finite number of seconds "
                         f"above 0 (got {time_budget!r})", field="time_budget")
    horizon = float(time_budget) or None
    if isinstance(step_budget, bool) or not isinstance(step_budget, int) \
            or not 0 <= step_budget <= MAX_STEP_BUDGET:
        raise InputError(f"must be a whole number from 0 (no limit) to {MAX_STEP_BUDGET} "
                         f"(got {step_budget!r})", field="step_budget")
    return TaskBudgets(horizon, step_budget or None)


def parse_backend_opts(items: Sequence[str], field: str = "--opt") -> tuple[tuple[str, str], ...]:
    """`KEY=VALUE` items (the CLI's repeated `--opt`, the node's `model_options`) as pairs."""
    out: list[tuple[str, str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {item!r}", field=field)
        out.append((key.strip(), value))
    return tuple(out)
