"""The `mango` command's reference, read from its typer app: every command's usage, help and
options as `mango … --help` prints them, one section per command."""

from __future__ import annotations

from typing import Any

import typer
import typer.main

# typer ships its own click (typer._click): commands and parameters are read by what they
# have, not by class


def _commands(cmd: Any, path: str) -> list[tuple[str, Any]]:
    out = [(path, cmd)]
    if hasattr(cmd, "commands"):
        for name in sorted(cmd.commands):
            out += _commands(cmd.commands[name], f"{path} {name}")
    return out


def _option_row(param: Any) -> str:
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    if param.param_type_name == "argument":
        names = f"`{(param.metavar or param.name or '').upper()}`"
    text = (getattr(param, "help", None) or "").replace("|", "\\|").replace("\n", " ")
    default = param.default
    shown = "" if default in (None, (), [], False) or callable(default) else f"`{default}`"
    return f"| {names} | {'yes' if param.required else ''} | {shown} | {text} |"


def cli_page() -> str:
    from mango.cli.main import app

    root = typer.main.get_command(app)
    lines = ["# The `mango` command", "",
             "Generated from the command's typer app when the site is built: what "
             "`mango COMMAND --help` says, for every command.", ""]
    for path, cmd in _commands(root, "mango"):
        ctx = typer.Context(cmd, info_name=path)
        depth = min(path.count(" ") + 1, 4)
        lines += [f"{'#' * (depth + 1)} `{path}`", "", "```text", cmd.get_usage(ctx), "```", ""]
        if cmd.help:
            lines += [cmd.help.strip(), ""]
        params = [p for p in cmd.params if p.name != "help" and not getattr(p, "hidden", False)]
        if params and not hasattr(cmd, "commands"):
            lines += ["| argument / option | required | default | what |", "|---|---|---|---|"]
            lines += [_option_row(p) for p in params]
            lines.append("")
    return "\n".join(lines)
