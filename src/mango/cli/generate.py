"""`mango generate`: MANGO oracle generation (spec §7), scoring and task-set minimization.

Exit codes: 0 approved (or done), 1 the loop ended without approval (the last candidate is
still written and the reason printed), 2 bad input (`error: ...` on stderr).
Progress goes to stderr; `--quiet` prints nothing but errors. Without `--backend` the
offline planner is used: a deterministic rule-based planner, not a language model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from mango.cli.outputs import output_dir, output_file_in, write_error

if TYPE_CHECKING:
    from mango.errors import InputError
    from mango.generation.runner import Session

app = typer.Typer(
    help="Generate fine-grained oracles with MANGO (modules I-III), score and minimize.",
    no_args_is_help=True,
)

BackendOpt = Annotated[str, typer.Option(
    "--backend", help="offline (rule-based planner, not an LLM), openai, local, "
    "record:DIR or record:DIR@NAME, replay:DIR (record/replay cache).")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Model name or GGUF path.")]
OptOpt = Annotated[list[str] | None, typer.Option(
    "--opt", help="Backend option KEY=VALUE (repeatable), e.g. base_url=http://127.0.0.1:8080/v1")]
AblationOpt = Annotated[str, typer.Option(
    "--ablation", help="full, no_module1, no_module2, no_er (without Execution Reliability) "
    "or baseline (single agent).")]
FunctionsOpt = Annotated[Path | None, typer.Option(
    "--functions", help="Function library JSON (spec §4); default: the engine's built-ins.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
Module3CapOpt = Annotated[int, typer.Option("--max-iterations", help="Module III cap.")]


def _fail(exc: InputError | Exception) -> NoReturn:
    sys.stderr.write(f"error: {exc}\n")
    raise typer.Exit(2)


@contextmanager
def _session(backend: str, model: str | None, opts: list[str] | None, ablation: str,
             functions: Path | None, quiet: bool, module3_cap: int = 25) -> Iterator[Session]:
    from rich.console import Console

    from mango.errors import InputError
    from mango.generation.backends import make_backend
    from mango.generation.engine import load_function_library
    from mango.generation.pipeline import GenerationConfig
    from mango.generation.runner import Session

    err = Console(stderr=True)
    try:
        config = GenerationConfig(ablation=ablation, module3_max_iterations=module3_cap)  # type: ignore[arg-type]
    except ValueError as exc:
        _fail(InputError(str(exc), field="ablation" if "ablation" in str(exc) else None))
    options: dict[str, Any] = {}
    for item in opts or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(InputError(f"expected KEY=VALUE, got {item!r}", field="--opt"))
        options[key.strip()] = value
    try:
        library, catalog = load_function_library(functions)
        be = make_backend(backend, model, **options)
    except InputError as exc:
        _fail(exc)

    def progress(msg: str) -> None:
        if not quiet:
            err.print(f"[dim]{be.name}[/dim] {msg}", highlight=False)

    if not quiet and be.name == "offline":
        err.print("[dim]backend: offline planner (deterministic rules, not a language model)"
                  "[/dim]")
    try:
        yield Session(be, library, catalog, config, progress)
    finally:
        close = getattr(be, "close", None)
        if callable(close):
            close()


def _run_guarded(fn: Any) -> Any:
    from mango.errors import InputError
    from mango.llm.backend import BackendError

    try:
        return fn()
    except InputError as exc:
        _fail(exc)
    except OSError as exc:  # writing an artifact (disk full, a folder removed meanwhile)
        _fail(write_error(exc, getattr(exc, "filename", "") or "?"))
    except BackendError as exc:
        sys.stderr.write(f"error: backend failed: {exc}\n")
        raise typer.Exit(1) from None


@app.command()
def library(
    tasks: Annotated[Path, typer.Option("--tasks", help="JSON list of instructions.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Output directory.")],
    functions: FunctionsOpt = None,
    backend: BackendOpt = "offline",
    model: ModelOpt = None,
    opt: OptOpt = None,
    ablation: AblationOpt = "full",
    quiet: QuietOpt = False,
) -> None:
    """Modules I+II: atomic task library and atomic task oracle library."""
    from mango.errors import InputError
    from mango.generation.models import load_tasks
    from mango.generation.runner import run_library

    try:
        task_list = load_tasks(tasks)
        output_dir(out, "library folder")
    except InputError as exc:
        _fail(exc)
    with _session(backend, model, opt, ablation, functions, quiet) as s:
        run = _run_guarded(lambda: run_library(s, task_list, out))
    if not quiet:
        sys.stderr.write(f"wrote {out / 'atomic_library.json'} "
                         f"({len(run.atomic_library.atomic_library)} tasks) and "
                         f"{out / 'atomic_oracle_library.json'}\n")
    if not run.approved:
        sys.stderr.write(f"not approved: module1 {run.module1.reason}; "
                         f"module2 {run.module2.reason}\n")
        raise typer.Exit(1)


@app.command()
def oracle(
    instruction: Annotated[str, typer.Option("--instruction", help="The instruction.")],
    scene: Annotated[Path, typer.Option(
        "--scene", help="Scene objects JSON (spec §4), or a sim scene (YAML or name).")],
    libraries: Annotated[Path, typer.Option("--libraries", help="Output dir of 'library'.")],
    out: Annotated[str, typer.Option(
        "-o", "--out", metavar="PATH",
        help="Oracle JSON to write, or a folder (ends in / or exists) for INSTRUCTION.json.")],
    functions: FunctionsOpt = None,
    backend: BackendOpt = "offline",
    model: ModelOpt = None,
    opt: OptOpt = None,
    ablation: AblationOpt = "full",
    max_iterations: Module3CapOpt = 25,
    quiet: QuietOpt = False,
) -> None:
    """Module III: the fine-grained oracle of one instruction."""
    from mango.cli.scenes import scene_file
    from mango.errors import InputError
    from mango.generation.models import select_scene
    from mango.generation.runner import load_libraries, run_oracle, slugify

    if not instruction.strip():
        _fail(InputError("the instruction is empty", field="--instruction"))
    try:
        entry = select_scene(scene_file(scene), instruction, str(scene))
        libs = load_libraries(libraries)
        path = output_file_in(out, f"{slugify(instruction).rstrip('_')}.json", "oracle file")
    except InputError as exc:
        _fail(exc)
    with _session(backend, model, opt, ablation, functions, quiet, max_iterations) as s:
        run = _run_guarded(lambda: run_oracle(s, instruction, entry, libs, path))
    if not quiet:
        sys.stderr.write(f"wrote {path} ({len(run.oracle.actions())} monitored actions, "
                         f"{run.module3.iterations} iteration(s))\n")
    if not run.approved:
        sys.stderr.write(f"not approved: {run.module3.reason}\n")
        raise typer.Exit(1)


@app.command("all")
def all_(
    tasks: Annotated[Path, typer.Option("--tasks", help="JSON list of instructions.")],
    scenes: Annotated[Path, typer.Option(
        "--scenes", help="Scene objects JSON (spec §4), e.g. config/tasks/libero10_scenes.json.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Output directory.")],
    functions: FunctionsOpt = None,
    backend: BackendOpt = "offline",
    model: ModelOpt = None,
    opt: OptOpt = None,
    ablation: AblationOpt = "full",
    quiet: QuietOpt = False,
) -> None:
    """Libraries for all tasks, then one oracle per task (summary.json lists them)."""
    from mango.errors import InputError
    from mango.generation.models import load_scene_file, load_tasks
    from mango.generation.runner import run_all

    try:
        task_list = load_tasks(tasks)
        scene_file = load_scene_file(scenes)
        output_dir(out)
    except InputError as exc:
        _fail(exc)
    with _session(backend, model, opt, ablation, functions, quiet) as s:
        run = _run_guarded(lambda: run_all(s, task_list, scene_file, out, str(scenes)))
    if not quiet:
        ok = sum(r.approved for _, _, r in run.oracles)
        sys.stderr.write(f"wrote {out}: {ok}/{len(run.oracles)} oracles approved in "
                         f"{run.seconds:.2f} s\n")
    if not run.approved:
        raise typer.Exit(1)


@app.command()
def score(
    target: Annotated[Path, typer.Argument(help="An oracle JSON or a 'generate all' directory.")],
    scenes: Annotated[Path | None, typer.Option(
        "--scenes", help="Scene objects JSON, for executability. Default: the shipped scenes "
        "(config/scenes), for oracles whose instruction is a shipped scene's.")] = None,
    truth: Annotated[Path | None, typer.Option(
        "--truth", help="Ground-truth oracle JSON, or a directory of them.")] = None,
    functions: FunctionsOpt = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Validity, executability, similarity to ground truth, module times and iterations."""
    from rich.console import Console
    from rich.table import Table

    from mango.cli.scenes import scene_file
    from mango.errors import InputError
    from mango.generation.engine import load_function_library
    from mango.generation.models import parse_scene_file
    from mango.generation.runner import load_truths, score_run
    from mango.sim.scene import SCENES_DIR, scenes_task_objects

    try:
        if not target.exists():
            raise InputError("no such file or directory", file=str(target))
        lib, _ = load_function_library(functions)
        objects = (scene_file(scenes) if scenes is not None
                   else parse_scene_file(scenes_task_objects(), str(SCENES_DIR)))
        truths = load_truths(truth) if truth is not None else None
        scores, summary = score_run(target, objects, truths, lib,
                                    str(scenes) if scenes else None, strict=scenes is not None)
    except InputError as exc:
        _fail(exc)
    unscored = sum(s.executable is None for s in scores)
    if unscored:  # stderr: `--json` keeps stdout one object
        sys.stderr.write(f"executability not scored for {unscored} of {len(scores)} oracle(s): "
                         "no scene for their instruction"
                         + (" in the shipped scenes; give --scenes SCENES.json\n"
                            if scenes is None else "\n"))
    if json_output:
        sys.stdout.write(json.dumps({"oracles": [s.to_json() for s in scores],
                                     "summary": summary}) + "\n")
        return
    table = Table(title="generated oracles")
    for col in ("instruction", "valid", "executable", "similarity", "iterations", "seconds"):
        table.add_column(col)

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    for s in scores:
        table.add_row(s.instruction[:60], fmt(s.valid), fmt(s.executable), fmt(s.similarity),
                      fmt(s.iterations), fmt(s.seconds))
    con = Console()
    con.print(table)
    con.print({k: v for k, v in summary.items()})


@app.command()
def minimize(
    tasks: Annotated[Path, typer.Option("--tasks", help="JSON list of instructions.")],
    out: Annotated[str, typer.Option(
        "-o", "--out", metavar="PATH",
        help="Result JSON to write, or a folder (ends in / or exists) for TASKS.minimized.json.")],
    tau: Annotated[float, typer.Option("--tau", help="Library similarity to keep.")] = 0.95,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    generations: Annotated[int, typer.Option("--generations")] = 200,
    patience: Annotated[int, typer.Option("--patience")] = 20,
    evaluations: Annotated[int, typer.Option("--evaluations")] = 3,
    functions: FunctionsOpt = None,
    backend: BackendOpt = "offline",
    model: ModelOpt = None,
    opt: OptOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """(1+1)-EA: the smallest task subset whose library stays tau-similar (embeddings)."""
    from mango.errors import InputError
    from mango.generation.embeddings import MiniLMEmbedder
    from mango.generation.minimize import minimize_tasks
    from mango.generation.models import load_tasks
    from mango.generation.runner import write_json

    try:
        task_list = load_tasks(tasks)
        if not 0 < tau <= 1:
            raise InputError("must be in (0, 1]", field="--tau")
        if generations < 1 or patience < 1 or evaluations < 1:
            raise InputError("--generations, --patience and --evaluations must be >= 1")
        path = output_file_in(out, f"{tasks.stem}.minimized.json", "result file")
        embedder = MiniLMEmbedder()
    except InputError as exc:
        _fail(exc)
    with _session(backend, model, opt, "full", functions, True) as s:
        def make(sub: list[str]) -> Any:
            return s.pipeline().generate_library(sub).oracle_library

        def progress(msg: str) -> None:
            if not quiet:
                sys.stderr.write(msg + "\n")

        res = _run_guarded(lambda: minimize_tasks(
            task_list, make, embedder, tau, seed, generations, patience, evaluations, progress))
    _run_guarded(lambda: write_json(path, res.to_json()))
    if not quiet:
        sys.stderr.write(f"kept {len(res.selected)}/{len(task_list)} tasks (similarity "
                         f"{res.similarity:.3f}, {res.generations} generations, {res.stopped}); "
                         f"wrote {path}\n")
