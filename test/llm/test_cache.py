"""Record/replay cache: record through a real HTTP backend, replay with no server at all."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from mango.errors import InputError
from mango.llm.backend import AgentCall, BackendError
from mango.llm.cache import CachedBackend, CacheMiss, exchange_key
from mango.llm.openai_compat import OpenAICompatBackend, OpenAICompatConfig
from mango.llm.registry import make_backend


class Verdict(BaseModel):
    approved: bool
    score: float
    notes: list[str]


class Other(BaseModel):
    approved: bool


def call(role: str = "judge", text: str = "Judge candidate 1.", **context) -> AgentCall:
    return AgentCall(role=role, task="module3.judge",
                     messages=[{"role": "user", "content": text}], context=context)


def answer(i: float) -> str:
    return json.dumps({"approved": i > 1, "score": i + 0.1, "notes": [f"n{i}", "ünïcode"]})


def http_backend(server, **kw) -> OpenAICompatBackend:
    return OpenAICompatBackend(OpenAICompatConfig(base_url=server.url, model="m-1",
                                                  api_key_env=None, backoff_s=0.0,
                                                  max_retries=0, repair_attempts=0, **kw))


def test_record_then_replay_offline_is_identical(chat_server, tmp_path):
    R = chat_server.Reply
    chat_server.push(R(answer(1)), R(answer(2)), R(answer(3)))
    rec = CachedBackend(tmp_path, "record", http_backend(chat_server))
    recorded = [rec.complete(call(), Verdict),  # same request twice: two answers, in order
                rec.complete(call(), Verdict),
                rec.complete(call("assessor", "Assess."), Verdict)]
    assert [v.score for v in recorded] == [1.1, 2.1, 3.1]
    chat_server.close()  # replay must not need the server

    replay = make_backend(f"replay:{tmp_path}")
    assert replay.name == "openai" and replay.model_for("judge") == "m-1"
    replayed = [replay.complete(call(), Verdict), replay.complete(call(), Verdict),
                replay.complete(call("assessor", "Assess."), Verdict)]
    assert [v.model_dump_json() for v in replayed] == [v.model_dump_json() for v in recorded]
    # asked a third time: nothing was recorded for that
    with pytest.raises(CacheMiss, match=r"no answer #3 for judge task 'module3.judge'"):
        replay.complete(call(), Verdict)


def test_replay_miss_is_a_clear_error(chat_server, tmp_path):
    R = chat_server.Reply
    chat_server.push(R(answer(1)))
    CachedBackend(tmp_path, "record", http_backend(chat_server)).complete(call(), Verdict)
    replay = CachedBackend(tmp_path, "replay")
    with pytest.raises(CacheMiss) as info:
        replay.complete(call(text="A different prompt."), Verdict)
    text = str(info.value)
    assert str(tmp_path) in text and "judge" in text and "'m-1'" in text
    assert "none recorded" in text and f"record:{tmp_path}" in text
    # a different schema is a different key, too
    with pytest.raises(CacheMiss):
        replay.complete(call(), Other)


def test_auto_mode_asks_only_on_a_miss(chat_server, tmp_path):
    R = chat_server.Reply
    chat_server.default = lambda body: R(answer(len(chat_server.requests)))
    first = CachedBackend(tmp_path, "auto", http_backend(chat_server))
    a = first.complete(call(), Verdict)
    assert len(chat_server.requests) == 1 and first.misses == 1
    second = CachedBackend(tmp_path, "auto", http_backend(chat_server))
    assert second.complete(call(), Verdict) == a
    assert len(chat_server.requests) == 1 and second.hits == 1
    second.complete(call(text="new"), Verdict)
    assert len(chat_server.requests) == 2


def test_backend_errors_are_recorded_and_replayed(chat_server, tmp_path):
    R = chat_server.Reply
    chat_server.push(R("not json at all"))
    rec = CachedBackend(tmp_path, "record", http_backend(chat_server))
    with pytest.raises(BackendError) as recorded:
        rec.complete(call(), Verdict)
    with pytest.raises(BackendError) as replayed:
        CachedBackend(tmp_path, "replay").complete(call(), Verdict)
    assert str(replayed.value) == str(recorded.value)


def test_key_covers_backend_model_role_messages_context_and_schema():
    base = exchange_key("openai", "m", call(), Verdict)
    assert base == exchange_key("openai", "m", call(), Verdict)
    variants = [
        exchange_key("local", "m", call(), Verdict),
        exchange_key("openai", "m2", call(), Verdict),
        exchange_key("openai", "m", call(role="assessor"), Verdict),
        exchange_key("openai", "m", call(text="other"), Verdict),
        exchange_key("openai", "m", call(scene={"ids": ["bowl_1"]}), Verdict),
        exchange_key("openai", "m", call(), Other),
    ]
    assert len({base, *variants}) == 7
    # context key order does not matter; pydantic models in context are keyed as data
    assert exchange_key("o", "m", call(a=1, b=2), Verdict) == \
        exchange_key("o", "m", call(b=2, a=1), Verdict)
    v = Other(approved=True)
    assert exchange_key("o", "m", call(c=v), Verdict) == \
        exchange_key("o", "m", call(c={"approved": True}), Verdict)


def test_unkeyable_context_is_an_error():
    with pytest.raises(TypeError, match="cannot key a cache entry on a object"):
        exchange_key("o", "m", call(thing=object()), Verdict)


def test_replay_without_a_recording_names_the_directory(tmp_path):
    with pytest.raises(InputError, match="no recording here") as info:
        make_backend(f"replay:{tmp_path / 'nothing'}")
    assert str(tmp_path / "nothing") in str(info.value)


def test_corrupt_entry_names_file_and_line(chat_server, tmp_path):
    R = chat_server.Reply
    chat_server.push(R(answer(1)))
    CachedBackend(tmp_path, "record", http_backend(chat_server)).complete(call(), Verdict)
    entry = next(p for p in tmp_path.glob("*.json") if p.name != "manifest.json")
    entry.write_text('{\n  "answers": [\n  oops\n')
    with pytest.raises(InputError) as info:
        CachedBackend(tmp_path, "replay").complete(call(), Verdict)
    assert info.value.file == str(entry) and info.value.line == 3


def test_record_with_inner_named_in_the_backend_string(chat_server, tmp_path):
    R = chat_server.Reply
    chat_server.push(R(answer(1)))
    rec = make_backend(f"record:{tmp_path}@openai", "m-2", base_url=chat_server.url,
                       api_key_env=None)
    assert isinstance(rec, CachedBackend) and rec.mode == "record"
    rec.complete(call(), Verdict)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["backend"] == "openai" and manifest["models"]["judge"] == "m-2"
    with pytest.raises(InputError, match="recorded with model"):
        make_backend(f"replay:{tmp_path}", "another-model")


def test_replay_takes_the_one_recorded_request_that_differs_only_in_small_numbers(
        chat_server, tmp_path, caplog):
    """A sim run's request carries measured numbers that MuJoCo and the renderer do not
    reproduce bit for bit on another CPU (a dropped can 2 mm away): the recorded answer is
    still the one, with a warning. Text that differs, a number off by more than the
    tolerance, or two recorded requests that both match are misses."""
    R = chat_server.Reply
    chat_server.push(R(answer(1)), R(answer(2)), R(answer(3)))
    rec = CachedBackend(tmp_path, "record", http_backend(chat_server))
    seen = 'Observation: {"object_position": [0.002, -0.027, 0.95]}'
    rec.complete(call(text=seen, moved=0.166), Verdict)
    rec.complete(call(text="Place at 0.500 m.", moved=0.1), Verdict)
    rec.complete(call(text="Place at 0.506 m.", moved=0.1), Verdict)
    chat_server.close()
    replay = CachedBackend(tmp_path, "replay")
    drifted = 'Observation: {"object_position": [0.0, -0.027, 0.95]}'
    with caplog.at_level("WARNING", logger="mango.llm.cache"):
        got = replay.complete(call(text=drifted, moved=0.163), Verdict)
    assert got.score == 1.1 and "numbers differ" in caplog.text
    with pytest.raises(CacheMiss, match="no answer #2"):  # one answer was recorded for it
        replay.complete(call(text=drifted, moved=0.163), Verdict)
    fresh = CachedBackend(tmp_path, "replay")
    for text, moved in ((drifted.replace("Observation", "Seen"), 0.166),  # other words
                        ('Observation: {"object_position": [0.05, -0.027, 0.95]}', 0.166),
                        (seen, 0.2),  # context number too far
                        ("Place at 0.503 m.", 0.1)):  # near both placements: ambiguous
        with pytest.raises(CacheMiss):
            fresh.complete(call(text=text, moved=moved), Verdict)
