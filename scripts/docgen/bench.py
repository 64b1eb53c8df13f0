"""The Benchmarks page, written from the last `make bench` (`bench/results.json`,
scripts/bench_results.py): one table per area of the headline figures each bench reported
(`bench/report.py`'s `headline`), each with the command that reproduces it, then every table
the benches printed. No number on the page is typed by hand."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from docgen.nodes import ROOT

RESULTS = ROOT / "bench" / "results.json"


def _areas() -> tuple[str, ...]:
    """The areas' order, from bench/report.py (the benches name them there)."""
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AREAS


def _when(record: dict[str, object]) -> str:
    """The day a record was measured and the machine's load then (1-minute average)."""
    load = record.get("load")
    return f"{record['date']}, load {load}" if load is not None else str(record["date"])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def benchmarks_page(results: Path = RESULTS) -> str:
    lines = ["# Benchmarks", "",
             "`make bench` runs every `bench/bench_*.py` and collects what they print into "
             "`bench/results.json`; this page is written from it. One table per area of the "
             "headline figures, each with the command that measures it, the day it ran and "
             "the load average then (on 2 cores the figures move with it), then every table "
             "the benches printed.", ""]
    data = json.loads(results.read_text()) if results.is_file() else \
        {"machine": None, "figures": [], "tables": []}
    if data["machine"]:
        lines += [f"Measured on {data['machine']}.", ""]
    areas: dict[str, list[dict[str, str]]] = {area: [] for area in _areas()}
    for fig in data["figures"]:
        areas[fig["area"]].append(fig)
    for area, figs in areas.items():  # every area's heading: other pages link to them
        lines += [f"## {area}", ""]
        if not figs:
            lines += ["Not measured yet: `make bench` writes `bench/results.json`, and the "
                      "next build of this site shows its figures here.", ""]
            continue
        lines += ["| figure | value | goal | measured | reproduce |",
                  "|---|---|---|---|---|"]
        lines += [f"| {_cell(f['figure'])} | {_cell(f['value'])} | {_cell(f['goal'])} | "
                  f"{_when(f)} | `{f['command']}` |" for f in figs]
        lines.append("")
    return "\n".join(lines + tables(data))


def tables(data: dict[str, list[dict[str, object]]]) -> list[str]:
    """Every table the benches printed, under the command that printed it."""
    lines = ["## Every table of the last runs", ""]
    for table in data["tables"]:
        lines += [f"### {_cell(str(table['title']))}", "",
                  f"`{table['command']}` ({_when(table)})", "",
                  "| " + " | ".join(_cell(c) for c in table["columns"]) + " |",
                  "|" + "---|" * len(table["columns"])]
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table["rows"]]
        lines.append("")
    return lines
