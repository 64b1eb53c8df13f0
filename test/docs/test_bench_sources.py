"""Every bench reaches the Benchmarks page: its tables through `report.print_table` and its
headline figures through `report.headline`, each in one of the page's areas. Checked on the
source, because a bench that names an unknown area only fails at the end of its run (up to
an hour for the long ones), after everything it measured."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
BENCHES = sorted(BENCH.glob("bench_*.py"))


def _areas() -> tuple[str, ...]:
    spec = importlib.util.spec_from_file_location("bench_report", BENCH / "report.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AREAS


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == name]


@pytest.mark.parallel
@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.stem)
def test_a_bench_reports_headline_figures_of_the_pages_areas(bench: Path) -> None:
    tree = ast.parse(bench.read_text(), str(bench))
    calls = _calls(tree, "headline")
    assert calls, f"{bench.name} reports no headline figure"
    for call in calls:
        area = call.args[0] if call.args else None
        assert isinstance(area, ast.Constant) and area.value in _areas(), (
            f"{bench.name}:{call.lineno}: headline area {ast.unparse(area) if area else None} "
            f"is not one of {_areas()}")


@pytest.mark.parallel
@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.stem)
def test_a_bench_prints_its_tables_through_report(bench: Path) -> None:
    """A rich Table printed directly would be missing from bench/results.json."""
    tree = ast.parse(bench.read_text(), str(bench))
    assert not _calls(tree, "Table"), f"{bench.name} builds a rich Table: use print_table"
    assert _calls(tree, "print_table"), f"{bench.name} prints no table"
