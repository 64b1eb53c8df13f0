"""`mango bringup STACK`: start a stack's nodes here, stop them on Ctrl-C, report deaths."""

from __future__ import annotations

import sys
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("bringup")(bringup)


def bringup(
    stack: Annotated[str, typer.Argument(help="Stack name (config/stacks/NAME.yaml) or path.")],
    param: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a parameter: NODE.PARAM=VALUE (YAML value).")] = None,
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
        runner = Bringup(spec, output=lambda label, line: console.print(
            f"[cyan]\\[{label}][/] {line}", highlight=False, markup=True, soft_wrap=True))
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runner.start()
    console.print(f"[bold]{spec.name}[/]: started {len(spec.nodes)} node processes "
                  "(their output follows; a required node that dies stops the stack); "
                  "Ctrl-C stops them")
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
