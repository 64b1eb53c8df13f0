"""Qwen2.5-Coder-1.5B's oracles for LIBERO tasks, replayed offline.

`bench/bench_libero_generation.py --backend record:DIR@local --model qwen1.5b
--library-backend offline --ablation baseline --save-scenes DIR --json` recorded these: the
model's answers (the record/replay cache), each task's imported scene with its BDDL goal
atoms, and the benchmark's verdict per task (`results.json`). Replaying the answers through
the same pipeline must give the same oracles' verdicts, task by task: the measured figures
stay reproducible without the model, and a change to the prompts or the pipeline that would
no longer reach the recorded answers fails here instead of silently changing the figure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.bddl.scoring import score_oracle
from mango.generation.backends import make_backend
from mango.generation.engine import load_function_library
from mango.generation.models import load_tasks
from mango.generation.pipeline import GenerationConfig, make_pipeline
from mango.llm.backend import Refusal

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "test" / "data" / "llm" / "libero_qwen1.5b"
RESULTS = json.loads((DATA / "results.json").read_text())["tasks"]


@pytest.fixture(scope="module")
def libraries():
    library, catalog = load_function_library(None)
    libs = make_pipeline(make_backend("offline"), catalog, GenerationConfig(),
                         library=library).generate_library(
        load_tasks(ROOT / "config" / "tasks" / "libero10.json"))
    pipe = make_pipeline(make_backend(f"replay:{DATA / 'cache'}"), catalog,
                         GenerationConfig(ablation="baseline"), library=library)
    return pipe, libs


@pytest.mark.parametrize("row", RESULTS, ids=[r["file"].removesuffix(".bddl") for r in RESULTS])
def test_the_recorded_answers_give_the_recorded_verdict(libraries, imported_libero, row) -> None:
    pipe, libs = libraries
    saved = imported_libero[row["file"].removesuffix(".bddl")]
    assert saved.goal_atoms == row["goal_atoms"]
    scene = saved.scene
    oracle, approved, refusal = None, False, None
    try:
        run = pipe.module3(row["instruction"], scene, libs.atomic_library, libs.oracle_library)
        oracle, approved = run.oracle.to_json_dict(), run.approved
    except Refusal as exc:
        refusal = str(exc)
    assert score_oracle(row["goal_atoms"], scene, oracle, approved, refusal) == \
        (row["ok"], row["cause"])
    entries = [e for e in pipe.transcript.entries if e.model]
    # the answers are the real model's, as llama.cpp named it when they were recorded
    assert entries and {e.model for e in entries} == {"qwen2.5-coder-1.5b-instruct-q4_k_m"}
