"""Choosing a backend by name and options."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from mango.errors import InputError
from mango.llm.backend import AgentCall
from mango.llm.cache import CachedBackend
from mango.llm.openai_compat import OpenAICompatBackend
from mango.llm.registry import backend_names, make_backend, model_backends


class Ok(BaseModel):
    ok: bool


class FixedBackend:
    """A backend a plug-in might register: one model, one canned answer."""

    name = "fixed"

    def __init__(self, model: str, answer: str = "no") -> None:
        self.model, self.answer = model, answer

    def model_for(self, role: str) -> str:
        return self.model

    def complete(self, call: AgentCall, schema):
        return schema.model_validate({"ok": self.answer == "yes"})


def test_openai_from_environment(chat_server, monkeypatch):
    R = chat_server.Reply
    monkeypatch.setenv("MANGO_LLM_BASE_URL", chat_server.url)
    monkeypatch.setenv("MANGO_LLM_MODEL", "env-model")
    monkeypatch.setenv("MANGO_LLM_ROLE_MODELS", "judge=judge-model, assessor=small")
    chat_server.push(R(json.dumps({"ok": True})))
    backend = make_backend("openai", api_key_env="")
    assert isinstance(backend, OpenAICompatBackend)
    assert backend.model_for("generator") == "env-model"
    assert backend.model_for("judge") == "judge-model"
    assert backend.complete(AgentCall("generator", "t", [{"role": "user", "content": "hi"}]),
                            Ok).ok
    assert chat_server.requests[0].body["model"] == "env-model"


def test_options_override_environment_and_strings_are_converted(chat_server, monkeypatch):
    monkeypatch.setenv("MANGO_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    backend = make_backend("openai", "m", base_url=chat_server.url, max_concurrency="3",
                           temperature="0.5", max_tokens="none", structured="prompt")
    cfg = backend.config
    assert cfg.base_url == chat_server.url
    assert (cfg.max_concurrency, cfg.temperature, cfg.max_tokens) == (3, 0.5, None)
    assert cfg.structured == "prompt"


def test_openai_without_model_is_an_input_error(monkeypatch):
    monkeypatch.delenv("MANGO_LLM_MODEL", raising=False)
    with pytest.raises(InputError, match="needs a model") as info:
        make_backend("openai")
    assert info.value.field == "model"


@pytest.mark.parametrize(
    ("kwargs", "field", "match"),
    [({"max_concurrency": "lots"}, "max_concurrency", "cannot read 'lots' as int"),
     ({"temprature": 0.1}, "temprature", "unknown option"),
     ({"role_models": "judge"}, "role_models", "cannot read")],
)
def test_bad_options_name_the_option(kwargs, field, match):
    with pytest.raises(InputError, match=match) as info:
        make_backend("openai", "m", base_url="http://127.0.0.1:1/v1", **kwargs)
    assert info.value.field == field


def test_unknown_backend_lists_the_choices():
    with pytest.raises(InputError) as info:
        make_backend("gpt-5")
    text = str(info.value)
    for name in ("openai", "local", "replay:DIR"):
        assert name in text
    assert "replay:DIR" in backend_names()
    # the offline planner is generation logic: test/generation/test_backends.py
    assert "offline" not in backend_names()


def test_a_registry_takes_backends_by_name(tmp_path):
    registry = model_backends()
    registry.register("fixed", lambda model, opts: FixedBackend(model or "m0", **opts))
    backend = registry.make("fixed", "m1", answer="yes")
    assert isinstance(backend, FixedBackend) and backend.model_for("judge") == "m1"
    assert "fixed" in registry.names() and "fixed" not in backend_names()
    rec = registry.make(f"record:{tmp_path}@fixed")
    assert isinstance(rec, CachedBackend) and isinstance(rec.inner, FixedBackend)
    with pytest.raises(ValueError, match="may not contain"):
        registry.register("a:b", lambda model, opts: FixedBackend("x"))


def test_cache_without_inner_needs_a_default_or_a_name(tmp_path):
    with pytest.raises(InputError, match="needs the backend it wraps") as info:
        make_backend(f"record:{tmp_path}")
    assert "openai" in str(info.value) and info.value.field == "backend"
    registry = model_backends()
    registry.register("fixed", lambda model, opts: FixedBackend(model or "m0"))
    registry.default_inner = "fixed"
    rec = registry.make(f"auto:{tmp_path}")
    assert isinstance(rec, CachedBackend) and isinstance(rec.inner, FixedBackend)


def test_cache_wrappers(chat_server, tmp_path):
    rec = make_backend(f"auto:{tmp_path}/c@openai", "m", base_url=chat_server.url)
    assert isinstance(rec, CachedBackend) and rec.mode == "auto"
    assert isinstance(rec.inner, OpenAICompatBackend)
    with pytest.raises(InputError, match="needs a directory"):
        make_backend("record:")
    with pytest.raises(InputError, match="unknown inner backend"):
        make_backend(f"record:{tmp_path}", inner="nope")


def test_local_options_are_checked_before_the_model_loads():
    with pytest.raises(InputError, match="unknown option") as info:
        make_backend("local", bogus="1")
    assert info.value.field == "bogus"
    with pytest.raises(InputError) as info:
        make_backend("local", threads="two")
    assert info.value.field == "threads"
