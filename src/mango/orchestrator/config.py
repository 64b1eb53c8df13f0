"""Modes, monitors and deciders as data: what a run may do is chosen here, never by a code
path written for one variant."""

from __future__ import annotations

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
        if self.monitor_hz <= 0 or self.no_progress_s <= 0:
            raise InputError("monitor_hz and no_progress_s must be positive", field="monitor_hz")
        if self.vlm_monitor_hz <= 0:
            raise InputError(f"must be positive (got {self.vlm_monitor_hz})",
                             field="vlm_monitor_hz")
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


def parse_backend_opts(items: Sequence[str], field: str = "--opt") -> tuple[tuple[str, str], ...]:
    """`KEY=VALUE` items (the CLI's repeated `--opt`, the node's `model_options`) as pairs."""
    out: list[tuple[str, str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {item!r}", field=field)
        out.append((key.strip(), value))
    return tuple(out)
