"""LIBERO itself as a runtime (issue #34): its tasks, meshes, init states and success check in
their own process (`worker.py` in `.venv-libero`), driven by `LiberoClient`; world states of
spec §3 built from its simulation; scene names `libero/<suite>/<task>`."""

from mango.sim.libero.client import LiberoClient, LiberoRuntimeError, LiberoTask
from mango.sim.libero.scene_names import (
    SUITES,
    LiberoScene,
    is_libero_scene,
    parse_init_state,
    parse_scene,
)
from mango.sim.libero.world import world_state

__all__ = [
    "SUITES",
    "LiberoClient",
    "LiberoRuntimeError",
    "LiberoScene",
    "LiberoTask",
    "is_libero_scene",
    "parse_init_state",
    "parse_scene",
    "world_state",
]
