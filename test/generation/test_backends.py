"""The generation layer's backend names: `mango.llm`'s model backends plus the offline planner."""

from __future__ import annotations

from pathlib import Path

import pytest

from mango.errors import InputError
from mango.generation.backends import backend_names, make_backend
from mango.generation.fallback import ReaderFirstBackend
from mango.generation.models import Feedback, OracleCandidate
from mango.generation.offline.planner import OfflinePlanner
from mango.llm.backend import AgentCall, BackendError, LLMBackend, Refusal
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


class _ModelAtTheBoundary:
    """Stands for a local model process: records what it is asked and answers nothing."""

    name = "local"

    def __init__(self) -> None:
        self.asked: list[tuple[str, type]] = []

    def model_for(self, role: str) -> str:
        return "a local model"

    def complete(self, call, schema):
        self.asked.append((call.task, schema))
        raise BackendError("the model was asked")


def _module3_call(instruction: str) -> AgentCall:
    from mango.cli.scenes import scene_file

    scenes = Path(__file__).resolve().parents[1] / "data" / "generation" / "heldout" / "scenes"
    (scene,) = scene_file(scenes / "living_room_basket.json").task_objects
    return AgentCall("generator", "module3.generate", [{"role": "user", "content": "x"}],
                     {"instruction": instruction, "scene": scene.model_dump(mode="json")})


def test_offline_alone_refuses_naming_the_words_it_could_not_read():
    with pytest.raises(Refusal, match="'juggle'"):
        make_backend("offline").complete(_module3_call("juggle the milk"), OracleCandidate)


def test_a_fallback_model_gets_only_what_the_reader_refuses():
    with pytest.raises(InputError, match="fallback"):
        make_backend("offline", fallback="offline")
    model = _ModelAtTheBoundary()
    backend = ReaderFirstBackend(OfflinePlanner(), model)
    read = backend.complete(_module3_call("toss the milk into the basket"), OracleCandidate)
    assert read.plan and model.asked == []
    with pytest.raises(BackendError, match="the model was asked"):
        backend.complete(_module3_call("juggle the milk"), OracleCandidate)
    assert model.asked == [("module3.generate", OracleCandidate)]
    assert "'juggle'" in backend.handed_over[0]
