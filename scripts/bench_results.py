"""Collect the tables `make bench` printed (the JSON Lines its benches append to, see
bench/report.py) into bench/results.json, which the Benchmarks page shows beside the
headline figures: the last run's numbers, each table with the command that printed it.

Run: python scripts/bench_results.py out/bench/tables.jsonl [-o bench/results.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def collect(lines: list[str]) -> dict[str, object]:
    tables = [json.loads(line) for line in lines if line.strip()]
    for t in tables:
        missing = {"bench", "command", "title", "columns", "rows"} - t.keys()
        if missing:
            raise SystemExit(f"error: a table without {sorted(missing)}: {t.get('title')!r}")
    return {"date": datetime.date.today().isoformat(), "machine": platform.machine(),
            "tables": tables}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tables", type=Path)
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "bench" / "results.json")
    args = ap.parse_args()
    if not args.tables.is_file():
        raise SystemExit(f"error: {args.tables}: no such file (run `make bench` first)")
    data = collect(args.tables.read_text().splitlines())
    args.output.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.output} ({len(data['tables'])} tables)")


if __name__ == "__main__":
    main()
