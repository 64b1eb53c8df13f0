"""The offline reader on the held-out scenes (test/data/generation/heldout/scenes): one scene
task by name, and the goals an instruction grounds to there, for the reader's tests."""

from __future__ import annotations

from pathlib import Path

from mango.cli.scenes import scene_file
from mango.generation.models import SceneTask
from mango.generation.offline.grounding import ground_instruction

SCENES = Path(__file__).resolve().parents[1] / "data" / "generation" / "heldout" / "scenes"


def scene_task(name: str) -> SceneTask:
    (task,) = scene_file(SCENES / f"{name}.json").task_objects
    return task


def goals(instruction: str, scene: str) -> list[tuple[str, str, str | None, str | None]]:
    """(kind, object, relation, target) per goal; the instruction must be read in full."""
    res = ground_instruction(instruction, scene_task(scene))
    assert res.read_in_full, res.problems
    return [(g.kind, g.obj, g.relation, g.target) for g in res.goals]
