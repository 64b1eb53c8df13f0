"""`mango bddl`: LIBERO's BDDL task files in and out (commands.md §6).

`import` writes `DIR/task.json` and `DIR/scene.json` (oracles.md §4 with the initial
`layout`), ready for `mango generate oracle --scene DIR/scene.json` and `mango oracle
symbolic "$(jq -r .goal DIR/task.json)"`. `export` prints the `(:goal (And ...))` of a
fine-grained oracle's end state. `scene` writes a sim scene (`config/scenes/*.yaml` format)
for `mango sim run --scene SCENE.yaml`, or exits 1 naming what the sim cannot build. Exit 0
when done, 2 on bad input (one `error:` line naming file:line:column).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

app = typer.Typer(help="LIBERO BDDL task files: import, scene, export.", no_args_is_help=True)


def _fail(message: object, code: int = 2) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


def _write_json(path: Path, data: Any) -> None:
    from mango.cli.outputs import write_error

    try:
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        _fail(write_error(exc, path))


@app.command("import")
def import_cmd(
    task: Annotated[Path, typer.Argument(help="A LIBERO .bddl file.")],
    out: Annotated[Path, typer.Option("--output", "-o", help="Folder for task.json, scene.json.")],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
) -> None:
    """Import a BDDL task: DIR/task.json (instruction, §1 goal, ...) and DIR/scene.json."""
    from mango.bddl.convert import scene_json, task_json
    from mango.bddl.parser import read_bddl
    from mango.cli.outputs import output_dir
    from mango.errors import InputError

    try:
        folder = output_dir(out)
        problem = read_bddl(task)
    except InputError as exc:
        _fail(exc)
    t = task_json(problem)
    _write_json(folder / "task.json", t)
    _write_json(folder / "scene.json", scene_json(problem))
    if not quiet:
        err = sys.stderr
        err.write(f"{task}: {problem.language!r}\n  goal: {t['goal']}\n")
        for note in t["notes"]:
            err.write(f"  note: {note}\n")
        err.write(f"wrote {folder / 'task.json'} and {folder / 'scene.json'}\n")


@app.command("scene")
def scene_cmd(
    task: Annotated[Path, typer.Argument(help="A LIBERO .bddl file.")],
    out: Annotated[Path, typer.Option("--output", "-o", help="The scene YAML to write.")],
    name: Annotated[str | None, typer.Option("--name", help="Scene name (default: bddl_STEM).")]
    = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
) -> None:
    """Write a sim scene built from the task's layout, or say what the sim cannot build."""
    import yaml

    from mango.bddl.parser import read_bddl
    from mango.bddl.scene import sim_scene
    from mango.cli.outputs import output_file_in, write_error
    from mango.errors import InputError

    try:
        target = output_file_in(str(out), f"bddl_{task.stem}.yaml", "scene file")
        problem = read_bddl(task)
    except InputError as exc:
        _fail(exc)
    result = sim_scene(problem, name or f"bddl_{task.stem}")
    if result.scene is None:
        sys.stderr.write(f"error: {task}: the embedded sim cannot build this task:\n")
        for m in result.missing:
            sys.stderr.write(f"  - {m}\n")
        raise typer.Exit(1)
    data = result.scene.model_dump(mode="json", exclude_defaults=True)
    data = {"name": data.pop("name"), "instruction": data.pop("instruction"), **data}
    header = f"# Built by `mango bddl scene` from {task.name} (LIBERO BDDL).\n"
    text = header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        _fail(write_error(exc, target))
    if not quiet:
        for note in result.left_out:
            sys.stderr.write(f"  left out: {note}\n")
        for note in result.notes:
            sys.stderr.write(f"  note: {note}\n")
        sys.stderr.write(f"wrote {target} ({len(result.scene.entities)} entities, "
                         f"{len(result.scene.expert)} expert steps)\n")


@app.command("export")
def export_cmd(
    oracle: Annotated[Path, typer.Argument(help="A fine-grained oracle JSON (oracles.md §2).")],
) -> None:
    """Print the BDDL `(:goal (And ...))` of an oracle's end state (its `goal` field when it
    has one, else the state its plan leaves)."""
    from mango.bddl.convert import ExportError, export_goal
    from mango.bddl.writer import write_goal
    from mango.errors import InputError
    from mango.oracle.model import load_oracle

    try:
        fg = load_oracle(oracle)
        goal, dropped, source = export_goal(fg)
    except InputError as exc:
        _fail(exc)
    except ExportError as exc:
        _fail(f"{oracle}: {exc}")
    sys.stdout.write(write_goal(goal))
    if dropped:
        sys.stderr.write(
            f"note: left out of the {source}'s end state (no BDDL predicate): "
            f"{', '.join(dropped)}\n"
        )
