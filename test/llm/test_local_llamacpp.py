"""The real path: llama.cpp (xllamacpp) serving the offline Qwen2.5-Coder-0.5B on loopback."""

from __future__ import annotations

import threading
import time
from typing import Annotated, Literal

import httpx
import pytest
from pydantic import BaseModel, Field

from mango.errors import InputError
from mango.llm.backend import AgentCall
from mango.llm.cache import CachedBackend
from mango.llm.local import KNOWN_MODELS, LocalBackend, LocalServer

pytestmark = pytest.mark.slow


class Step(BaseModel):
    action: Literal["pick_up", "place", "open", "close"]
    target: str = Field(min_length=1)


class Plan(BaseModel):
    steps: list[Step] = Field(min_length=1, max_length=4)


class Score(BaseModel):
    score: int = Field(ge=0, le=10)
    issues: list[Annotated[str, Field(max_length=60)]] = Field(max_length=2)


PLAN_CALL = AgentCall(
    role="generator",
    task="test.plan",
    messages=[
        {"role": "system", "content": "You turn robot instructions into atomic steps."},
        {"role": "user", "content": "Open the drawer, then put the bowl in it. "
                                    "Objects: drawer_1, bowl_1."},
    ],
)
SCORE_CALL = AgentCall(
    role="assessor",
    task="test.assess",
    messages=[{"role": "user", "content": "Rate from 0 to 10 how atomic the step "
                                          "'put the bowl in the drawer' is, with issues."}],
)


@pytest.fixture
def backend(llama_server):
    b = LocalBackend(server=llama_server, max_tokens=200, timeout_s=120)
    yield b
    b.close()


def test_server_is_real_llama_cpp_and_speaks_openai(llama_server):
    model = KNOWN_MODELS["qwen0.5b"]
    assert llama_server.base_url.startswith("http://127.0.0.1:")
    models = httpx.get(f"{llama_server.base_url}/models").json()
    (entry,) = models["data"]
    assert entry["id"] == model.alias == llama_server.alias
    assert entry["owned_by"] == "llamacpp"
    assert entry["meta"]["size"] > 400_000_000


def test_structured_call_with_enforced_json_schema(backend):
    t0 = time.perf_counter()
    plan = backend.complete(PLAN_CALL, Plan)
    elapsed = time.perf_counter() - t0
    assert isinstance(plan, Plan) and 1 <= len(plan.steps) <= 4
    assert backend.openai.structured_mode() == "json_schema"
    assert backend.openai.stats.repairs == 0 and backend.openai.stats.fallbacks == 0
    print(f"qwen0.5b plan call: {elapsed:.2f} s -> {plan.model_dump_json()}")


def test_json_object_with_schema_also_works_on_llama_cpp(llama_server):
    b = LocalBackend(server=llama_server, structured="json_object", max_tokens=120)
    score = b.complete(SCORE_CALL, Score)
    assert 0 <= score.score <= 10
    assert b.openai.stats.modes == {"json_object": 1}


def test_parallel_callers_are_served(llama_server):
    b = LocalBackend(server=llama_server, max_concurrency=2, max_tokens=80)
    results: list[Score] = []
    errors: list[Exception] = []

    def run() -> None:
        try:
            results.append(b.complete(SCORE_CALL, Score))
        except Exception as exc:  # pragma: no cover - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 2


def test_record_from_the_real_model_and_replay_bit_for_bit(llama_server, tmp_path):
    rec = CachedBackend(tmp_path, "record", LocalBackend(server=llama_server, max_tokens=120))
    recorded = rec.complete(SCORE_CALL, Score)
    replay = CachedBackend(tmp_path, "replay")
    assert replay.name == "local" and replay.model_for("assessor") == llama_server.alias
    assert replay.complete(SCORE_CALL, Score).model_dump_json() == recorded.model_dump_json()


def test_port_in_use_and_bad_model_files_are_clear(llama_server, tmp_path):
    with pytest.raises(InputError, match=f"port {llama_server.port} .* already in use"):
        LocalServer("qwen0.5b", port=llama_server.port)
    not_gguf = tmp_path / "weights.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 zip, not gguf")
    with pytest.raises(InputError, match="not a GGUF model") as info:
        LocalServer(not_gguf)
    assert info.value.file == str(not_gguf)
    with pytest.raises(InputError, match=r"not a known model name \(qwen0.5b, qwen1.5b\)"):
        LocalServer(tmp_path / "missing.gguf")
