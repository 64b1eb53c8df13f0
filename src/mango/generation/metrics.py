"""Metrics of generated oracles: validity, executability, similarity to a ground truth.

- validity: the oracle has the spec §2 structure and every `handle_as` parses and
  type-checks against the function library (predicates exist, arities match);
- executability: it also passes Execution Reliability on its scene (ids grounded, kinds
  right, every condition and the tracker dry-run on the scene's first state);
- similarity: normalized Levenshtein similarity (1 - distance / longer length) between the
  canonical texts of the two oracles: the spec §2 fields only, keys sorted, expressions in
  the engine's canonical form, so formatting and extra fields ("goal", "notes") do not count.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz.distance import Levenshtein

from mango.errors import InputError
from mango.generation import engine
from mango.generation.models import SceneTask
from mango.generation.reliability import ExecutionReliabilityAssessor


def _canonical_expr(text: str) -> str:
    try:
        return engine.format_expression(engine.parse_expression(text))
    except InputError:
        return " ".join(str(text).split())


def _canonical_node(node: Any) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key in ("step", "execution_mode", "action_id", "parameters", "monitoring",
                    "actions", "steps", "oracle_id", "handle_as"):
            if key not in node or node[key] is None:
                continue
            value = node[key]
            if key == "handle_as":
                value = _canonical_expr(value)
            elif key in {"actions", "steps", "monitoring"}:
                value = [_canonical_node(v) for v in value]
            elif key == "parameters" and isinstance(value, dict):
                value = {str(k): str(v) for k, v in value.items()}
            out[key] = value
        return out
    return node


def canonical_text(oracle: dict[str, Any]) -> str:
    """The text similarity is measured on (spec §2 fields only, canonical expressions)."""
    data = {
        "instruction": " ".join(str(oracle.get("instruction", "")).lower().split()),
        "execution_mode": oracle.get("execution_mode", "sequential"),
        "plan": [_canonical_node(n) for n in oracle.get("plan", [])],
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def similarity(oracle: dict[str, Any], truth: dict[str, Any]) -> float:
    """Normalized Levenshtein similarity in [0, 1] of the canonical texts."""
    return float(Levenshtein.normalized_similarity(canonical_text(oracle), canonical_text(truth)))


def validity(oracle: dict[str, Any], library: engine.FunctionLibrary | None = None
             ) -> tuple[bool, list[str]]:
    """Structure and expressions valid (no scene needed)."""
    library = library or engine.FunctionLibrary.default()
    try:
        loaded = engine.load_oracle(oracle)
    except InputError as exc:
        return False, [f"structure: {exc}"]
    problems: list[str] = []
    for path, action in loaded.actions():
        for k, mon in enumerate(action.monitoring):
            try:
                engine.compile_expression(engine.parse_expression(mon.handle_as), library)
            except InputError as exc:
                problems.append(f"step {path} monitoring[{k}]: {exc}")
    return not problems, problems


def executability(oracle: dict[str, Any], scene: SceneTask,
                  library: engine.FunctionLibrary | None = None) -> tuple[bool, list[str]]:
    """Passes Execution Reliability on the scene (grounding, kinds, dry run)."""
    res = ExecutionReliabilityAssessor(scene, library).check(oracle)
    return res.ok, res.issues


@dataclass
class OracleScore:
    instruction: str
    valid: bool
    executable: bool | None
    similarity: float | None
    approved: bool | None = None
    iterations: int | None = None
    seconds: float | None = None
    problems: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def score_oracle(
    oracle: dict[str, Any],
    scene: SceneTask | None = None,
    truth: dict[str, Any] | None = None,
    library: engine.FunctionLibrary | None = None,
    run_report: dict[str, Any] | None = None,
) -> OracleScore:
    """All metrics of one oracle; scene and truth are optional (their metrics become None)."""
    ok, problems = validity(oracle, library)
    execu = None
    if scene is not None:
        execu, more = executability(oracle, scene, library)
        problems = problems + [p for p in more if p not in problems]
    sim = similarity(oracle, truth) if truth is not None else None
    m3 = (run_report or {}).get("module3") or {}
    return OracleScore(
        instruction=str(oracle.get("instruction", "")), valid=ok, executable=execu,
        similarity=sim, approved=m3.get("approved"), iterations=m3.get("iterations"),
        seconds=m3.get("seconds"), problems=problems)


def summarize(scores: list[OracleScore]) -> dict[str, Any]:
    """Rates and means over a set of scored oracles."""
    n = len(scores)
    if n == 0:
        return {"n": 0}
    sims = [s.similarity for s in scores if s.similarity is not None]
    exe = [s.executable for s in scores if s.executable is not None]
    its = [s.iterations for s in scores if s.iterations is not None]
    secs = [s.seconds for s in scores if s.seconds is not None]
    return {
        "n": n,
        "validity": sum(s.valid for s in scores) / n,
        "executability": (sum(exe) / len(exe)) if exe else None,
        "similarity": (sum(sims) / len(sims)) if sims else None,
        "min_similarity": min(sims) if sims else None,
        "mean_iterations": (sum(its) / len(its)) if its else None,
        "mean_seconds": (sum(secs) / len(secs)) if secs else None,
    }
