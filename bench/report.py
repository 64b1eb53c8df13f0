"""What every bench ends with: its figures as one rich table (`python bench/bench_x.py` puts
this folder on sys.path, so the benches import it as `report`)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# The Benchmarks page's areas, in its order: a headline figure names one of them.
AREAS = ("Oracle", "Oracle generation", "Simulation and control", "Perception", "Primitives",
         "Orchestration", "Evaluation campaigns")


def _record(record: dict[str, object]) -> None:
    """Append to MANGO_BENCH_JSON (`make bench` sets it) with the command that made it:
    scripts/bench_results.py turns the file into bench/results.json, the Benchmarks page."""
    out = os.environ.get("MANGO_BENCH_JSON")
    if out:
        # the machine's load when measured: this VM's figures move with it
        record = {"bench": Path(sys.argv[0]).stem, "command": shlex.join(
            ["python", f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]]),
            "load": round(os.getloadavg()[0], 1), **record}
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Print the table, and record it for the Benchmarks page (`_record`)."""
    rows = [[str(c) for c in r] for r in rows]
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    Console().print(table)
    _record({"title": title, "columns": list(columns), "rows": rows})


def headline(area: str, figure: str, value: str, goal: str = "") -> None:
    """One figure of its area's table on the Benchmarks page, as this run measured it: the
    page is written from these records, never by hand. `goal` is the target it is held to."""
    if area not in AREAS:
        raise ValueError(f"headline area {area!r} is not one of {AREAS}")
    Console().print(f"[bold]{area}[/]: {figure}: [bold]{value}[/]"
                    + (f" (goal {goal})" if goal else ""))
    _record({"area": area, "figure": figure, "value": value, "goal": goal})


def wait(pred: Callable[[], Any], timeout: float, what: str) -> Any:
    """`pred()`'s first truthy value, polled every 5 ms; a bench that waits past `timeout`
    stops there, naming what it waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.005)
    raise RuntimeError(f"timed out waiting for {what}")


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
