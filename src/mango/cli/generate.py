"""`mango generate`: MANGO oracle generation (spec §7), scoring and task-set minimization.

Exit codes: 0 approved (or done), 1 the loop ended without approval (the last candidate is
still written and the reason printed), 2 bad input (`error: ...` on stderr).
Progress goes to stderr; `--quiet` prints nothing but errors. Without `--backend` the
offline planner is used: a deterministic rule-based planner, not a language model.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from mango.cli.bounds import seed_option
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
FallbackOpt = Annotated[str | None, typer.Option(
    "--fallback", help="With --backend offline: the model backend (local, openai) asked only "
    "for what the offline reader refuses; same as --opt fallback=NAME.")]
Module3CapOpt = Annotated[int, typer.Option("--max-iterations", min=1, max=100,
                                            help="Module III cap.")]


def _fail(exc: InputError | Exception) -> NoReturn:
    sys.stderr.write(f"error: {exc}\n")
    raise typer.Exit(2)


def _with_fallback(opts: list[str] | None, fallback: str | None) -> list[str] | None:
    """`--fallback NAME` as the backend option it stands for (`--opt fallback=NAME` still
    works); both, naming different backends, is a mistake said as one."""
    from mango.errors import InputError

    if fallback is None:
        return opts
    given = [o.partition("=")[2] for o in opts or [] if o.partition("=")[0].strip() == "fallback"]
    if any(g != fallback for g in given):
        _fail(InputError(f"--fallback {fallback} and --opt fallback={given[0]} disagree",
                         field="--fallback"))
    return [*(opts or []), f"fallback={fallback}"]


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
    if not quiet and backend == "local":
        # soft-wrapped (the terminal wraps it): a model path stays whole to copy
        err.print(LOCAL_EXPECT.format(model=model or "qwen0.5b"), highlight=False,
                  markup=False, soft_wrap=True)
    try:
        library, catalog = load_function_library(functions)
        be = make_backend(backend, model, **options)
    except InputError as exc:
        _fail(exc)

    if not quiet and be.name == "offline":
        err.print("[dim]backend: offline planner (deterministic rules, not a language model)"
                  "[/dim]")
    elif not quiet:
        served = getattr(getattr(be, "server", None), "model_path", None)
        err.print(f"backend: {be.name}, model {be.model_for('generator')}"
                  + (f" ({served})" if served else ""), highlight=False, soft_wrap=True)
    with ExitStack() as stack:
        shown = be if quiet or be.name == "offline" else stack.enter_context(
            CallProgress(be, err))

        def progress(msg: str) -> None:
            if not quiet:
                err.print(f"[dim]{be.name}[/dim] {msg}", highlight=False)

        try:
            yield Session(shown, library, catalog, config, progress)
        finally:
            close = getattr(be, "close", None)
            if callable(close):
                close()


# What a person should know before a CPU language model starts (measured on 2 cores).
LOCAL_EXPECT = (
    "backend: local llama.cpp, model {model}. Expect minutes, not milliseconds: each agent "
    "call takes 2-5 s on CPU and one oracle needs dozens of them (one LIBERO-10 oracle with "
    "the 0.5B model took 3 min 17 s and was not approved; small models plan poorly). "
    "The offline planner (the default) takes milliseconds.")


class CallProgress:
    """A language backend whose every agent call shows as a live line (role, task, elapsed)
    and, when done, one line with its time: a minutes-long run is visibly moving."""

    def __init__(self, backend: Any, console: Any) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._backend = backend
        self._console = console
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                  TimeElapsedColumn(), console=console, transient=True)
        self._count = 0
        self._lock = threading.Lock()
        self.name = backend.name
        self.max_concurrency = getattr(backend, "max_concurrency", 1)

    def __enter__(self) -> CallProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def model_for(self, role: str) -> str:
        return self._backend.model_for(role)

    def complete(self, call: Any, schema: Any) -> Any:
        with self._lock:
            self._count += 1
            n = self._count
        what = f"agent call {n}: {call.role} {call.task}"
        task = self._progress.add_task(what)
        start = time.perf_counter()
        ok = False
        try:
            answer = self._backend.complete(call, schema)
            ok = True
            return answer
        finally:
            self._progress.remove_task(task)
            took = time.perf_counter() - start
            self._console.print(f"[dim]{what}: {took:.1f} s" + ("" if ok else ", failed")
                                + "[/dim]", highlight=False)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def _run_guarded(fn: Any, output: Path | str | None = None) -> Any:
    """`fn()`, with what it may raise as one line; `output` (the file or folder it writes) is
    named when the system's error names no file (a full disk)."""
    from mango.errors import InputError
    from mango.llm.backend import BackendError, Refusal

    try:
        return fn()
    except InputError as exc:
        _fail(exc)
    except OSError as exc:  # writing an artifact (disk full, a folder removed meanwhile)
        _fail(write_error(exc, output if output is not None else "?"))
    except Refusal as exc:
        sys.stderr.write(f"refused: {exc}\n")
        raise typer.Exit(1) from None
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
        run = _run_guarded(lambda: run_library(s, task_list, out), out)
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
    fallback: FallbackOpt = None,
) -> None:
    """Module III: the fine-grained oracle of one instruction."""
    from mango.cli.scenes import scene_file
    from mango.errors import InputError
    from mango.generation.models import instruction_problem, select_scene
    from mango.generation.runner import load_libraries, run_oracle, slugify

    why = instruction_problem(instruction)
    if why is not None:
        _fail(InputError(why, field="--instruction"))
    try:
        entry = select_scene(scene_file(scene), instruction, str(scene))
        libs = load_libraries(libraries)
        path = output_file_in(out, f"{slugify(instruction).rstrip('_')}.json", "oracle file")
    except InputError as exc:
        _fail(exc)
    opt = _with_fallback(opt, fallback)
    with _session(backend, model, opt, ablation, functions, quiet, max_iterations) as s:
        run = _run_guarded(lambda: run_oracle(s, instruction, entry, libs, path), path)
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
    fallback: FallbackOpt = None,
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
    opt = _with_fallback(opt, fallback)
    with _session(backend, model, opt, ablation, functions, quiet) as s:
        run = _run_guarded(lambda: run_all(s, task_list, scene_file, out, str(scenes)),
                           out)
    if not quiet:
        ok = sum(r.approved for _, _, r in run.oracles)
        sys.stderr.write(f"wrote {out}: {ok}/{len(run.oracles)} oracles approved in "
                         f"{run.seconds:.2f} s\n")
    for _, why in run.refused:
        sys.stderr.write(f"refused: {why}\n")
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
    con = Console()
    for table in score_tables(scores, summary, scenes is not None):
        con.print(table)


def _cell(v: Any, digits: int = 3) -> str:
    """A score as a person reads it: yes/no, a rounded number, "-" for not measured."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def score_tables(scores: list[Any], summary: dict[str, Any], have_scenes: bool) -> list[Any]:
    """`generate score` as two rich tables: one row per oracle, then the summary (rates,
    means, each module's iterations and time). Long instructions wrap at word breaks."""
    from rich.table import Table

    table = Table(title="generated oracles")
    table.add_column("instruction", overflow="fold", ratio=1)
    for col in ("valid", "executable", "similarity", "iterations", "seconds"):
        table.add_column(col, justify="right", no_wrap=True)
    for s in scores:
        table.add_row(s.instruction, _cell(s.valid), _cell(s.executable), _cell(s.similarity),
                      _cell(s.iterations), _cell(s.seconds, 2))
    total = Table(title="summary", show_header=False)
    total.add_column("metric")
    total.add_column("value", justify="right", overflow="fold")
    executability = _rate(summary.get("executability")) if have_scenes else \
        "not checked (give --scenes)"
    for name, value in (("oracles", str(summary.get("n", 0))),
                        ("validity", _rate(summary.get("validity"))),
                        ("executability", executability),
                        ("similarity, mean", _cell(summary.get("similarity"))),
                        ("similarity, lowest", _cell(summary.get("min_similarity"))),
                        ("iterations per oracle, mean", _cell(summary.get("mean_iterations"), 1)),
                        ("seconds per oracle, mean", _cell(summary.get("mean_seconds"), 2))):
        total.add_row(name, value)
    for module, timing in (summary.get("modules") or {}).items():
        its, secs = timing.get("iterations"), timing.get("seconds")
        total.add_row(f"{module.replace('module', 'module ')}: iterations, seconds",
                      f"{_cell(its, 1)}, {_cell(secs, 2)}")
    return [table, total]


@app.command()
def minimize(
    tasks: Annotated[Path, typer.Option("--tasks", help="JSON list of instructions.")],
    out: Annotated[str, typer.Option(
        "-o", "--out", metavar="PATH",
        help="Result JSON to write, or a folder (ends in / or exists) for TASKS.minimized.json.")],
    tau: Annotated[float, typer.Option("--tau", help="Library similarity to keep.")] = 0.95,
    seed: Annotated[int, seed_option("The search's random seed.")] = 0,
    generations: Annotated[int, typer.Option("--generations", min=1, max=10_000)] = 200,
    patience: Annotated[int, typer.Option("--patience", min=1, max=10_000)] = 20,
    evaluations: Annotated[int, typer.Option("--evaluations", min=1, max=100)] = 3,
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
            task_list, make, embedder, tau, seed, generations, patience, evaluations, progress),
            path)
    _run_guarded(lambda: write_json(path, res.to_json()), path)
    if not quiet:
        sys.stderr.write(f"kept {len(res.selected)}/{len(task_list)} tasks (similarity "
                         f"{res.similarity:.3f}, {res.generations} generations, {res.stopped}); "
                         f"wrote {path}\n")
