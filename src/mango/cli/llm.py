"""`mango llm`: serve and list the local language models."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import typer
from rich.console import Console

from mango.cli.bounds import MAX_PROCESSES
from mango.llm.local import DEFAULT_CTX

app = typer.Typer(help="Local language models (llama.cpp on loopback).", no_args_is_help=True)

_err = Console(stderr=True)


def _fail(exc: Exception) -> typer.Exit:
    _err.print(f"error: {exc}", markup=False, highlight=False)
    return typer.Exit(2)


@app.command()
def serve(
    model: str = typer.Argument(..., help="A .gguf file, or a known model name (qwen0.5b)."),
    port: int = typer.Option(8080, min=0, max=65535,
                             help="Port on 127.0.0.1 (0 picks a free one)."),
    ctx: int = typer.Option(DEFAULT_CTX, min=256, max=131_072,
                            help="Context length in tokens (shared by all slots)."),
    threads: int = typer.Option(0, min=0, max=MAX_PROCESSES,
                                help="CPU threads (0: all cores, at most 8)."),
    parallel: int = typer.Option(1, min=1, max=MAX_PROCESSES,
                                 help="Requests served at once (slots)."),
    verify: bool = typer.Option(False, help="Hash the model file again before serving."),
) -> None:
    """Serve MODEL with llama.cpp's OpenAI-compatible server until Ctrl-C."""
    from mango.errors import InputError
    from mango.llm.backend import BackendError
    from mango.llm.local import LocalServer, resolve_model

    out = Console()
    try:
        if verify:
            resolve_model(model, verify=True)
        server = LocalServer(model, port=port, n_ctx=ctx, threads=threads or None,
                             parallel=parallel)
    except (InputError, BackendError) as exc:
        raise _fail(exc) from None
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    out.print(f"serving [bold]{server.alias}[/] at [bold]{server.base_url}[/] "
              f"(up in {server.startup_s:.2f} s); Ctrl-C stops")
    out.print(f"use it: --backend openai --model {server.alias} with "
              f"MANGO_LLM_BASE_URL={server.base_url}", markup=False, highlight=False)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.close()
        out.print("stopped")


@app.command()
def models(
    directory: Path = typer.Option(None, "--dir", help="Model directory (default: "
                                   "$MANGO_MODEL_DIR or ~/.cache/mango/models)."),
) -> None:
    """List the models `serve` and the local backend can use."""
    from rich.table import Table

    from mango.errors import InputError
    from mango.llm.local import list_models, model_dir

    where = directory or model_dir()
    if directory is not None and directory.exists() and not directory.is_dir():
        raise InputError("not a folder (the model directory holds .gguf files)",
                         file=str(directory), field="--dir")
    table = Table(title=f"models ({where})")
    for col in ("name", "status", "size", "description", "path"):
        table.add_column(col, overflow="fold")
    for row in list_models(where):
        size = f"{row.size / 1e6:.0f} MB" if row.size else "-"
        table.add_row(row.name, row.status, size, row.description,
                      str(row.path) if row.path else "-")
    Console().print(table)
