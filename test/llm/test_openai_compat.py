"""OpenAI-compatible backend against a real HTTP server on loopback (scripted answers)."""

from __future__ import annotations

import itertools
import json
import threading

import pytest
from pydantic import BaseModel

from mango.errors import InputError
from mango.llm.backend import AgentCall, BackendError, LLMBackend
from mango.llm.openai_compat import OpenAICompatBackend, OpenAICompatConfig


class Step(BaseModel):
    action: str
    target: str


class Plan(BaseModel):
    steps: list[Step]
    done: bool


GOOD = json.dumps({"steps": [{"action": "pick_up", "target": "bowl_1"}], "done": True})
CALL = AgentCall(role="generator", task="module3.generate",
                 messages=[{"role": "system", "content": "You plan robot tasks."},
                           {"role": "user", "content": "Pick up the bowl."}])


def make(server, **kw) -> OpenAICompatBackend:
    cfg = dict(base_url=server.url, model="test-model", backoff_s=0.01, timeout_s=5.0,
               api_key_env=None)
    cfg.update(kw)
    return OpenAICompatBackend(OpenAICompatConfig(**cfg))


def test_json_schema_answer_is_validated_and_request_is_standard(chat_server):
    R = chat_server.Reply
    chat_server.push(R(GOOD))
    backend = make(chat_server, temperature=0.3, max_tokens=200, seed=7)
    assert isinstance(backend, LLMBackend)
    plan = backend.complete(CALL, Plan)
    assert plan == Plan(steps=[Step(action="pick_up", target="bowl_1")], done=True)
    body = chat_server.requests[0].body
    assert body["model"] == "test-model"
    assert body["messages"] == CALL.messages
    assert body["temperature"] == 0.3 and body["max_tokens"] == 200 and body["seed"] == 7
    rf = body["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["name"] == "Plan"
    assert rf["json_schema"]["schema"] == Plan.model_json_schema()
    assert backend.structured_mode() == "json_schema"


def test_rejected_json_schema_falls_back_to_json_object_and_is_remembered(chat_server):
    R = chat_server.Reply
    chat_server.push(R(status=400, error="response_format json_schema is not supported"),
                     R(GOOD), R(GOOD))
    backend = make(chat_server)
    assert backend.complete(CALL, Plan).done is True
    assert backend.complete(CALL, Plan).done is True
    # the second call goes straight to the mode that worked
    assert chat_server.formats() == ["json_schema", "json_object", "json_object"]
    second = chat_server.requests[1].body
    assert second["response_format"]["schema"] == Plan.model_json_schema()
    # the schema is also stated in the (single, leading) system message
    assert second["messages"][0]["role"] == "system"
    assert "You plan robot tasks." in second["messages"][0]["content"]
    assert '"steps"' in second["messages"][0]["content"]
    assert sum(m["role"] == "system" for m in second["messages"]) == 1
    assert backend.structured_mode() == "json_object"
    assert backend.stats.fallbacks == 1


def test_llama_cpp_python_style_500_rejection_falls_back_without_retrying(chat_server):
    R = chat_server.Reply
    msg = 'response_format type must be one of "text" or "json_object", but got: json_schema'
    chat_server.push(R(status=500, error=msg), R(GOOD))
    backend = make(chat_server)
    assert backend.complete(CALL, Plan).steps[0].target == "bowl_1"
    assert chat_server.formats() == ["json_schema", "json_object"]
    assert backend.stats.retries == 0


def test_server_without_any_format_support_gets_prompt_mode_and_fenced_answer(chat_server):
    R = chat_server.Reply
    fenced = f"Sure! Here is the plan:\n```json\n{GOOD}\n```\nHope this helps."
    chat_server.push(R(status=400, error="unknown field response_format"),
                     R(status=422, error="response_format: unsupported type"),
                     R(fenced))
    backend = make(chat_server)
    assert backend.complete(CALL, Plan).done is True
    assert chat_server.formats() == ["json_schema", "json_object", None]
    assert "response_format" not in chat_server.requests[2].body
    assert backend.structured_mode() == "prompt"


def test_every_mode_rejected_is_a_clear_error(chat_server):
    R = chat_server.Reply
    chat_server.default = lambda body: R(status=400, error="context length exceeded")
    backend = make(chat_server)
    with pytest.raises(BackendError) as info:
        backend.complete(CALL, Plan)
    text = str(info.value)
    assert chat_server.url in text and "test-model" in text
    assert "HTTP 400" in text and "context length exceeded" in text
    assert len(chat_server.requests) == 3  # json_schema, json_object, then plain prompt


def test_429_honours_retry_after(chat_server):
    R = chat_server.Reply
    chat_server.push(R(status=429, error="rate limited", headers={"Retry-After": "1"}), R(GOOD))
    backend = make(chat_server, backoff_s=0.0)
    assert backend.complete(CALL, Plan).done
    gap = chat_server.requests[1].t - chat_server.requests[0].t
    assert gap >= 0.95
    assert backend.stats.retries == 1


def test_429_honours_retry_after_ms(chat_server):
    R = chat_server.Reply
    chat_server.push(R(status=429, headers={"retry-after-ms": "300"}), R(GOOD))
    backend = make(chat_server, backoff_s=0.0)
    assert backend.complete(CALL, Plan).done
    assert chat_server.requests[1].t - chat_server.requests[0].t >= 0.28


def test_500_is_retried_with_exponential_backoff(chat_server):
    R = chat_server.Reply
    chat_server.push(R(status=500, error="boom"), R(status=503, error="overloaded"),
                     R(status=502, error="bad gateway"), R(GOOD))
    backend = make(chat_server, backoff_s=0.1, max_retries=4)
    assert backend.complete(CALL, Plan).done
    t = [r.t for r in chat_server.requests]
    gaps = [b - a for a, b in itertools.pairwise(t)]
    # nominal 0.1, 0.2, 0.4 s with +-25 % jitter
    assert 0.07 <= gaps[0] <= 0.25
    assert gaps[1] >= 0.15 and gaps[2] >= 0.3
    assert gaps[2] > gaps[0]
    assert backend.stats.retries == 3


def test_persistent_500_gives_up_with_server_model_and_reason(chat_server):
    R = chat_server.Reply
    chat_server.default = lambda body: R(status=500, error="internal meltdown")
    backend = make(chat_server, max_retries=2)
    with pytest.raises(BackendError) as info:
        backend.complete(CALL, Plan)
    text = str(info.value)
    assert "HTTP 500" in text and "internal meltdown" in text
    assert chat_server.url in text and "'test-model'" in text
    assert "3 attempts" in text and "generator" in text
    assert len(chat_server.requests) == 3


def test_timeout_is_retried_then_succeeds(chat_server):
    R = chat_server.Reply
    chat_server.push(R(GOOD, delay=1.5), R(GOOD))
    backend = make(chat_server, timeout_s=0.3)
    assert backend.complete(CALL, Plan).done
    # it did not wait for the slow answer: that answer is good, so waiting would have meant
    # one request and no retry (counted, not timed: a loaded machine is slower, not different)
    assert len(chat_server.requests) == 2
    assert backend.stats.retries == 1


def test_timeouts_exhausted_say_so(chat_server):
    R = chat_server.Reply
    chat_server.default = lambda body: R(GOOD, delay=1.0)
    backend = make(chat_server, timeout_s=0.2, max_retries=1)
    with pytest.raises(BackendError, match=r"timed out after 0.2 s.*2 attempts"):
        backend.complete(CALL, Plan)


def test_connection_refused_is_clear():
    cfg = OpenAICompatConfig(base_url="http://127.0.0.1:9/v1", model="m", backoff_s=0.0,
                             max_retries=1, api_key_env=None)
    with pytest.raises(BackendError, match=r"127.0.0.1:9/v1.*could not connect"):
        OpenAICompatBackend(cfg).complete(CALL, Plan)


def test_malformed_answer_is_repaired_by_re_asking_with_the_error(chat_server):
    R = chat_server.Reply
    bad = json.dumps({"steps": [{"action": "pick_up"}], "done": True})  # target missing
    chat_server.push(R(bad), R(GOOD))
    backend = make(chat_server)
    assert backend.complete(CALL, Plan).steps[0].target == "bowl_1"
    repair = chat_server.requests[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": bad}
    assert repair[-1]["role"] == "user"
    assert "steps[0].target" in repair[-1]["content"]
    assert "Field required" in repair[-1]["content"]
    assert backend.stats.repairs == 1


def test_answer_wrapped_under_schema_name_and_prose_is_recovered(chat_server):
    R = chat_server.Reply
    chat_server.push(R(f'The answer: {{"Plan": {GOOD}}} -- end'))
    assert make(chat_server).complete(CALL, Plan).done
    assert len(chat_server.requests) == 1


def test_malformed_answers_rejected_after_bounded_attempts(chat_server):
    R = chat_server.Reply
    chat_server.default = lambda body: R("I think you should pick up the bowl.")
    backend = make(chat_server, repair_attempts=2)
    with pytest.raises(BackendError) as info:
        backend.complete(CALL, Plan)
    text = str(info.value)
    assert "no valid Plan" in text and "3 answers" in text and "no JSON object" in text
    assert "'test-model'" in text and chat_server.url in text
    assert len(chat_server.requests) == 3


def test_truncated_answer_mentions_max_tokens(chat_server):
    R = chat_server.Reply
    chat_server.default = lambda body: R('{"steps": [{"action": "pi', finish_reason="length")
    backend = make(chat_server, repair_attempts=0, max_tokens=12)
    with pytest.raises(BackendError, match="cut off at max_tokens=12"):
        backend.complete(CALL, Plan)


def test_null_content_is_an_invalid_answer(chat_server):
    R = chat_server.Reply
    chat_server.push(R(None), R(GOOD))
    assert make(chat_server).complete(CALL, Plan).done
    assert "empty" in chat_server.requests[1].body["messages"][-1]["content"]


def test_auth_failure_is_not_retried_and_names_the_key_variable(chat_server, monkeypatch):
    R = chat_server.Reply
    monkeypatch.delenv("MY_LLM_KEY", raising=False)
    chat_server.default = lambda body: R(status=401, error="invalid api key")
    backend = make(chat_server, api_key_env="MY_LLM_KEY")
    with pytest.raises(BackendError, match=r"HTTP 401.*\$MY_LLM_KEY, which is not set"):
        backend.complete(CALL, Plan)
    assert len(chat_server.requests) == 1


def test_api_key_from_named_environment_variable(chat_server, monkeypatch):
    R = chat_server.Reply
    monkeypatch.setenv("MY_LLM_KEY", "sk-test-123")
    chat_server.push(R(GOOD))
    make(chat_server, api_key_env="MY_LLM_KEY").complete(CALL, Plan)
    headers = {k.lower(): v for k, v in chat_server.requests[0].headers.items()}
    assert headers["authorization"] == "Bearer sk-test-123"


def test_per_role_models(chat_server):
    R = chat_server.Reply
    chat_server.default = lambda body: R(GOOD)
    backend = make(chat_server, model="base", role_models={"judge": "big", "assessor": "small"})
    for role in ("generator", "assessor", "judge"):
        backend.complete(AgentCall(role, "t", CALL.messages), Plan)
    assert [r.body["model"] for r in chat_server.requests] == ["base", "small", "big"]
    assert backend.model_for("judge") == "big" and backend.model_for("hacker") == "base"


def test_concurrency_limit_holds_under_parallel_callers(chat_server):
    R = chat_server.Reply
    chat_server.default = lambda body: R(GOOD, delay=0.15)
    backend = make(chat_server, max_concurrency=2)
    errors: list[Exception] = []

    def run() -> None:
        try:
            backend.complete(CALL, Plan)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(chat_server.requests) == 6
    assert chat_server.max_in_flight == 2


def test_forced_mode_is_used_alone(chat_server):
    R = chat_server.Reply
    chat_server.push(R(GOOD))
    make(chat_server, structured="json_object").complete(CALL, Plan)
    assert chat_server.formats() == ["json_object"]


@pytest.mark.parametrize(("field", "value"), [("max_concurrency", 0), ("timeout_s", 0),
                                              ("structured", "xml"), ("temperature", 5.0)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(InputError) as info:
        OpenAICompatConfig(base_url="http://x/v1", model="m", **{field: value})
    assert info.value.field == field


def test_truncated_answer_is_re_asked_without_the_loop_and_with_a_penalty(chat_server):
    R = chat_server.Reply
    looped = '{"steps": [{"action": "pick_up", "target": "bowl bowl bowl bowl'
    chat_server.push(R(looped, finish_reason="length"), R(GOOD))
    assert make(chat_server, max_tokens=20).complete(CALL, Plan).done
    first, second = (r.body for r in chat_server.requests)
    assert "frequency_penalty" not in first
    assert second["frequency_penalty"] == 0.5
    assert all(m["content"] != looped for m in second["messages"])
    assert second["messages"][:2] == CALL.messages
    assert "cut off" in second["messages"][-1]["content"]
    assert "short JSON object" in second["messages"][-1]["content"]
