"""`mango perception`: find the objects phrases describe; print fiducial marker sheets.

`detect` renders one camera of a sim scene at a seed, runs a perception backend on the frame
and prints detections with world-frame 3-D boxes (commands.md §2). Exit 0 when it looked
(phrases with no match are an answer, listed in `unmatched`), 2 on bad input, 1 when the run
failed. `markers` prints a marker sheet at true size.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from mango.cli.bounds import MAX_IMAGE_SIDE, SeedOpt

app = typer.Typer(help="Perception: detections with 3-D boxes in the world, marker sheets.",
                  no_args_is_help=True)


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


@app.command()
def detect(
    phrases: Annotated[list[str], typer.Argument(help="Noun phrases ('the black bowl').")],
    scene: Annotated[str, typer.Option("--scene", "-s", help="Scene name or YAML path.")],
    seed: SeedOpt = 0,
    backend: Annotated[str, typer.Option("--backend", help="Perception backend.")] = "sim",
    camera: Annotated[str, typer.Option("--camera", help="Camera to look with.")] = "front",
    max_results: Annotated[int, typer.Option(
        "--max-results", help="Detections per phrase at most (0: no limit).", min=0)] = 1,
    width: Annotated[int, typer.Option("--width", min=16, max=MAX_IMAGE_SIDE,
                                       help="Image width.")] = 640,
    height: Annotated[int, typer.Option("--height", min=16, max=MAX_IMAGE_SIDE,
                                        help="Image height.")] = 480,
    weights: Annotated[Path | None, typer.Option(
        "--weights", help="Local model folder (owlv2, grounding_dino).")] = None,
    marker_map: Annotated[Path | None, typer.Option(
        "--markers", help="Marker map YAML (aruco).")] = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Detect PHRASE... in the scene's initial state at SEED, seen by CAMERA."""
    from mango.errors import InputError
    from mango.perception.base import PerceptionConfig, PerceptionError, phrases_problem
    from mango.perception.registry import backend_entry, make_backend
    from mango.perception.sim_frames import sim_frame
    from mango.sim.env import SimEnv, as_scene
    from mango.sim.libero.scene_names import is_libero_scene

    if is_libero_scene(scene):
        out = _detect_libero(phrases, scene, seed, backend, camera, max_results, width, height)
        if json_output:
            print(json.dumps(out))
            return
        _print(out)
        return
    try:
        if (why := phrases_problem(phrases)) is not None:
            raise InputError(why, field="PHRASES")
        entry = backend_entry(backend)
        sc = as_scene(scene)
        env = SimEnv(sc, seed, cameras=(camera,), image_size=(width, height))
    except (InputError, PerceptionError) as exc:
        _fail(str(exc), 2)
    try:
        env.reset(seed)
        frame = sim_frame(env, camera)
        if not entry.privileged:
            frame = frame.without_privileged()
        options = {"markers": marker_map} if marker_map is not None else {}
        be = make_backend(PerceptionConfig(backend=backend, scene=sc, weights=weights,
                                           options=options))
        try:
            result = be.detect(frame, phrases, max_results)
        finally:
            be.close()
    except (InputError, PerceptionError) as exc:
        _fail(str(exc), 2)
    except (RuntimeError, OSError) as exc:
        _fail(f"detection failed: {exc}", 1)
    finally:
        env.close()
    out = {"detections": [d.to_json() for d in result.detections],
           "unmatched": list(result.unmatched), "messages": list(result.messages),
           "scene": sc.name, "seed": seed, "backend": backend, "camera": camera,
           "stamp": frame.stamp}
    if json_output:
        print(json.dumps(out))
        return
    _print(out)


def _detect_libero(phrases: list[str], scene: str, seed: int, backend: str, camera: str,
                   max_results: int, width: int, height: int) -> dict:
    """`detect` on LIBERO itself: the task at LIBERO's init state `seed`, one render of the
    camera (`front` = agentview, `wrist` = robot0_eye_in_hand, or LIBERO's own name), the
    `sim` backend on LIBERO's segmentation and depth, phrases grounded in the task's BDDL."""
    from mango.bddl.libero_oracle import scene_task
    from mango.cli.sim import name_libero_option
    from mango.errors import InputError
    from mango.perception.base import phrases_problem
    from mango.perception.libero_frames import libero_camera, libero_rgbd
    from mango.perception.sim_segmentation import SimSegmentationBackend
    from mango.sim.libero import LiberoClient, LiberoRuntimeError, parse_init_state, parse_scene
    from mango.sim.libero.client import find_venv, runtime_problem

    try:
        if (why := phrases_problem(phrases)) is not None:
            raise InputError(why, field="PHRASES")
        if backend != "sim":
            raise InputError(f"on LIBERO's scenes the 'sim' backend runs (LIBERO's own "
                             f"segmentation); '{backend}' is not wired there yet",
                             field="--backend")
        sc, init = parse_scene(scene, field="--scene"), parse_init_state(seed, field="--seed")
        problem = runtime_problem(find_venv())
        if problem:
            raise InputError(problem, field="--scene")
        with LiberoClient() as client:
            task = client.open(sc, init)
            frame = libero_rgbd(client.render(libero_camera(camera), width, height))
        be = SimSegmentationBackend.for_task(sc.name, scene_task(task.bddl))
        result = be.detect(frame, phrases, max_results)
    except InputError as exc:
        _fail(str(name_libero_option(exc)), 2)
    except LiberoRuntimeError as exc:
        _fail(str(exc), 1)
    return {"detections": [d.to_json() for d in result.detections],
            "unmatched": list(result.unmatched), "messages": list(result.messages),
            "scene": sc.name, "seed": init, "backend": backend, "camera": frame.camera,
            "stamp": frame.stamp}


def _print(out: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"{out['scene']} seed {out['seed']}: {out['backend']} on "
                  f"{out['camera']} (world frame, m)")
    for col in ("phrase", "entity", "score", "box_2d", "centroid", "size", "yaw"):
        table.add_column(col)
    for d in out["detections"]:
        table.add_row(d["phrase"], d["entity_id"] or "-", f"{d['score']:.2f}",
                      " ".join(map(str, d["box_2d"])),
                      " ".join(f"{v:.3f}" for v in d["centroid"]),
                      " ".join(f"{v:.3f}" for v in d["size"]), f"{d['yaw']:.2f}")
    console.print(table)
    for m in out["messages"]:
        console.print(f"[yellow]{m}[/yellow]")


def _ids(text: str, n_ids: int) -> list[int]:
    """'0-4,7' -> [0, 1, 2, 3, 4, 7]; every id of the dictionary (0..n_ids-1), at most n_ids
    of them, checked before a range is expanded (0-999999999 is one error, not gigabytes)."""
    from mango.errors import InputError

    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                a, b = (int(v) for v in part.split("-", 1))
            elif part:
                a = b = int(part)
            else:
                continue
        except ValueError:
            raise InputError(f"'{part}' is not an id or a range like 0-4", field="--ids") from None
        if not 0 <= a <= b < n_ids:
            raise InputError(f"'{part}' is not within the dictionary's ids, 0..{n_ids - 1}"
                             + (" (a range goes up: 0-4)" if a > b else ""), field="--ids")
        if len(out) + b - a + 1 > n_ids:
            raise InputError(f"more ids than the dictionary has ({n_ids})", field="--ids")
        out.extend(range(a, b + 1))
    return out


@app.command("markers")
def markers(
    ids: str = typer.Option(..., "--ids", help="marker ids: 0-4,7 (each in the dictionary, "
                            "at most its size in all)"),
    size_mm: float = typer.Option(..., "--size-mm", help="side of the black square, mm (two "
                                  "pixels a cell at --dpi up to the page's width)"),
    output: Path = typer.Option(..., "-o", "--output", help="sheet.png or sheet.pdf"),
    dictionary: str = typer.Option("4x4_50", "--dictionary",
                                   help="4x4_50, 5x5_100, apriltag_36h11, ..."),
    dpi: int = typer.Option(300, "--dpi", min=72, max=1200),
    page: str = typer.Option("a4", "--page", help="a4 or letter"),
) -> None:
    """Print a marker sheet at true size (print it at 100 % scale, no 'fit to page')."""
    from rich.console import Console

    from mango.cli.outputs import output_file, write_error
    from mango.errors import InputError
    from mango.perception.sheet import marker_sheet, write_sheet
    from mango.sim.markers import dictionary_size

    try:
        path = output_file(output, "marker sheet")
        marker_ids = _ids(ids, dictionary_size(dictionary))
        img = marker_sheet(dictionary, marker_ids, size_mm, dpi=dpi, page=page)
        try:
            write_sheet(path, img, dpi)
        except OSError as exc:
            raise write_error(exc, path) from None
    except InputError as exc:
        _fail(str(exc), 2)
    Console().print(f"{output}: {len(marker_ids)} markers ({dictionary}), {size_mm:g} mm "
                    f"squares at {dpi} DPI on {page}; print at 100 % scale")
