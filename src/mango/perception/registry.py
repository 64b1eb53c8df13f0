"""Perception backends by name: the only place that knows the names.

Each factory imports its backend when called, so choosing `sim` never imports torch or
transformers. To add one: a module with a class implementing `base.PerceptionBackend` and a
`from_config(cfg: PerceptionConfig)` classmethod, and an entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mango.perception.base import PerceptionBackend, PerceptionConfig, PerceptionError


def _sim(cfg: PerceptionConfig) -> PerceptionBackend:
    from mango.perception.sim_segmentation import SimSegmentationBackend

    return SimSegmentationBackend.from_config(cfg)


def _tabletop(cfg: PerceptionConfig) -> PerceptionBackend:
    from mango.perception.tabletop import TabletopBackend

    return TabletopBackend.from_config(cfg)


def _aruco(cfg: PerceptionConfig) -> PerceptionBackend:
    from mango.perception.aruco import ArucoBackend

    return ArucoBackend.from_config(cfg)


def _owlv2(cfg: PerceptionConfig) -> PerceptionBackend:
    from mango.perception.open_vocabulary import Owlv2Backend

    return Owlv2Backend.from_config(cfg)


def _grounding_dino(cfg: PerceptionConfig) -> PerceptionBackend:
    from mango.perception.open_vocabulary import GroundingDinoBackend

    return GroundingDinoBackend.from_config(cfg)


@dataclass(frozen=True)
class BackendEntry:
    """How to make a backend, and what a caller must feed it without making one."""

    make: Callable[[PerceptionConfig], PerceptionBackend]
    # reads the simulator's segmentation (RGBDFrame.segmentation): ground truth, sim only
    privileged: bool = False
    needs_scene: bool = False  # grounds phrases on the scene's entity descriptions


BACKENDS: dict[str, BackendEntry] = {
    "sim": BackendEntry(_sim, privileged=True, needs_scene=True),
    "tabletop": BackendEntry(_tabletop),
    "aruco": BackendEntry(_aruco),
    "owlv2": BackendEntry(_owlv2), "grounding_dino": BackendEntry(_grounding_dino),
}


def backend_entry(name: str) -> BackendEntry:
    entry = BACKENDS.get(name)
    if entry is None:
        raise PerceptionError(f"unknown perception backend {name!r} "
                              f"(known: {', '.join(BACKENDS)})")
    return entry


def make_backend(cfg: PerceptionConfig) -> PerceptionBackend:
    return backend_entry(cfg.backend).make(cfg)
