"""`mango oracle`: check traces against fine-grained oracles, lint oracles, symbolic baseline.

Exit codes (spec §6): 0 when a trace was evaluated (pass or fail alike; with `--exit-code`,
1 on fail), 2 on bad input with one `error: ...` line on stderr naming file, line, column or
field; `lint` exits 1 when it found problems.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from mango.cli.verdicts import ExitCodeOpt, exit_for

if TYPE_CHECKING:
    from rich.console import Console

    from mango.errors import InputError
    from mango.oracle.library import FunctionLibrary
    from mango.oracle.world_state import WorldState

app = typer.Typer(
    help="Fine-grained oracles: check traces, lint oracles, compare with a symbolic goal.",
    no_args_is_help=True,
)

FunctionsOpt = Annotated[
    Path | None,
    typer.Option("--functions", help="Function library JSON (spec §4); default: built-ins."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")]


def _fail(exc: InputError) -> NoReturn:
    sys.stderr.write(f"error: {exc}\n")
    raise typer.Exit(2)


def _library(functions: Path | None) -> FunctionLibrary:
    from mango.oracle.library import FunctionLibrary

    return FunctionLibrary.load(functions) if functions is not None else FunctionLibrary.default()


def _print_verdict(report: Any, trace: Path, json_output: bool,
                   render: Callable[[Any, Console], None], exit_code: bool) -> None:
    """A judged trace's report (one JSON object, or the table), then the exit status; an
    empty trace is bad input, not a verdict."""
    from mango.errors import InputError

    if report.n_states == 0:
        _fail(InputError("the trace holds no world states: nothing to judge", file=str(trace)))
    if json_output:
        typer.echo(json.dumps(report.to_json()))
    else:
        render(report, _console())
    exit_for(report.verdict, exit_code)


def _console() -> Console:
    from rich.console import Console

    return Console()


@app.command()
def check(
    oracle: Annotated[Path, typer.Argument(help="Fine-grained oracle JSON (spec §2).")],
    trace: Annotated[Path, typer.Argument(help="World-state trace, JSON Lines (spec §3).")],
    functions: FunctionsOpt = None,
    json_output: JsonOpt = False,
    hold: Annotated[
        int, typer.Option("--hold", min=1, help="Consecutive states a condition must hold.")
    ] = 1,
    exit_code: ExitCodeOpt = False,
) -> None:
    """Evaluate TRACE against ORACLE: per-step completion, events, verdict, failed step."""
    from mango.errors import InputError
    from mango.oracle.cli_render import render_report
    from mango.oracle.tracker import StepTracker

    try:
        tracker = StepTracker(oracle, _library(functions), hold=hold)
        with _TraceReader(trace) as states:
            for state in states:
                tracker.update(state)
        report = tracker.finish()
    except InputError as exc:
        _fail(exc)
    _print_verdict(report, trace, json_output, render_report, exit_code)


@app.command()
def lint(
    oracle: Annotated[Path, typer.Argument(help="Fine-grained oracle JSON (spec §2).")],
    scene: Annotated[
        Path | None,
        typer.Option(
            "--scene",
            help="A sim scene (config/scenes/*.yaml or a name such as stove_moka: its objects "
            "and initial state), scene objects JSON (spec §4, as `mango sim objects` prints) "
            "or a world state / trace whose first state is used for grounding and the dry run.",
        ),
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option("--state", help="Sample world state (JSON or JSONL) for the dry run."),
    ] = None,
    functions: FunctionsOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Static check (execution reliability): exit 0 when clean, 1 on problems, 2 bad input."""
    from mango.cli.scenes import lint_scene
    from mango.errors import InputError
    from mango.oracle.cli_render import render_problems
    from mango.oracle.model import load_oracle
    from mango.oracle.static_check import load_scene, static_check

    try:
        parsed = load_oracle(oracle)
        library = _library(functions)
        entities, sample = None, None
        if scene is not None:
            entities, sample = lint_scene(scene, parsed.instruction)
        if state is not None:
            _, sample = load_scene(state)
            if sample is None:
                raise InputError("--state must be a world state", file=str(state))
        problems = static_check(parsed, library, entities, sample)
    except InputError as exc:
        _fail(exc)
    if json_output:
        typer.echo(json.dumps({"ok": not problems, "problems": [p.to_json() for p in problems]}))
    else:
        render_problems(problems, _console())
    if problems:
        raise typer.Exit(1)


@app.command()
def symbolic(
    goal: Annotated[
        str,
        typer.Argument(
            help='Goal expression, or a file: an oracle JSON with a "goal" field, or a text '
            "file holding the expression."
        ),
    ],
    trace: Annotated[Path, typer.Argument(help="World-state trace, JSON Lines (spec §3).")],
    functions: FunctionsOpt = None,
    json_output: JsonOpt = False,
    exit_code: ExitCodeOpt = False,
) -> None:
    """Benchmark-style baseline: does GOAL hold in the last state of TRACE?"""
    from mango.errors import InputError
    from mango.oracle.cli_render import render_symbolic
    from mango.oracle.symbolic import SymbolicOracle

    try:
        goal_text, goal_file = _goal_text(goal)
        try:
            oracle = SymbolicOracle(goal_text, _library(functions))
        except InputError as exc:
            raise InputError(exc.message, file=goal_file, field=exc.field) from None
        with _TraceReader(trace) as states:
            report = oracle.check(states)
    except InputError as exc:
        _fail(exc)
    _print_verdict(report, trace, json_output, render_symbolic, exit_code)


@app.command()
def functions(
    output: Annotated[
        str | None, typer.Option(
            "-o", "--output", metavar="PATH",
            help="Write here instead of stdout (a folder: functions.json in it).")
    ] = None,
    source: FunctionsOpt = None,
) -> None:
    """Export the function library (default: the built-ins) in the spec §4 JSON form."""
    from mango.errors import InputError

    try:
        library = _library(source)
    except InputError as exc:
        _fail(exc)
    text = json.dumps(library.to_json(), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    from mango.cli.outputs import output_file_in, write_error

    try:
        output_file_in(output, "functions.json", "function library file").write_text(
            text, encoding="utf-8")
    except InputError as exc:
        _fail(exc)
    except OSError as exc:
        _fail(write_error(exc, output))


class _TraceReader:
    """Streams a trace's states; evaluation errors raised while iterating get its file/line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.line: int | None = None

    def __enter__(self) -> Iterator[WorldState]:
        from mango.json_files import read_lines
        from mango.oracle.world_state import iter_trace_records

        self._lines = read_lines(self.path, "trace")  # a FIFO or a device: refused here

        def states() -> Iterator[WorldState]:
            for lineno, state in iter_trace_records(self._lines, file=str(self.path)):
                self.line = lineno
                yield state

        return states()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        from mango.errors import InputError
        from mango.oracle.predicates import EvaluationError

        self._lines.close()
        if isinstance(exc, EvaluationError) and exc.file is None:
            raise EvaluationError(exc.message, file=str(self.path), line=self.line) from None
        if isinstance(exc, InputError) and exc.file is None and exc.field == "t":
            raise InputError(exc.message, file=str(self.path), line=self.line, field="t") from None


def _goal_text(goal: str) -> tuple[str, str | None]:
    """A goal argument is an expression unless it names an existing file."""
    from mango.errors import InputError
    from mango.json_files import parse_json, read_text

    p = Path(goal)
    try:
        exists = p.exists()  # a FIFO or a folder too: refused as a file, not read as a goal
    except (OSError, ValueError):
        exists = False
    if not exists:
        return goal, None
    text = read_text(p, "goal")
    if text.lstrip().startswith("{"):
        data = parse_json(text, goal)
        g = data.get("goal") if isinstance(data, dict) else None
        if not isinstance(g, str):
            raise InputError('no string field "goal" in this JSON file', file=goal, field="goal")
        return g, goal
    return text.strip(), goal
