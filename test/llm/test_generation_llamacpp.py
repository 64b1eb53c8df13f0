"""A whole MANGO Module III run with a real language model: llama.cpp + Qwen2.5-Coder-0.5B.

The libraries (modules I+II) come from the offline planner so that this test exercises
exactly Module III on the model. Plan quality from a 0.5B model is not asserted; what is
asserted is that every answer the loop used is schema-valid, that each iteration's reports
and verdict were recorded, and that the transcript holds every exchange with the model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from mango.generation.engine import load_function_library
from mango.generation.models import (
    AssessorReport,
    JudgeVerdict,
    OracleCandidate,
    expression_pattern,
    load_scene_file,
    select_scene,
)
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.pipeline import GenerationConfig, make_pipeline
from mango.generation.reliability import predicate_arguments
from mango.llm.cache import CachedBackend
from mango.llm.local import LocalBackend

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "test" / "data" / "llm"
INSTRUCTION = "put the black bowl in the bottom drawer of the cabinet and close it"
MAX_ITERATIONS = 1  # one full iteration already costs ~6 model calls of ~2k prompt tokens


@pytest.mark.timeout(1800)
def test_module3_runs_on_the_real_local_model(llama_server, tmp_path):
    library, catalog = load_function_library(None)
    scene = select_scene(load_scene_file(DATA / "drawer_scene.json"), INSTRUCTION)
    libs = make_pipeline(OfflinePlanner(), catalog, GenerationConfig(),
                         library=library).generate_library([INSTRUCTION])

    model = LocalBackend(server=llama_server, max_tokens=768)
    backend = CachedBackend(tmp_path / "recording", "record", model)
    progress: list[str] = []
    pipe = make_pipeline(backend, catalog, GenerationConfig(module3_max_iterations=MAX_ITERATIONS),
                         progress=progress.append, library=library)
    run = pipe.module3(INSTRUCTION, scene, libs.atomic_library, libs.oracle_library)

    # the candidate is schema-valid (it went through validation; check the round trip)
    assert isinstance(run.oracle, OracleCandidate)
    assert OracleCandidate.model_validate(run.oracle.to_json_dict()) == run.oracle
    assert run.oracle.instruction == INSTRUCTION

    res = run.module3
    assert 1 <= res.iterations == len(res.history) <= MAX_ITERATIONS
    assert len(progress) == res.iterations
    # the grammar held every expression to the scene's predicates and ids
    pattern = re.compile(expression_pattern(predicate_arguments(scene, catalog)))
    for record in res.history:
        candidate = OracleCandidate.model_validate(record.candidate)
        for _, action in candidate.actions():
            assert all(pattern.fullmatch(m.handle_as) for m in action.monitoring), action
        assert JudgeVerdict.model_validate(record.verdict).verdict in ("APPROVED", "REJECTED")
        aspects = {r["aspect"] for r in record.reports}
        assert aspects == {"logic", "compliance", "grounding", "execution_reliability"}
        for report in record.reports:
            AssessorReport.model_validate(report)
    last = JudgeVerdict.model_validate(res.history[-1].verdict)
    assert res.approved == last.approved
    assert res.reason.startswith("approved at iteration" if res.approved else "not approved")

    # every exchange went to the real model and is in the transcript and the recording
    entries = [e for e in pipe.transcript.entries if e.module == "module3"]
    assert len(entries) == res.calls >= 5  # generator + 3 assessors + judge (+ interpreter)
    assert {e.model for e in entries} == {llama_server.alias}
    assert all(e.error is None for e in entries if e.role in ("generator", "judge"))
    assert model.openai.stats.calls == len(entries)
    assert model.openai.structured_mode() == "json_schema"
    recorded = [p for p in (tmp_path / "recording").glob("*.json") if p.name != "manifest.json"]
    assert sum(len(json.loads(p.read_text())["answers"]) for p in recorded) == len(entries)
    transcript = tmp_path / "transcript.jsonl"
    pipe.transcript.write_jsonl(transcript)
    assert len(transcript.read_text().splitlines()) == len(pipe.transcript.entries)

    # replaying the recording reproduces the run without the model, bit for bit
    replay = make_pipeline(CachedBackend(tmp_path / "recording", "replay"), catalog,
                           GenerationConfig(module3_max_iterations=MAX_ITERATIONS),
                           library=library)
    again = replay.module3(INSTRUCTION, scene, libs.atomic_library, libs.oracle_library)
    assert again.oracle.to_json_dict() == run.oracle.to_json_dict()
    assert [h.verdict for h in again.module3.history] == [h.verdict for h in res.history]

    st = model.openai.stats
    print(f"\nmodule III on qwen0.5b: {res.iterations} iteration(s), {res.seconds:.1f} s, "
          f"{st.calls} calls, {st.prompt_tokens} prompt + {st.completion_tokens} completion "
          f"tokens, repairs {st.repairs}; {res.reason}")
    print("oracle:", json.dumps(run.oracle.to_json_dict()))
    for record in res.history:
        print("verdict:", json.dumps(record.verdict))
        for r in record.reports:
            print(f"  {r['aspect']}: {r['score']} {r['issues'][:2]}")


def test_libero_module3_requests_fit_and_share_their_prefix(llama_server):
    """Module III's requests on two LIBERO scenes, as the pipeline makes them, to the real
    server with the grounded schema as the grammar: each fits the default context (with the
    scene's ids and the library's tasks in the prompt's text the middle-drawer request was
    ~4.1k tokens), and the second reuses what the first evaluated — everything before the
    instruction and scene, which on a CPU is most of a call. One token is asked for."""
    from mango.generation.models import SceneTask, load_tasks
    from mango.llm.backend import AgentCall
    from mango.llm.local import DEFAULT_CTX

    library, catalog = load_function_library(None)
    libs = make_pipeline(OfflinePlanner(), catalog, GenerationConfig(), library=library
                         ).generate_library(load_tasks(ROOT / "config" / "tasks" / "libero10.json"))
    asked: list[tuple[AgentCall, type]] = []

    class Asking(OfflinePlanner):
        def complete(self, call, schema):
            asked.append((call, schema))
            return super().complete(call, schema)

    pipe = make_pipeline(Asking(), catalog, GenerationConfig(ablation="baseline"),
                         library=library)
    usage = []
    for name in ("open_the_middle_drawer_of_the_cabinet",
                 "KITCHEN_SCENE3_put_the_moka_pot_on_the_stove"):
        saved = json.loads((DATA / "libero_qwen1.5b" / "scenes" / f"{name}.json").read_text())
        scene = SceneTask.model_validate(saved["task_objects"][0])
        asked.clear()
        pipe.module3(scene.id, scene, libs.atomic_library, libs.oracle_library)
        ((call, schema),) = [a for a in asked if a[0].task == "module3.generate"]
        assert "SceneId" in schema.model_json_schema()["$defs"]  # the grounded schema
        r = httpx.post(f"{llama_server.base_url}/chat/completions", timeout=600, json={
            "model": llama_server.alias, "messages": call.messages, "max_tokens": 1,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "OracleCandidate", "schema": schema.model_json_schema()}}})
        assert r.status_code == 200, r.text[:300]
        usage.append(r.json()["usage"])
    assert all(u["prompt_tokens"] < DEFAULT_CTX // 2 for u in usage), usage
    assert usage[1]["prompt_tokens_details"]["cached_tokens"] > usage[1]["prompt_tokens"] * 0.6
