"""A campaign's generated oracles (`oracles: generated`): MANGO modules I-III with the offline
planner, once per campaign, before any episode runs.

The library (modules I and II) is built over all the campaign's task instructions, then one
oracle per task (module III) grounded in the sim scene's own objects; each is scored as
`mango generate score` scores it (validity, executability, similarity to the hand-written
oracle), and the table goes in the store for the report. The oracles are written under
`DIR/generation/` and the episodes are judged, and labelled, against them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mango.errors import InputError

BACKEND = "offline"


def generate_oracles(tasks: list[str], out: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """(task -> generated oracle file, the generation table) for the campaign's tasks."""
    from mango.generation.backends import make_backend
    from mango.generation.engine import load_function_library
    from mango.generation.metrics import score_oracle
    from mango.generation.models import parse_scene_file, select_scene
    from mango.generation.runner import Session, run_library, run_oracle, slugify
    from mango.sim.env import as_scene
    from mango.sim.runner import load_oracle_json

    t0 = time.perf_counter()
    scenes = {t: as_scene(t) for t in tasks}
    library, catalog = load_function_library(None)
    session = Session(make_backend(BACKEND, None), library, catalog)
    folder = out / "generation"
    instructions = list(dict.fromkeys(s.instruction for s in scenes.values()))
    lib = run_library(session, instructions, folder)
    pipe = session.pipeline()
    files: dict[str, str] = {}
    rows = []
    for task, scene in scenes.items():
        entry = select_scene(parse_scene_file(scene.task_objects(), task), scene.instruction,
                             task)
        path = folder / "oracles" / f"{slugify(scene.name)}.json"
        run = run_oracle(session, scene.instruction, entry,
                         (lib.atomic_library, lib.oracle_library), path, pipe)
        truth, _ = load_oracle_json(scene)
        score = score_oracle(run.oracle.to_json_dict(), entry, truth, library)
        if not score.valid:
            raise InputError(f"the generated oracle of task '{task}' is not valid: "
                             f"{'; '.join(score.problems or [])}", file=str(path),
                             field="oracles")
        files[task] = str(path.resolve())
        rows.append({"task": task, "file": str(path.relative_to(out)),
                     "approved": run.approved, "iterations": run.module3.iterations,
                     "seconds": round(run.module3.seconds, 4), "valid": score.valid,
                     "executable": score.executable,
                     "similarity": None if score.similarity is None
                     else round(score.similarity, 4)})
    table = {"backend": BACKEND, "library_approved": lib.approved,
             "seconds": round(time.perf_counter() - t0, 3), "oracles": rows}
    return files, table
