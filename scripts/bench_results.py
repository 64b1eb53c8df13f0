"""Collect what `make bench` printed (the JSON Lines its benches append to, see
bench/report.py: tables and headline figures) into bench/results.json, which the Benchmarks
page is written from: each record with the command that printed it and the day it ran.

A bench run alone (`MANGO_BENCH_JSON=out/t.jsonl python bench/bench_x.py`, then this script)
replaces that command's records and keeps the others'.

Run: python scripts/bench_results.py out/bench/tables.jsonl [-o bench/results.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {"table": {"bench", "command", "title", "columns", "rows"},
          "figure": {"bench", "command", "area", "figure", "value", "goal"}}


def _kind(record: dict[str, object]) -> str:
    return "figure" if "figure" in record else "table"


def collect(lines: list[str], before: dict[str, object] | None = None) -> dict[str, object]:
    """The new records, dated today, in place of `before`'s records of the same commands."""
    today = datetime.date.today().isoformat()
    new = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = json.loads(line)
        missing = FIELDS[_kind(record)] - record.keys()
        if missing:
            raise SystemExit(f"error: line {n}: a {_kind(record)} without {sorted(missing)}: "
                             f"{record.get('title') or record.get('figure')!r}")
        new.append({**record, "date": today})
    rerun = {r["command"] for r in new}
    old = [r for key in ("tables", "figures") for r in (before or {}).get(key, [])
           if r["command"] not in rerun]
    records = sorted([*old, *new], key=lambda r: r["bench"])  # stable: each bench's order
    return {"machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "tables": [r for r in records if _kind(r) == "table"],
            "figures": [r for r in records if _kind(r) == "figure"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tables", type=Path)
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "bench" / "results.json")
    args = ap.parse_args()
    if not args.tables.is_file():
        raise SystemExit(f"error: {args.tables}: no such file (run `make bench` first)")
    before = json.loads(args.output.read_text()) if args.output.is_file() else None
    data = collect(args.tables.read_text().splitlines(), before)
    args.output.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.output} ({len(data['figures'])} figures, {len(data['tables'])} tables)")


if __name__ == "__main__":
    main()
