"""Entry point of the `mango` command.

Sub-command groups are registered here and defined in their own modules; those modules
import heavy dependencies (rclpy, mujoco, openai) inside the commands so that
`mango --help` stays fast.
"""

from __future__ import annotations

import importlib

import typer

from mango.cli.boundary import ErrorBoundary

app = typer.Typer(
    name="mango",
    cls=ErrorBoundary,  # bad values, InputError and OSError: one `error:` line, exit 2
    help="Run and test VLA-enabled Franka robots with fine-grained oracles.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)



@app.callback()
def _root() -> None:
    """Run and test VLA-enabled Franka robots with fine-grained oracles."""


# (module, group name or None for top-level commands registered by the module itself)
_GROUPS: list[tuple[str, str | None]] = [
    ("mango.cli.doctor", None),
    ("mango.cli.oracle", "oracle"),
    ("mango.cli.sim", "sim"),
    ("mango.cli.generate", "generate"),
    ("mango.cli.llm", "llm"),
    ("mango.cli.bags", None),
    ("mango.cli.bringup", None),
    ("mango.cli.demo", None),
    ("mango.cli.policy", "policy"),
    ("mango.cli.perception", "perception"),
    ("mango.cli.primitives", "primitives"),
    ("mango.cli.task", "task"),
    ("mango.cli.campaign", "campaign"),
    ("mango.cli.bddl", "bddl"),
]


def _register() -> None:
    for module_name, group in _GROUPS:
        module = importlib.import_module(module_name)
        if group is None:
            module.register(app)
        else:
            app.add_typer(module.app, name=group)


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
