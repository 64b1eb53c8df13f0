"""The Benchmarks page: one table per area, each figure with the command that reproduces it,
from `bench/figures.json`, then the tables of the last `make bench` (`bench/results.json`).
How a figure was reached (earlier values, the load it was measured at) goes into the notes
under the table, never into a cell."""

from __future__ import annotations

import json
from pathlib import Path

from docgen.nodes import ROOT

FIGURES = ROOT / "bench" / "figures.json"
RESULTS = ROOT / "bench" / "results.json"  # `make bench`'s tables (scripts/bench_results.py)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def benchmarks_page(path: Path = FIGURES, results: Path = RESULTS) -> str:
    data = json.loads(path.read_text())
    lines = ["# Benchmarks", "",
             "`make bench` runs every `bench/bench_*.py`, prints its tables and collects them "
             "into `bench/results.json`, shown at the end of this page. Above them, one table "
             "per area of the headline figures (`bench/figures.json`), each with the bench "
             f"that measures it. Measured on {data['machine']}.", ""]
    areas: dict[str, list[dict[str, str]]] = {}
    for fig in data["figures"]:
        areas.setdefault(fig["area"], []).append(fig)
    for area, figs in areas.items():
        lines += [f"## {area}", "", "| figure | value | goal | reproduce |", "|---|---|---|---|"]
        notes: list[str] = []
        for fig in figs:
            mark = ""
            if fig.get("note"):
                notes.append(fig["note"])
                mark = f" [{len(notes)}]"
            lines.append(f"| {_cell(fig['figure'])}{mark} | {_cell(fig['value'])} | "
                         f"{_cell(fig['goal'])} | `{fig['command']}` |")
        lines.append("")
        if notes:
            lines += ["Notes:", ""] + [f"{i}. {n}" for i, n in enumerate(notes, 1)] + [""]
    return "\n".join(lines + last_run(results))


def last_run(results: Path = RESULTS) -> list[str]:
    """Every table the last `make bench` printed, under the command that printed it."""
    lines = ["## The last `make bench`", ""]
    if not results.is_file():
        return [*lines, "No run collected yet: `make bench` writes `bench/results.json`, "
                "and the next build of this site shows its tables here.", ""]
    data = json.loads(results.read_text())
    lines += [f"Run on {data['date']} ({data['machine']}); each table as its bench printed it.",
              ""]
    for table in data["tables"]:
        lines += [f"### {_cell(table['title'])}", "", f"`{table['command']}`", "",
                  "| " + " | ".join(_cell(c) for c in table["columns"]) + " |",
                  "|" + "---|" * len(table["columns"])]
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table["rows"]]
        lines.append("")
    return lines
