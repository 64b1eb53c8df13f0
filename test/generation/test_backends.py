"""The generation layer's backend names: `mango.llm`'s model backends plus the offline planner."""

from __future__ import annotations

import pytest

from mango.errors import InputError
from mango.generation.backends import backend_names, make_backend
from mango.generation.models import Feedback
from mango.generation.offline.planner import OfflinePlanner
from mango.llm.backend import AgentCall, LLMBackend
from mango.llm.cache import CachedBackend


def test_offline_is_the_default():
    backend = make_backend()
    assert isinstance(backend, OfflinePlanner) and isinstance(backend, LLMBackend)
    assert backend.name == "offline" and "not an LLM" in backend.model_for("judge")
    assert isinstance(make_backend("offline"), OfflinePlanner)


def test_unknown_backend_lists_the_choices():
    with pytest.raises(InputError) as info:
        make_backend("gpt-5")
    text = str(info.value)
    for name in ("offline", "openai", "local", "replay:DIR"):
        assert name in text
    assert backend_names()[:3] == ["offline", "openai", "local"]


def test_record_wraps_the_offline_planner_unless_told_otherwise(tmp_path):
    rec = make_backend(f"record:{tmp_path}")
    assert isinstance(rec, CachedBackend) and isinstance(rec.inner, OfflinePlanner)
    call = AgentCall("interpreter", "module3.interpret", [{"role": "user", "content": "x"}],
                     {"verdict": {"refinement_instructions": ["fix step 1"]}})
    assert rec.complete(call, Feedback).feedback == ["fix step 1"]
    replay = make_backend(f"replay:{tmp_path}")
    assert replay.name == "offline"
    assert replay.complete(call, Feedback).feedback == ["fix step 1"]
    named = make_backend(f"auto:{tmp_path}/b@offline")
    assert isinstance(named.inner, OfflinePlanner)
    with pytest.raises(InputError, match="unknown inner backend"):
        make_backend(f"record:{tmp_path}", inner="nope")
