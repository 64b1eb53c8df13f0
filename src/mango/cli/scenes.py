"""What a `--scene`/`--scenes` option accepts: the spec §4 scene-objects JSON that `mango sim
objects` prints, or a sim scene itself (a `config/scenes/*.yaml` path or a shipped scene's
name), so a newcomer need not know the JSON exists to ground an oracle in a shipped scene."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mango.generation.models import SceneFile
    from mango.oracle.static_check import SceneEntities
    from mango.oracle.world_state import WorldState


def scene_file(path: Path) -> SceneFile:
    """Scene objects for `mango generate`: a scene-objects JSON, or a sim scene's objects."""
    from mango.generation.models import load_scene_file, parse_scene_file
    from mango.sim.scene import as_scene, is_scene_reference

    if is_scene_reference(str(path)):
        return parse_scene_file(as_scene(str(path)).task_objects(), str(path))
    return load_scene_file(path)


def lint_scene(path: Path, instruction: str | None) -> tuple[SceneEntities, WorldState | None]:
    """Grounding entities and a dry-run state for `mango oracle lint --scene`: a sim scene gives
    its objects (kinds, descriptions) and its initial state (seed 0) as the sample, so the dry
    run evaluates every condition in a state the sim really produces."""
    from mango.oracle.static_check import SceneEntities, load_scene
    from mango.sim.env import SimEnv
    from mango.sim.scene import as_scene, is_scene_reference

    if not is_scene_reference(str(path)):
        return load_scene(path, instruction)
    spec = as_scene(str(path))
    entities = SceneEntities.from_task_objects(spec.task_objects(), instruction, file=str(path))
    with SimEnv(spec, cameras=()) as env:
        return entities, env.world_state()
