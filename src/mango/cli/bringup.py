"""`mango bringup STACK`: start a stack's nodes here, stop them on Ctrl-C, report deaths.

A stack's recorder writes where `--bag DIR` says, else where the stack file says (`out/bags/
<stack>_{stamp}` under the current folder for the shipped stacks); the folder is checked and
printed before any node starts, so a person knows where the run went.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from mango.stack import Stack


def register(app: typer.Typer) -> None:
    app.command("bringup")(bringup)


def bringup(
    stack: Annotated[str, typer.Argument(help="Stack name (config/stacks/NAME.yaml) or path.")],
    param: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a parameter: NODE.PARAM=VALUE (YAML value).")] = None,
    scene: Annotated[str | None, typer.Option(
        "--scene", "-s", help="Scene for every node with a `scene` parameter, and its oracle "
        "for the oracle node.")] = None,
    bag: Annotated[str | None, typer.Option(
        help="The recorder's bag folder (new; `{stamp}` becomes the start time).")] = None,
    namespace: Annotated[str | None, typer.Option(
        help="Put every node under this ROS namespace (default: the root).")] = None,
) -> None:
    """Start the nodes of a stack file as processes (what `ros2 launch` does on a system ROS 2).

    Ctrl-C stops them all cleanly; a required node that dies stops the stack with exit 1.
    """
    import signal
    import threading

    import yaml
    from rich.console import Console

    from mango.bringup import Bringup, NodeDied
    from mango.errors import InputError
    from mango.stack import load_stack

    console = Console(stderr=True)
    try:
        spec = load_stack(stack)
        for item in param or []:
            target, _, value = item.partition("=")
            node_name, _, key = target.partition(".")
            node = next((n for n in spec.nodes if n.name == node_name), None)
            if node is None or not key or not _:
                raise InputError(f"--set {item!r}: want NODE.PARAM=VALUE with a node of the stack")
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError as exc:
                raise InputError(f"--set {item!r}: the value is not YAML "
                                 f"({str(exc).splitlines()[0]})") from None
            if not isinstance(parsed, str | int | float | bool | list):
                raise InputError(f"--set {item!r}: a parameter is a string, number, boolean "
                                 "or list")
            node.parameters[key] = parsed
        if scene is not None:
            _use_scene(spec, scene)
        if namespace:
            try:
                spec = spec.in_namespace(namespace)
            except ValueError as exc:
                raise InputError(f"--namespace: {exc}") from None
        recording = _recorder_output(spec, bag)
        runner = Bringup(spec, output=node_output(console))
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runner.start()
    console.print(f"[bold]{spec.name}[/]: started {len(spec.nodes)} node processes "
                  "(their output follows; a required node that dies stops the stack); "
                  "Ctrl-C stops them", highlight=False)
    if recording is not None:
        console.print(f"bag: {recording} (bag_recorder; `--bag DIR` chooses)", highlight=False,
                      soft_wrap=True)
    where = f" --namespace {spec.nodes[0].namespace}" if namespace else ""
    if {n.executable for n in spec.nodes} >= {"sim_node", "vla_node", "oracle_node"}:
        console.print(f"run a task on it: mango policy run --attach{where} [--scene S]",
                      highlight=False, soft_wrap=True)
    code = 0
    try:
        runner.spin(stop)
    except NodeDied as exc:
        console.print(f"[bold red]{exc}[/]", highlight=False)
        for line in exc.tail[-10:]:
            console.print(f"  {line}", highlight=False, markup=False)
        code = 1
    codes = runner.stop()
    console.print("stopped: " + ", ".join(f"{k} ({v})" for k, v in codes.items()))
    raise typer.Exit(code)


def node_output(console: Console) -> Callable[[str, str], None]:
    """Print a node's output line under its label. The line is text, not rich markup: rclpy's
    `[node_name]` looks like a markup tag, and rich dropped it (blank logger names)."""
    from rich.markup import escape

    def show(label: str, line: str) -> None:
        console.print(f"[cyan]\\[{escape(label)}][/] {escape(line)}", highlight=False,
                      soft_wrap=True)

    return show


def _recorder_output(spec: Stack, bag: str | None) -> Path | None:
    """Where the stack's recorder will write, made absolute (from the current folder) with
    `{stamp}` filled in, and checked to be a new folder; None for a stack without one."""
    from mango.cli.outputs import output_dir
    from mango.errors import InputError

    rec = spec.recorder()
    if rec is None:
        if bag is not None:
            raise InputError(f"--bag: stack {spec.name} has no bag_recorder node")
        return None
    text = bag if bag is not None else str(rec.parameters.get("output", ""))
    if not text:
        raise InputError(f"stack {spec.name}: the bag_recorder has no output folder: give "
                         "--bag DIR", field="bag_recorder.output")
    path = Path(text.replace("{stamp}", time.strftime("%Y%m%d_%H%M%S"))).expanduser()
    path = output_dir(path.resolve(), "bag folder", new=True)
    rec.parameters["output"] = str(path)
    return path


def _use_scene(spec: Stack, scene: str) -> None:
    """The sim, the expert's plan and the oracle all on one scene (three `--set`s that must
    agree, or the oracle judges a task the sim does not show)."""
    from mango.errors import InputError
    from mango.sim.scene import REPO_ROOT, load_scene, resolve_scene

    path = resolve_scene(scene).resolve()
    spec_scene = load_scene(path)
    users = [n for n in spec.nodes if "scene" in n.parameters]
    if not users:
        raise InputError(f"--scene: no node of stack {spec.name} has a scene parameter")
    for n in users:
        n.parameters["scene"] = str(path)
    for n in spec.nodes:
        if n.executable == "oracle_node" and spec_scene.oracle:
            n.parameters["oracle_file"] = str((REPO_ROOT / spec_scene.oracle).resolve())
