"""What a grasp/place server keeps between goals, without ROS: the scene it plans in (it may
follow a simulator's), the executor (what is held and what was seen: a new one after a scene
change or a reset, which the measured time going back reveals), and a goal's fields turned
into a primitive call with every refusal worded (an empty target, a destination outside the
place phrasing, no scene yet, a measurement that stopped coming).

The `primitives_node` gives it each goal's ports (how that goal sees, moves, is cancelled
and reports progress) and adapts messages; the executor made once per scene reaches the
running goal's ports through the session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from mango.errors import InputError
from mango.primitives.executor import (
    Executed,
    GraspOutcome,
    Measurement,
    Perceived,
    PlaceOutcome,
    PrimitiveExecutor,
    PrimitivePorts,
)
from mango.primitives.planning import parse_destination
from mango.sim.scene import SceneSpec, as_scene

RESET_JUMP = 0.5  # s the measured time may go back before it counts as a reset

MakeExecutor = Callable[[SceneSpec, PrimitivePorts], PrimitiveExecutor]


class PrimitiveSession:
    """One primitive at a time on one arm (the caller serialises goals); thread-safe for the
    scene and time updates that arrive between and during goals."""

    def __init__(self, make_executor: MakeExecutor, scene: SceneSpec | None = None) -> None:
        self._make = make_executor
        self._lock = threading.Lock()
        self._scene = scene
        self._executor: PrimitiveExecutor | None = None
        self._goal: PrimitivePorts | None = None
        self._last_t = 0.0

    @property
    def scene(self) -> SceneSpec | None:
        return self._scene

    def follow_scene(self, name: str) -> None:
        """The simulator names its scene: a new one means nothing is held. `InputError` for
        a name that is no scene."""
        if not name or (self._scene is not None and name == self._scene.name):
            return
        scene = as_scene(name)
        with self._lock:
            self._scene, self._executor = scene, None

    def observe_time(self, t: float) -> None:
        """A measurement's time: one that goes back is a reset (nothing held, nothing seen)."""
        with self._lock:
            if t < self._last_t - RESET_JUMP:
                self._executor = None
            self._last_t = t

    def phrase_of(self, target: str) -> str:
        """An entity id of the scene becomes its description (what perception grounds)."""
        scene = self._scene
        ent = next((e for e in scene.entities if e.id == target), None) if scene else None
        if ent is None:
            return target
        return ent.description or ent.id.rsplit("_", 1)[0].replace("_", " ")

    def _executor_for(self, ports: PrimitivePorts) -> PrimitiveExecutor | str:
        try:
            # notices a reset (time went back) before a goal uses the old executor
            self.observe_time(ports.measure().t)
        except RuntimeError as exc:
            return f"measuring: {exc}"
        with self._lock:
            if self._scene is None:
                return ("no scene yet: set the 'scene' parameter, or run sim_node with "
                        "segmentation:=true")
            if self._executor is None:
                self._executor = self._make(self._scene, self._delegate())
            self._goal = ports
            return self._executor

    def _delegate(self) -> PrimitivePorts:
        """Ports that reach the running goal's (the executor outlives goals)."""

        def goal() -> PrimitivePorts:
            assert self._goal is not None
            return self._goal

        def detect(phrases: list[str]) -> Perceived:
            return goal().detect(phrases)

        def execute_chunk(chunk: np.ndarray) -> Executed:
            return goal().execute_chunk(chunk)

        def measure() -> Measurement:
            m = goal().measure()
            self.observe_time(m.t)
            return m

        return PrimitivePorts(detect=detect, execute_chunk=execute_chunk, measure=measure,
                              cancelled=lambda: goal().cancelled(),
                              feedback=lambda phase, p: goal().feedback(phase, p))

    def grasp(self, target: str, ports: PrimitivePorts) -> GraspOutcome:
        """A Grasp goal: `target` a phrase or an entity id of the scene."""
        target = target.strip()
        if not target:
            return GraspOutcome("rejected", None, False, "no target given")
        ex = self._executor_for(ports)
        if isinstance(ex, str):
            return GraspOutcome("rejected", None, False, ex)
        try:
            return ex.grasp(self.phrase_of(target))
        except RuntimeError as exc:  # the measurement stopped coming
            return GraspOutcome("failed", None, False, f"measuring: {exc}")

    def place(self, destination: str, object_hint: str, ports: PrimitivePorts) -> PlaceOutcome:
        """A Place goal: `destination` in the place phrasing, `object_hint` what is held (a
        phrase or an entity id; "" for what the grasp saw)."""
        try:
            req = parse_destination(destination)
        except InputError as exc:
            return PlaceOutcome("rejected", None, False, str(exc))
        ex = self._executor_for(ports)
        if isinstance(ex, str):
            return PlaceOutcome("rejected", None, False, ex)
        hint = object_hint.strip()
        try:
            return ex.place(req, self.phrase_of(hint) if hint else None)
        except RuntimeError as exc:
            return PlaceOutcome("failed", None, False, f"measuring: {exc}")
