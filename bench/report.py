"""What every bench ends with: its figures as one rich table (`python bench/bench_x.py` puts
this folder on sys.path, so the benches import it as `report`)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Print the table; with MANGO_BENCH_JSON set (`make bench` sets it), also append it to
    that JSON Lines file with the command that made it (scripts/bench_results.py turns the
    file into bench/results.json, which the Benchmarks page shows)."""
    rows = [[str(c) for c in r] for r in rows]
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    Console().print(table)
    out = os.environ.get("MANGO_BENCH_JSON")
    if out:
        record = {"bench": Path(sys.argv[0]).stem, "command": shlex.join(
            ["python", f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]]), "title": title,
            "columns": list(columns), "rows": rows}
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def stop_processes(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGINT (the nodes shut down cleanly), then SIGKILL what is still up after 5 s."""
    for p in procs:
        p.send_signal(2)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()


LIBERO_SUITES = ("libero_10", "libero_goal", "libero_spatial", "libero_object", "libero_90")
LIBERO_DEFAULT_ROOTS = (Path("/tmp/libero_bddl/libero/libero/bddl_files"),)


def find_libero_root(given: str | Path | None) -> Path | None:
    """LIBERO's `bddl_files` folder (not shipped): `given`, `LIBERO_BDDL_ROOT`, or a usual
    place; None when none holds the five suites (the bench then says so and measures
    nothing, so `make bench` goes on)."""
    for cand in [given, os.environ.get("LIBERO_BDDL_ROOT"), *LIBERO_DEFAULT_ROOTS]:
        if cand and all((Path(cand) / s).is_dir() for s in LIBERO_SUITES):
            return Path(cand)
    return None
