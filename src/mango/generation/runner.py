"""Run the MANGO modules and save every artifact, report and transcript beside the output.

This is the Python API behind `mango generate`: `run_library` (modules I+II),
`run_oracle` (module III), `run_all` (a task file with its scenes) and `score_run`.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mango.errors import InputError
from mango.generation import engine
from mango.generation.metrics import OracleScore, score_oracle, summarize
from mango.generation.models import (
    AtomicLibraryAnswer,
    AtomicOracleLibrary,
    FunctionCatalog,
    SceneFile,
    SceneTask,
    load_atomic_library,
    load_atomic_oracle_library,
    read_json,
    select_scene,
)
from mango.generation.pipeline import (
    GenerationConfig,
    LibraryRun,
    MangoPipeline,
    OracleRun,
    ProgressFn,
    make_pipeline,
)
from mango.llm.backend import LLMBackend, Refusal

ATOMIC_LIBRARY = "atomic_library.json"
ORACLE_LIBRARY = "atomic_oracle_library.json"


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def slugify(text: str, limit: int = 48) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:limit] or "task"


def _meta(backend: LLMBackend, config: GenerationConfig) -> dict[str, Any]:
    return {"backend": backend.name, "model": backend.model_for("generator"),
            "ablation": config.ablation}


@dataclass
class Session:
    """A backend plus function library and configuration, shared by the runs of a command."""

    backend: LLMBackend
    library: engine.FunctionLibrary
    catalog: FunctionCatalog
    config: GenerationConfig = field(default_factory=GenerationConfig)
    progress: ProgressFn | None = None

    def pipeline(self) -> MangoPipeline:
        return make_pipeline(self.backend, self.catalog, self.config, self.progress, self.library)


def run_library(session: Session, tasks: list[str], out_dir: str | Path) -> LibraryRun:
    """Modules I+II; writes the two libraries, `library_report.json` and the transcript."""
    out = Path(out_dir)
    pipe = session.pipeline()
    run = pipe.generate_library(tasks)
    write_json(out / ATOMIC_LIBRARY, run.atomic_library.model_dump(mode="json"))
    write_json(out / ORACLE_LIBRARY, run.oracle_library.model_dump(mode="json"))
    write_json(out / "library_report.json", {
        **_meta(session.backend, session.config), "approved": run.approved, "tasks": tasks,
        "module1": run.module1.to_json(), "module2": run.module2.to_json()})
    pipe.transcript.write_jsonl(out / "library_transcript.jsonl")
    return run


def load_libraries(directory: str | Path) -> tuple[AtomicLibraryAnswer, AtomicOracleLibrary]:
    """The two library files a `library` run wrote."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a directory (expected the output of 'mango generate library')",
                         file=str(d))
    for name in (ATOMIC_LIBRARY, ORACLE_LIBRARY):
        if not (d / name).exists():  # anything else there is named by the reader (a FIFO...)
            raise InputError(f"missing {name}", file=str(d))
    return load_atomic_library(d / ATOMIC_LIBRARY), load_atomic_oracle_library(d / ORACLE_LIBRARY)


def run_oracle(
    session: Session,
    instruction: str,
    scene: SceneTask,
    libraries: tuple[AtomicLibraryAnswer | None, AtomicOracleLibrary | None],
    out_path: str | Path,
    pipe: MangoPipeline | None = None,
) -> OracleRun:
    """Module III; writes the oracle, `<stem>.report.json` and `<stem>.transcript.jsonl`."""
    out = Path(out_path)
    pipe = pipe or session.pipeline()
    first = len(pipe.transcript.entries)
    atomic, oracles = libraries
    if session.config.ablation == "no_module1":
        atomic = None
    if session.config.ablation == "no_module2":
        oracles = None
    run = pipe.module3(instruction, scene, atomic, oracles)
    oracle_json = run.oracle.to_json_dict()
    write_json(out, oracle_json)
    score = score_oracle(oracle_json, scene, None, session.library)
    write_json(out.with_name(out.stem + ".report.json"), {
        **_meta(session.backend, session.config), "instruction": instruction,
        "approved": run.approved, "reason": run.module3.reason,
        "valid": score.valid, "executable": score.executable, "problems": score.problems,
        "module3": run.module3.to_json()})
    with out.with_name(out.stem + ".transcript.jsonl").open("w", encoding="utf-8") as fh:
        for e in pipe.transcript.entries[first:]:
            fh.write(json.dumps(e.__dict__, ensure_ascii=False) + "\n")
    return run


@dataclass
class AllRun:
    library: LibraryRun
    oracles: list[tuple[str, Path, OracleRun]]
    seconds: float
    refused: list[tuple[str, str]] = field(default_factory=list)  # (instruction, why)

    @property
    def approved(self) -> bool:
        return self.library.approved and not self.refused and all(
            r.approved for _, _, r in self.oracles)


def run_all(session: Session, tasks: list[str], scenes: SceneFile, out_dir: str | Path,
            scenes_file: str | None = None) -> AllRun:
    """Library for all tasks, then one oracle per task; `summary.json` lists them."""
    start = time.perf_counter()
    out = Path(out_dir)
    chosen = [select_scene(scenes, t, scenes_file) for t in tasks]  # fail before any work
    lib = run_library(session, tasks, out)
    pipe = session.pipeline()
    results = []
    refused: list[tuple[str, str]] = []
    for i, (task, scene) in enumerate(zip(tasks, chosen, strict=True)):
        path = out / "oracles" / f"{i:02d}_{slugify(task)}.json"
        if session.progress:
            session.progress(f"oracle {i + 1}/{len(tasks)}: {task}")
        try:
            results.append((task, path, run_oracle(
                session, task, scene, (lib.atomic_library, lib.oracle_library), path, pipe)))
        except Refusal as exc:  # one instruction it cannot read does not stop the others
            refused.append((task, str(exc)))
    total = time.perf_counter() - start
    write_json(out / "summary.json", {
        **_meta(session.backend, session.config), "seconds": total,
        "library": {"approved": lib.approved, "module1_iterations": lib.module1.iterations,
                    "module1_seconds": lib.module1.seconds,
                    "module2_iterations": lib.module2.iterations,
                    "module2_seconds": lib.module2.seconds},
        "oracles": [{"instruction": t, "file": str(p.relative_to(out)), "approved": r.approved,
                     "iterations": r.module3.iterations, "seconds": r.module3.seconds}
                    for t, p, r in results],
        "refused": [{"instruction": t, "reason": why} for t, why in refused]})
    return AllRun(lib, results, total, refused)


# ----------------------------------------------------------------------------- scoring


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _has_entry(scenes: SceneFile, instruction: str) -> bool:
    return any(_norm(e.id) == _norm(instruction) for e in scenes.task_objects)


def load_truths(path: str | Path) -> dict[str, dict[str, Any]]:
    """Ground-truth oracles by normalized instruction, from one file or a directory."""
    p = Path(path)
    files = sorted(p.glob("*.json")) if p.is_dir() else [p]
    if not files:
        raise InputError("no ground-truth oracle files", file=str(p))
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        data = read_json(f)
        if isinstance(data, dict) and "plan" in data:
            out[_norm(str(data.get("instruction", "")))] = data
    if not out:
        raise InputError("no oracle (an object with 'plan') found", file=str(p))
    return out


def score_run(
    target: str | Path,
    scenes: SceneFile | None = None,
    truths: dict[str, dict[str, Any]] | None = None,
    library: engine.FunctionLibrary | None = None,
    scenes_file: str | None = None,
    strict: bool = True,
) -> tuple[list[OracleScore], dict[str, Any]]:
    """Score one oracle file or a `generate all` directory; returns scores and a summary.

    `strict=False`: an oracle whose instruction has no entry in `scenes` is scored without
    executability (None) instead of being an error, for scenes given by default."""
    p = Path(target)
    timing: dict[str, Any] = {}
    if p.is_dir():
        files = sorted((p / "oracles").glob("*.json")) if (p / "oracles").is_dir() else sorted(
            p.glob("*.json"))
        files = [f for f in files if not f.name.endswith(".report.json")
                 and f.name not in {ATOMIC_LIBRARY, ORACLE_LIBRARY, "summary.json",
                                    "library_report.json"}]
        rep = p / "library_report.json"
        if rep.is_file():
            lib_rep = read_json(rep)
            for m in ("module1", "module2"):
                timing[m] = {"iterations": lib_rep.get(m, {}).get("iterations"),
                             "seconds": lib_rep.get(m, {}).get("seconds")}
    else:
        files = [p]
    if not files:
        raise InputError("no oracle files to score", file=str(p))
    scores = []
    for f in files:
        oracle = read_json(f)
        if not isinstance(oracle, dict):
            raise InputError("an oracle must be a JSON object", file=str(f))
        instruction = str(oracle.get("instruction", ""))
        scene = None
        if scenes is not None and (strict or _has_entry(scenes, instruction)):
            scene = select_scene(scenes, instruction, scenes_file)
        truth = (truths or {}).get(_norm(instruction))
        report_path = f.with_name(f.stem + ".report.json")
        run_report = read_json(report_path) if report_path.is_file() else None
        scores.append(score_oracle(oracle, scene, truth, library, run_report))
    summary = summarize(scores)
    m3 = [s.seconds for s in scores if s.seconds is not None]
    timing["module3"] = {"iterations": summary.get("mean_iterations"),
                         "seconds": sum(m3) if m3 else None}
    summary["modules"] = timing
    return scores, summary
