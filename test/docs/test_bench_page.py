"""`make bench`'s output reaches the Benchmarks page: the JSON Lines the benches append to
(bench/report.py: tables and headline figures) are collected (scripts/bench_results.py) and
the page is written from them, each figure with its command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from docgen.bench import benchmarks_page  # noqa: E402

BENCH = """import os, sys
sys.path.insert(0, sys.argv[1])
from report import headline, print_table
print_table('demo table', ['case', 'rate'], [('a', '1.0/s'), ('b | c', '2.0/s')])
headline(sys.argv[2], 'demo rate', os.environ['VALUE'], goal='>= 1/s')
"""


def _bench(tmp_path: Path, name: str, area: str, value: str) -> subprocess.CompletedProcess:
    bench = tmp_path / f"{name}.py"
    bench.write_text(BENCH)
    return subprocess.run([sys.executable, str(bench), str(ROOT / "bench"), area],
                          capture_output=True, text=True, timeout=60,
                          env={"MANGO_BENCH_JSON": str(tmp_path / "tables.jsonl"), "PATH": "",
                               "VALUE": value})


def _collect(tmp_path: Path) -> Path:
    results = tmp_path / "results.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_results.py"),
                    str(tmp_path / "tables.jsonl"), "-o", str(results)],
                   check=True, capture_output=True, timeout=60)
    (tmp_path / "tables.jsonl").unlink()
    return results


@pytest.mark.parallel
def test_a_bench_run_goes_from_make_bench_to_the_page(tmp_path: Path) -> None:
    assert _bench(tmp_path, "bench_demo", "Oracle", "1.5/s").returncode == 0
    assert _bench(tmp_path, "bench_other", "Perception", "7/s").returncode == 0
    results = _collect(tmp_path)
    page = benchmarks_page(results=results)
    assert "### demo table" in page and "| b \\| c | 2.0/s |" in page
    command = f"python bench/bench_demo.py {ROOT / 'bench'} Oracle"
    oracle = page.index("## Oracle\n")
    row = page.index("| demo rate | 1.5/s | >= 1/s |")
    assert oracle < row < page.index("## Perception\n")  # its area's table
    assert f"`{command}` |" in page[row:].splitlines()[0]
    # a bench run again replaces its own figures and keeps the other benches'
    assert _bench(tmp_path, "bench_demo", "Oracle", "1.7/s").returncode == 0
    _collect(tmp_path)
    data = json.loads(results.read_text())
    assert [f["value"] for f in data["figures"]] == ["1.7/s", "7/s"]
    assert len(data["tables"]) == 2


@pytest.mark.parallel
def test_a_figure_outside_the_pages_areas_is_refused(tmp_path: Path) -> None:
    done = _bench(tmp_path, "bench_demo", "Miscellany", "1/s")
    assert done.returncode != 0 and "'Miscellany' is not one of" in done.stderr


@pytest.mark.parallel
def test_without_a_run_the_page_says_how_to_make_one(tmp_path: Path) -> None:
    page = benchmarks_page(results=tmp_path / "results.json")
    assert "## Primitives\n\nNot measured yet: `make bench` writes `bench/results.json`" in page
