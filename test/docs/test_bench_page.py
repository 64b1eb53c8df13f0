"""`make bench`'s tables reach the Benchmarks page: the JSON Lines the benches append to
(bench/report.py) are collected (scripts/bench_results.py) and shown with their commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from docgen.bench import benchmarks_page  # noqa: E402


@pytest.mark.parallel
def test_a_bench_table_goes_from_make_bench_to_the_page(tmp_path: Path) -> None:
    tables = tmp_path / "tables.jsonl"
    bench = tmp_path / "bench_demo.py"
    bench.write_text("import sys\nsys.path.insert(0, sys.argv[1])\nfrom report import "
                     "print_table\nprint_table('demo table', ['case', 'rate'], "
                     "[('a', '1.0/s'), ('b | c', '2.0/s')])\n")
    done = subprocess.run([sys.executable, str(bench), str(ROOT / "bench")], capture_output=True,
                          text=True, env={"MANGO_BENCH_JSON": str(tables), "PATH": ""},
                          timeout=60)
    assert done.returncode == 0, done.stderr
    record = json.loads(tables.read_text())
    assert record["rows"] == [["a", "1.0/s"], ["b | c", "2.0/s"]]
    results = tmp_path / "results.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_results.py"), str(tables),
                    "-o", str(results)], check=True, capture_output=True, timeout=60)
    page = benchmarks_page(results=results)
    assert "### demo table" in page and "| b \\| c | 2.0/s |" in page
    assert f"`python bench/bench_demo.py {ROOT / 'bench'}`" in page
    assert "| step tracker, 10-action oracle, 50-object state |" in page  # the headline figures
