"""Benchmark: the offline generator on held-out instructions it was not written for.

test/data/generation/heldout/heldout.yaml holds instructions written before the parser was
generalized (paraphrases of LIBERO-10, coordination, lists, anaphora, part-of references,
quantifiers, spatial references, sources, push, and some it must refuse); issue35.yaml, the set
written for issue 35 before the reader was changed (coordination over several-word names,
locatives after the noun, phrasal verbs, prepositions other than the benchmark's relation,
pronouns, ordinals, "except", purpose clauses, refusals). Each runs through
`mango generate oracle` (offline backend, libraries from the ten LIBERO-10 instructions) and
scores (and times the offline reader alone: p95 ms per instruction):
- an item with `expect`: exit 0, a non-empty plan, the static check (Execution Reliability:
  parse, types, grounding, dry run) passes, every expected atom is checked in a valid order
  (`mango.oracle.goal_order`, plus the item's own `order` pairs), no `absent` atom is checked;
- an item with `refuse`: exit 1, no oracle written, the reason names the given word.

Run: python bench/bench_heldout.py [--file heldout.yaml|issue35.yaml|PATH] [--json] [--only ID,...]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report import headline, print_table
from rich.markup import escape
from typer.testing import CliRunner

from mango.cli.main import app
from mango.cli.scenes import scene_file
from mango.generation.models import select_scene
from mango.generation.offline.grounding import ground_instruction
from mango.generation.reliability import ExecutionReliabilityAssessor
from mango.oracle.expr import parse_expression
from mango.oracle.goal_order import goal_order_problems
from mango.oracle.model import load_oracle, plan_entries
from mango.yaml_files import read_yaml_mapping

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "test" / "data" / "generation" / "heldout"
TASKS = ROOT / "config" / "tasks" / "libero10.json"


@dataclass
class ItemScore:
    id: str
    kind: str
    ok: bool
    seconds: float
    why: list[str] = field(default_factory=list)
    # an `expect` item's oracle ran: exit 0, a plan, the static check passes (None: a refusal)
    executable: bool | None = None
    reader_seconds: float = 0.0  # the offline reader alone: parse and ground on the scene


def scene_arg(item: dict[str, Any]) -> str:
    scene = str(item["scene"])
    return str(HELDOUT / scene) if scene.endswith(".json") else scene


def _step_of(entries: list[Any], atom: str) -> int | None:
    key = parse_expression(atom)
    for e in reversed(entries):
        for mon in e.action.monitoring:
            if any(str(a) == str(key) for a in _atoms(mon.handle_as)):
                return e.index
    return None


def _atoms(text: str) -> list[Any]:
    from mango.oracle.expr import iter_literals

    return [a for a, positive in iter_literals(parse_expression(text)) if positive]


def score_item(runner: CliRunner, item: dict[str, Any], libs: Path, tmp: Path) -> ItemScore:
    out = tmp / f"{item['id']}.json"
    t0 = time.perf_counter()
    res = runner.invoke(app, ["generate", "oracle", "--instruction", item["instruction"],
                              "--scene", scene_arg(item), "--libraries", str(libs),
                              "-o", str(out), "-q"])
    seconds = time.perf_counter() - t0
    why: list[str] = []
    score = ItemScore(item["id"], item.get("kind", ""), False, seconds, why,
                      reader_seconds=_reader_seconds(item))
    if "refuse" in item:
        word = str(item["refuse"]).lower()
        if res.exit_code != 1:
            why.append(f"exit {res.exit_code}, not 1")
        if out.exists():
            why.append("an oracle was written")
        if word not in res.stderr.lower():
            why.append(f"the reason does not name '{word}': {res.stderr.strip()[:160]!r}")
        score.ok = not why
        return score
    score.executable = False
    if res.exit_code != 0:
        why.append(f"exit {res.exit_code}: {res.stderr.strip()[:200]}")
    if not out.exists():
        why.append("no oracle written")
        return score
    data = json.loads(out.read_text())
    if not data.get("plan"):
        why.append("empty plan")
        return score
    scene = select_scene(scene_file(Path(scene_arg(item))), item["instruction"])
    er = ExecutionReliabilityAssessor(scene).check(data)
    why.extend(f"static check: {p}" for p in er.issues)
    score.executable = res.exit_code == 0 and not er.issues
    why.extend(str(p) for p in goal_order_problems(data, item["expect"]))
    entries = plan_entries(load_oracle(data))
    for first, then in item.get("order", []):
        a, b = _step_of(entries, first), _step_of(entries, then)
        if a is not None and b is not None and a not in entries[b].predecessors:
            why.append(f"{then} is not required to come after {first}")
    for atom in item.get("absent", []):
        if _step_of(entries, atom) is not None:
            why.append(f"checks {atom}, which the instruction excludes")
    score.ok = not why
    return score


def _reader_seconds(item: dict[str, Any]) -> float:
    """The offline reader's own time on the item (best of three, the scene already read)."""
    scene = select_scene(scene_file(Path(scene_arg(item))), item["instruction"])
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        ground_instruction(item["instruction"], scene)
        best = min(best, time.perf_counter() - t0)
    return best


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    as_json = "--json" in sys.argv
    only = set()
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    name = "heldout.yaml"
    if "--file" in sys.argv:
        name = sys.argv[sys.argv.index("--file") + 1]
    path = Path(name) if Path(name).is_file() else HELDOUT / name
    items = read_yaml_mapping(path, "held-out set")["items"]
    if only:
        items = [i for i in items if i["id"] in only]
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        libs = tmp / "libs"
        res = runner.invoke(app, ["generate", "library", "--tasks", str(TASKS), "-o", str(libs),
                                  "-q"])
        if res.exit_code != 0:
            raise SystemExit(f"generate library failed: {res.stderr}")
        scores = [score_item(runner, item, libs, tmp) for item in items]
    passed = sum(s.ok for s in scores)
    by_kind: dict[str, list[ItemScore]] = {}
    for s in scores:
        by_kind.setdefault(s.kind, []).append(s)
    if as_json:
        print(json.dumps({"file": path.name, "passed": passed, "n": len(scores),
                          "reader_ms_p95": _p95([s.reader_seconds * 1000 for s in scores]),
                          "items": [s.__dict__ for s in scores]}, indent=1))
        return
    print_table(f"held-out instructions ({path.name}): failures", ["id", "kind", "why"],
                [(s.id, s.kind, escape("; ".join(s.why)[:300])) for s in scores if not s.ok])
    rows = [(k, f"{sum(s.ok for s in v)}/{len(v)}", _executable(v))
            for k, v in sorted(by_kind.items())]
    rows.append(("all", f"{passed}/{len(scores)}", _executable(scores)))
    ms = sorted(s.seconds * 1000 for s in scores)
    rows.append(("median ms per oracle", f"{ms[len(ms) // 2]:.0f}", ""))
    rows.append(("offline reader ms, p95",
                 f"{_p95([s.reader_seconds * 1000 for s in scores]):.1f}", ""))
    print_table(f"held-out instructions ({path.name}, offline planner)",
                ["kind", "passed", "executable"], rows)
    headline("Oracle generation", f"offline generation on the held-out instructions "
             f"({path.name}): passed (refusals included); ms per oracle "
             "(median)", f"{passed}/{len(scores)}; {ms[len(ms) // 2]:.0f} ms", "report")


def _executable(scores: list[ItemScore]) -> str:
    """Executable oracles among the items that expect one ("-" where all must be refused)."""
    runs = [s.executable for s in scores if s.executable is not None]
    return f"{sum(runs)}/{len(runs)}" if runs else "-"


if __name__ == "__main__":
    main()
