"""What every bench ends with: its figures as one rich table (`python bench/bench_x.py` puts
this folder on sys.path, so the benches import it as `report`)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    Console().print(table)


def stop_processes(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGINT (the nodes shut down cleanly), then SIGKILL what is still up after 5 s."""
    for p in procs:
        p.send_signal(2)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
