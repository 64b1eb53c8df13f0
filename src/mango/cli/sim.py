"""`mango sim`: run the embedded Franka sim with the scripted expert (and faults).

`run` writes the spec §3 world-state trace, a labels file with the run's ground truth and
optionally a video; `scenes` lists the shipped scenes; `eval` measures the expert's success
rate per scene; `export-sdf` writes a scene as a Gazebo world. Bad input exits 2 with one
`error: ...` line on stderr.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from mango.cli.bounds import MAX_IMAGE_SIDE, MAX_SEED_COUNT, SEED_MAX, SeedOpt

if TYPE_CHECKING:
    from rich.console import Console

    from mango.errors import InputError
    from mango.sim.runner import EpisodeResult

app = typer.Typer(help="Embedded MuJoCo Franka: LIBERO-10 scenes, scripted expert, faults.",
                  no_args_is_help=True)

MAX_CAMERA_RATE = 1000.0  # Hz: a sensor's update rate; past this a world renders nothing else

SceneOpt = Annotated[str, typer.Option("--scene", "-s", help="Scene name (e.g. stove_moka) or "
                                       "path to a scene YAML.")]


def _fail(exc: InputError) -> NoReturn:
    sys.stderr.write(f"error: {exc}\n")
    raise typer.Exit(2)


@app.command()
def scenes(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List the shipped scenes with their task and oracle file."""
    from rich.console import Console
    from rich.table import Table

    from mango.errors import InputError
    from mango.sim.scene import REPO_ROOT, list_scenes, load_scene

    rows = []
    try:
        for p in list_scenes():
            sc = load_scene(p)
            oracle_ok = bool(sc.oracle) and (REPO_ROOT / (sc.oracle or "")).exists()
            rows.append({"name": sc.name, "task_index": sc.task_index, "file": str(p),
                         "instruction": sc.instruction, "goal": sc.goal, "oracle": sc.oracle,
                         "oracle_exists": oracle_ok})
    except InputError as exc:
        _fail(exc)
    if json_output:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="scenes")
    for col in ("name", "#", "instruction", "oracle"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], str(r["task_index"]), r["instruction"],
                      "yes" if r["oracle_exists"] else "[red]missing[/red]")
    Console().print(table)


@app.command()
def objects(
    scene: Annotated[list[str] | None, typer.Option(
        "--scene", "-s", help="Scene name or YAML (repeatable: one entry each).")] = None,
    all_scenes: Annotated[bool, typer.Option(
        "--all", help="Every shipped scene (config/tasks/libero10_scenes.json is this).")]
    = False,
) -> None:
    """Print scenes' objects in the spec §4 form: the `--scene(s)` input of `mango generate`
    and `mango oracle lint` (which also take a scene YAML directly)."""
    from mango.errors import InputError
    from mango.sim.scene import list_scenes, resolve_scene, scenes_task_objects

    try:
        if all_scenes == bool(scene):
            raise InputError("give --scene (one or more) or --all", field="--scene")
        paths = list_scenes() if all_scenes else [resolve_scene(s) for s in scene or []]
        print(json.dumps(scenes_task_objects(paths), indent=2))
    except InputError as exc:
        _fail(exc)


@app.command()
def run(
    scene: SceneOpt,
    trace: Annotated[Path, typer.Option("--trace", help="Output world-state trace (JSONL).")],
    seed: SeedOpt = 0,
    fault: Annotated[str | None, typer.Option(
        "--fault", help="Inject KIND@WHEN: drop@FRACTION, stall@SECONDS, skip@STEP, "
        "wrong_object@STEP, wrong_place@STEP, knock_out@STEP.")] = None,
    labels: Annotated[Path | None, typer.Option(
        "--labels", help="Ground-truth labels JSON (default: next to the trace).")] = None,
    video: Annotated[Path | None, typer.Option("--video", help="Write an MP4 (or GIF).")] = None,
    camera: Annotated[str, typer.Option("--camera", help="Camera for the video.")] = "front",
    world_state: Annotated[str, typer.Option(
        "--world-state", help="truth: the physics; estimated: what the perception-based "
        "estimator made of the cameras (markers) and joint states alone.")] = "truth",
    markers: Annotated[Path | None, typer.Option(
        "--markers", help="Marker map YAML for --world-state estimated (default: "
        "sim.markers.auto_marker_map: solid tops, container walls and floors, drawer, door "
        "and knob markers).")] = None,
    states: Annotated[Path | None, typer.Option(
        "--states", help="LIBERO scenes: write LIBERO's simulator state (get_sim_state) of "
        "every world state of the trace, as an .npz with `states` (N x D) and `t` (N).")]
    = None,
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", min=1, max=10000, help="LIBERO scenes: control steps (20 Hz) at most "
        "(default: LeRobot's per suite plus 10 settling steps).")] = None,
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print the labels as one JSON object on stdout (LIBERO scenes add "
        "libero_success).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Run the scripted expert on a scene (or LIBERO itself: --scene libero/SUITE/TASK, --seed
    = LIBERO's init state) and write its trace, labels and video."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from mango.errors import InputError
    from mango.sim.env import as_scene
    from mango.sim.expert.policy import ExpertPolicy
    from mango.sim.faults import parse_fault
    from mango.sim.libero.scene_names import is_libero_scene
    from mango.sim.runner import run_episode, write_outputs

    console = Console(stderr=True, quiet=quiet or json_output)
    if is_libero_scene(scene):
        unused = {"--fault": fault, "--video": video, "--markers": markers,
                  "--world-state estimated": world_state if world_state != "truth" else None}
        _run_libero(scene, seed, trace, labels, states, max_steps, json_output, console, unused)
        return
    try:
        for flag, given in (("--states", states), ("--max-steps", max_steps)):
            if given is not None:
                raise InputError(f"{flag} is for LIBERO scenes (libero/SUITE/TASK)", field=flag)
        sc = as_scene(scene)
        f = parse_fault(fault) if fault else None
        if video is not None and video.suffix.lower() not in (".mp4", ".gif"):
            raise InputError("video must end in .mp4 or .gif", field="video")
        labels_path = labels or trace.with_suffix(".labels.json")
        if world_state not in ("truth", "estimated"):
            raise InputError(f"--world-state must be truth or estimated, not '{world_state}'",
                             field="world-state")
        if markers is not None and world_state != "estimated":
            raise InputError("--markers needs --world-state estimated", field="markers")
        if world_state == "estimated" and video is not None:
            raise InputError("--video is for --world-state truth runs", field="video")
        mm = None
        if markers is not None:
            from mango.sim.markers import load_marker_map

            mm = load_marker_map(markers)
            mm.check_scene(sc, file=str(markers))
        expert = ExpertPolicy(sc, f)  # validates the fault against the task first
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                      TextColumn("{task.completed:.1f}/{task.total:.0f} s sim"),
                      TimeElapsedColumn(), console=console, transient=True) as progress:
            task = progress.add_task(f"{sc.name} seed {seed}" + (f" {f}" if f else ""),
                                     total=sc.horizon)
            if world_state == "estimated":
                from mango.perception.episode import estimated_episode

                ep = estimated_episode(sc, seed, f, markers=mm, expert=expert,
                                       on_state=lambda s: progress.update(task, completed=s.t))
                # the labels are the physics' (the same for both); the trace, the estimate
                result = replace(ep.result, states=ep.estimated)
            else:
                result = run_episode(
                    sc, seed, f, video_camera=camera if video else None, expert=expert,
                    on_state=lambda s: progress.update(task, completed=s.t),
                )
        write_outputs(result, trace, labels_path, video)
    except InputError as exc:
        _fail(exc)
    if json_output:
        print(json.dumps(result.labels))
        return
    _summary(Console(quiet=quiet), result, trace, labels_path, video)


_LIBERO_OPTIONS = {"suite": "--scene", "task": "--scene", "init": "--seed", "camera": "--camera",
                   "width": "--width", "height": "--height"}


def name_libero_option(exc: InputError) -> InputError:
    """LIBERO's process names the argument of its request it refused: name the command's
    option instead (`--scene`, `--seed`, ...)."""
    exc.field = _LIBERO_OPTIONS.get(exc.field or "", exc.field)
    return exc


def _run_libero(scene: str, seed: int, trace: Path, labels: Path | None, states: Path | None,
                max_steps: int | None, json_output: bool, console: Console,
                unused: dict[str, object]) -> None:
    """`mango sim run --scene libero/SUITE/TASK`: the LIBERO expert in LIBERO's own process;
    trace at LIBERO's 20 Hz control rate (`mango.sim.libero.episode`)."""
    from mango.bddl.libero_oracle import verdict_fields
    from mango.cli.outputs import output_file, run_progress
    from mango.errors import InputError
    from mango.sim.libero import LiberoClient, LiberoRuntimeError, parse_init_state, parse_scene
    from mango.sim.libero.client import find_venv, runtime_problem
    from mango.sim.libero.episode import run_libero_episode, step_limit, write_states
    from mango.sim.runner import write_run_files

    try:
        for flag, given in unused.items():
            if given is not None:
                raise InputError(f"{flag} is not wired for LIBERO scenes yet: run without it",
                                 field=flag.split()[0])
        sc = parse_scene(scene, field="--scene")
        init = parse_init_state(seed, field="--seed")
        labels_path = labels or trace.with_suffix(".labels.json")
        for path, what in ((trace, "trace"), (labels_path, "labels file"),
                           (states, "states file")):
            if path is not None:
                output_file(path, what)
        problem = runtime_problem(find_venv())
        if problem:
            raise InputError(problem, field="--scene")
        with run_progress(console) as progress:
            bar = progress.add_task(f"{sc.name} init state {init}",
                                    total=max_steps or step_limit(sc.suite))
            with LiberoClient() as client:
                ep = run_libero_episode(client, sc, init, max_steps=max_steps,
                                        on_state=lambda _s: progress.advance(bar))
        ep.labels.update(verdict_fields(ep.task.bddl, ep.states))
        write_run_files(ep.states, ep.labels, trace, labels_path)
        if states is not None:
            write_states(states, ep)
    except InputError as exc:
        _fail(name_libero_option(exc))
    except LiberoRuntimeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(1) from None
    if json_output:
        print(json.dumps(ep.labels))
        return
    from rich.console import Console

    out = Console()
    verdict = "[green]success[/green]" if ep.libero_success else "[red]no success[/red]"
    out.print(f"{sc.name} ({ep.task.stem}) init state {init}: LIBERO's check_success: "
              f"{verdict}, {len(ep.states)} states at 20 Hz, t = {ep.states[-1].t:.2f} s")
    lab = ep.labels
    if lab["oracle_verdict"] is None:
        out.print(f"fine-grained oracle: {lab['oracle_error']}", highlight=False)
    else:
        failed = f", failed step {lab['oracle_failed_step']}" if lab["oracle_failed_step"] \
            else ""
        out.print(f"fine-grained oracle (LIBERO's semantics): {lab['oracle_verdict']}{failed}",
                  highlight=False)
    if ep.labels["expert_error"]:
        out.print(f"[yellow]expert stopped:[/yellow] {ep.labels['expert_error']}")
    out.print(f"trace: {trace}  labels: {labels_path}" + (f"  states: {states}" if states
                                                          else ""))


def _summary(console, result: EpisodeResult, trace: Path, labels: Path,
             video: Path | None) -> None:
    lab = result.labels
    ok = "[green]all steps done[/green]" if result.success else "[red]task not completed[/red]"
    console.print(f"{result.scene.name} seed {result.seed}: {ok}, "
                  f"{len(result.states)} states, t = {result.states[-1].t:.2f} s")
    if lab["fault"]:
        if lab["failed_step"]:
            at = f" (t = {lab['failed_t']:.2f} s)" if lab["failed_t"] is not None else ""
            truth = f"{lab['event']} at step {lab['failed_step']}{at}"
        else:
            truth = "no step fails (the task should pass)"
        note = f": {lab['fault_note']}" if lab["fault_note"] else ""
        console.print(f"fault {lab['fault']}{note}; ground truth: {truth}", highlight=False)
    if result.error:
        console.print(f"[yellow]expert stopped:[/yellow] {result.error}")
    console.print(f"trace: {trace}  labels: {labels}" + (f"  video: {video}" if video else ""))


@app.command(name="eval")
def evaluate(
    scene: Annotated[list[str] | None, typer.Option(
        "--scene", "-s", help="Scene(s) to evaluate (default: all shipped scenes).")] = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, max=MAX_SEED_COUNT,
                                       help="Seeds per scene.")] = 20,
    start: Annotated[int, typer.Option("--start", min=0, max=SEED_MAX,
                                       help="First seed.")] = 0,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Expert success rate per scene: every step done, and the oracle and goal agree."""
    from rich.console import Console
    from rich.table import Table

    from mango.cli.outputs import run_progress
    from mango.errors import InputError
    from mango.oracle.symbolic import SymbolicOracle
    from mango.oracle.tracker import check_trace
    from mango.sim.env import as_scene
    from mango.sim.runner import load_oracle_json, run_episode
    from mango.sim.scene import list_scenes, load_scene
    from mango.sim.seeds import check_seed_range

    console = Console(stderr=True)
    rows = []
    try:
        check_seed_range(start, seeds, field="--start")
        specs = [as_scene(s) for s in scene] if scene else [load_scene(p) for p in list_scenes()]
        # one bar over every run (not a line per seed), gone once the table is printed
        with run_progress(console) as progress:
            bar = progress.add_task("expert runs", total=len(specs) * seeds)
            for sc in specs:
                oracle, _ = load_oracle_json(sc)
                goal = SymbolicOracle(sc.goal)
                n_ok = n_oracle = n_goal = 0
                failed: list[int] = []
                for seed in range(start, start + seeds):
                    progress.update(bar, description=f"{sc.name} seed {seed}")
                    res = run_episode(sc, seed)
                    o_pass = (check_trace(oracle, res.states).verdict == "pass" if oracle
                              else None)
                    g_pass = goal.check(res.states).verdict == "pass"
                    n_ok += res.success
                    n_oracle += bool(o_pass)
                    n_goal += g_pass
                    if not (res.success and g_pass and o_pass is not False):
                        failed.append(seed)
                    progress.advance(bar)
                rows.append({"scene": sc.name, "seeds": seeds, "expert": n_ok,
                             "oracle": n_oracle if oracle else None, "goal": n_goal,
                             "failed_seeds": failed})
    except InputError as exc:
        _fail(exc)
    if json_output:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"expert success over {seeds} seeds")
    for col in ("scene", "expert", "oracle pass", "goal pass", "failed seeds"):
        table.add_column(col, overflow="fold")
    for r in rows:
        oracle_cell = "no oracle" if r["oracle"] is None else f"{r['oracle']}/{r['seeds']}"
        table.add_row(r["scene"], f"{r['expert']}/{r['seeds']}", oracle_cell,
                      f"{r['goal']}/{r['seeds']}", ", ".join(map(str, r["failed_seeds"])))
    Console().print(table)


@app.command(name="export-sdf")
def export_sdf(
    scene: SceneOpt,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="PATH", help="The SDF file, or a folder (ends in / or "
        "exists) for SCENE.sdf; default: stdout.")] = None,
    seed: SeedOpt = 0,
    image_size: Annotated[tuple[int, int], typer.Option(
        "--image-size", help=f"Scene cameras' image width and height (1..{MAX_IMAGE_SIDE})."
    )] = (224, 224),
    camera_rate: Annotated[float, typer.Option(
        "--camera-rate", help=f"Scene cameras' frames per second (above 0, at most "
        f"{MAX_CAMERA_RATE:g}).")] = 10.0,
) -> None:
    """Write the scene as a Gazebo (gz-sim) world, SDFormat 1.9: table, objects and fixtures
    where the embedded sim places them for --seed, the scene cameras as camera sensors; the
    robot is spawned by `ros2 launch mango_ros gazebo.launch.py`."""
    from mango.cli.outputs import output_file_in, write_error
    from mango.errors import InputError
    from mango.sim.scene import as_scene
    from mango.sim.sdf import scene_world_sdf

    try:
        if not (min(image_size) >= 1 and max(image_size) <= MAX_IMAGE_SIDE):
            raise InputError(f"an image side is 1..{MAX_IMAGE_SIDE} pixels, not "
                             f"{image_size[0]}x{image_size[1]}", field="--image-size")
        if not 0 < camera_rate <= MAX_CAMERA_RATE:
            raise InputError(f"the camera rate is more than 0 and at most "
                             f"{MAX_CAMERA_RATE:g} Hz, not {camera_rate}", field="--camera-rate")
        sc = as_scene(scene)
        target = None if output is None else output_file_in(output, f"{sc.name}.sdf",
                                                            "SDF world")
        text = scene_world_sdf(sc, seed, image_size=image_size, camera_rate=camera_rate)
        if target is None:
            sys.stdout.write(text)
            return
        try:
            target.write_text(text)
        except OSError as exc:
            raise write_error(exc, target) from None
    except InputError as exc:
        _fail(exc)
    sys.stderr.write(f"wrote {target} (world '{sc.name}', seed {seed})\n")
