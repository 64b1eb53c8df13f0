"""`mango primitives`: perception-grounded grasp and place in the embedded sim (issue #15).

`pick-place` is commands.md §3: grasp OBJECT, place it at DESTINATION (VoLo's phrasing),
print measured outcomes. `grasp` and `place` run one primitive and print what was measured.
Exit 0 when the primitives ran (a failed grasp is an answer), 2 on bad input, 1 when the run
itself failed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from mango.cli.bounds import SeedOpt, checked_phrase

app = typer.Typer(help="Grasp and place primitives grounded in perception (embedded sim).",
                  no_args_is_help=True)

SceneOpt = Annotated[str, typer.Option("--scene", "-s", help="Scene name or YAML path.")]
BackendOpt = Annotated[str, typer.Option("--perception", help="Perception backend.")]
CameraOpt = Annotated[str, typer.Option("--camera", help="Camera to look with.")]


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


class _Session:
    """The sim, the backend and the primitives of one command; states kept for --trace."""

    def __init__(self, scene: str, seed: int, backend: str, camera: str) -> None:
        from mango.perception.base import PerceptionConfig
        from mango.perception.registry import backend_entry, make_backend
        from mango.primitives.runner import SimPrimitives
        from mango.sim.env import SimEnv, as_scene

        entry = backend_entry(backend)
        sc = as_scene(scene)
        # the wrist camera too: a second look where the chosen camera's view is blocked
        self.env = SimEnv(sc, seed, cameras=tuple(dict.fromkeys((camera, "wrist"))),
                          image_size=(640, 480))
        self.states = [self.env.world_state()]
        try:
            self.backend = make_backend(PerceptionConfig(backend=backend, scene=sc))
        except BaseException:
            self.env.close()
            raise
        self.prims = SimPrimitives(self.env, self.backend, camera, privileged=entry.privileged,
                                   on_state=self.states.append)

    def close(self) -> None:
        self.backend.close()
        self.env.close()


def _open(scene: str, seed: int, backend: str, camera: str) -> _Session:
    from mango.errors import InputError
    from mango.perception.base import PerceptionError

    try:
        return _Session(scene, seed, backend, camera)
    except (InputError, PerceptionError) as exc:
        _fail(str(exc), 2)


def _parse_destination(text: str) -> Any:
    from mango.errors import InputError
    from mango.primitives.planning import parse_destination

    try:
        return parse_destination(text)
    except InputError as exc:
        _fail(str(exc), 2)


def _grasp_json(g: Any) -> dict[str, Any]:
    return {"status": g.status, "entity_id": g.entity_id, "grasped": g.grasped,
            "message": g.message, "width": None if g.width is None else round(g.width, 4),
            "finger_contacts": g.finger_contacts, "approach": g.approach}


def _place_json(p: Any) -> dict[str, Any]:
    return {"status": p.status, "release_position": p.release_position,
            "satisfied": p.satisfied, "satisfied_truth": p.satisfied_truth,
            "destination_id": p.destination_id, "message": p.message}


def _write_trace(path: Path | None, states: list) -> None:
    if path is None:
        return
    from mango.oracle.world_state import write_trace

    write_trace(path, states)


@app.command(name="pick-place")
def pick_place(
    obj: Annotated[str, typer.Argument(metavar="OBJECT", help="What to grasp ('the bowl').",
                                       callback=checked_phrase)],
    destination: Annotated[str, typer.Argument(
        metavar="DESTINATION", callback=checked_phrase,
        help="'in the basket', 'on the plate', 'empty space next to the bowl', 'empty space on "
        "the table'.")],
    scene: SceneOpt,
    seed: SeedOpt = 0,
    perception: BackendOpt = "sim",
    camera: CameraOpt = "front",
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="Write the run's ground-truth world states (JSON Lines).")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Grasp OBJECT and place it at DESTINATION; both outcomes measured (commands.md §3)."""
    req = _parse_destination(destination)
    s = _open(scene, seed, perception, camera)
    try:
        g = s.prims.grasp(obj, req)
        if g.grasped:
            p = s.prims.place(req, obj)
        else:
            from mango.primitives.runner import PlaceOutcome

            p = PlaceOutcome("rejected", None, False, f"not placed: {g.message}")
        _write_trace(trace, s.states)
    except (RuntimeError, OSError) as exc:
        _fail(f"the run failed: {exc}", 1)
    finally:
        s.close()
    message = g.message if not g.grasped else p.message
    out = {"grasp": _grasp_json(g), "place": _place_json(p), "message": message,
           "scene": s.env.scene.name, "seed": seed, "perception": perception}
    if json_output:
        print(json.dumps(out))
        return
    print(f"grasp: {g.status} - {g.message}")
    print(f"place: {p.status} - {p.message}")


@app.command()
def grasp(
    phrase: Annotated[str, typer.Argument(help="What to grasp ('the alphabet soup').",
                                          callback=checked_phrase)],
    scene: SceneOpt,
    seed: SeedOpt = 0,
    perception: BackendOpt = "sim",
    camera: CameraOpt = "front",
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Grasp PHRASE and print the measured outcome (gripper width, finger contacts)."""
    s = _open(scene, seed, perception, camera)
    try:
        g = s.prims.grasp(phrase)
    except (RuntimeError, OSError) as exc:
        _fail(f"the run failed: {exc}", 1)
    finally:
        s.close()
    if json_output:
        print(json.dumps(_grasp_json(g)))
        return
    print(f"grasp: {g.status} - {g.message}")


@app.command()
def place(
    destination: Annotated[str, typer.Argument(
        metavar="PHRASE", callback=checked_phrase,
        help="Destination: 'in the basket', 'empty space next to the bowl'.")],
    scene: SceneOpt,
    obj: Annotated[str | None, typer.Option(
        "--object", callback=checked_phrase, help="What to grasp first (default: the first "
        "object the scene's expert plan moves).")] = None,
    seed: SeedOpt = 0,
    perception: BackendOpt = "sim",
    camera: CameraOpt = "front",
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Grasp an object, then place it at PHRASE and print the measured outcome."""
    req = _parse_destination(destination)
    s = _open(scene, seed, perception, camera)
    try:
        if obj is None:
            first = next((k.obj for k in s.env.scene.expert if k.skill == "pick_place"), None)
            if first is None:
                _fail(f"scene '{s.env.scene.name}' moves no object in its expert plan: "
                      "give --object", 2)
            ent = s.env.scene.entity(first)
            obj = ent.description or first
        g = s.prims.grasp(obj, req)
        if not g.grasped:
            _fail(f"could not grasp '{obj}' before placing: {g.message}", 1)
        p = s.prims.place(req, obj)
    except (RuntimeError, OSError) as exc:
        _fail(f"the run failed: {exc}", 1)
    finally:
        s.close()
    if json_output:
        print(json.dumps(_place_json(p)))
        return
    print(f"place: {p.status} - {p.message}")
