"""Every agent task gets a real chat prompt with its inputs and the answer schema."""

from __future__ import annotations

import json

import pytest

from mango.generation.models import (
    AssessorReport,
    AtomicLibraryAnswer,
    AtomicOracle,
    Feedback,
    HackerReport,
    JudgeVerdict,
    OracleCandidate,
    SceneTask,
    grounded_candidate_schema,
)
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.prompts import build_messages

TASKS = {
    "module1.generate": AtomicLibraryAnswer, "module1.assess.atomicity": AssessorReport,
    "module1.assess.redundancy": AssessorReport, "module1.assess.repetition": AssessorReport,
    "module1.judge": JudgeVerdict, "module1.interpret": Feedback,
    "module2.generate": AtomicOracle, "module2.hack": HackerReport,
    "module2.judge": JudgeVerdict, "module3.generate": OracleCandidate,
    "module3.assess.logic": AssessorReport, "module3.assess.compliance": AssessorReport,
    "module3.assess.grounding": AssessorReport, "module3.judge": JudgeVerdict,
    "module3.interpret": Feedback,
}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_prompt_has_profile_inputs_and_schema(task):
    ctx = {"instruction": "put the cup in the bowl", "feedback": ["fix step 1.2"],
           "candidate": {"instruction": "put the cup in the bowl", "plan": []},
           "scene": {"id": "x", "objects": ["cup_1"]}}
    system, user = build_messages(task, ctx, TASKS[task])
    assert system["role"] == "system" and user["role"] == "user"
    role = {"generate": "Generator", "assess": "Assessor", "judge": "Judge", "hack": "Hacker",
            "interpret": "Interpreter"}[task.split(".")[1]]
    assert role in system["content"]
    schema = json.loads(system["content"].rsplit("\n", 1)[1])
    assert set(schema["properties"]) == set(TASKS[task].model_json_schema()["properties"])
    assert "put the cup in the bowl" in user["content"]
    assert "fix step 1.2" in user["content"] and "cup_1" in user["content"]


def test_offline_planner_refuses_unknown_tasks():
    from mango.llm.backend import AgentCall, BackendError

    with pytest.raises(BackendError, match="does not know the task"):
        OfflinePlanner().complete(AgentCall("generator", "module9.dream", []), Feedback)


def test_what_a_run_shares_comes_before_what_each_task_changes():
    """Two module III prompts of one run (same libraries, other instruction and scene) share
    everything up to the per-task inputs, so a llama.cpp server evaluates only those again
    (its prompt cache keeps the longest common prefix). The answer schemas are grounded on
    each scene, so their ids must not be in the prompt's text: the server's grammar holds
    the model to them (on a LIBERO scene they were ~2k tokens that no call could reuse)."""
    libs = {"functions": {"in": {"arguments": ["a", "b"]}},
            "atomic_library": [{"id": "pick_up", "parameters": ["obj_id"]}],
            "atomic_oracle_library": [{"task_id": "pick_up", "oracle": "grasped(obj_id)"}]}

    def schema(objects):
        scene = SceneTask(id="x", objects=objects)
        return grounded_candidate_schema(scene, {"pick_up": ["obj_id"]}, ["pick_up"],
                                         {"grasped": objects}, 2)

    first = build_messages("module3.generate", {
        **libs, "instruction": "put the cup in the bowl",
        "scene": {"id": "a", "objects": ["cup_1"]}}, schema(["cup_1"]))
    second = build_messages("module3.generate", {
        **libs, "instruction": "open the drawer", "scene": {"id": "b", "objects": ["drawer_1"]}},
        schema(["drawer_1"]))
    assert first[0] == second[0]
    assert "cup_1" not in first[0]["content"]  # the grounded schema's enums stay out
    assert json.loads(first[0]["content"].rsplit("\n", 1)[1]) == json.loads(
        build_messages("module3.generate", {}, OracleCandidate)[0]["content"].rsplit("\n", 1)[1])
    a, b = first[1]["content"], second[1]["content"]
    shared = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    for text in ("pick_up", "grasped(obj_id)", '"in"'):
        assert a.index(text) < shared  # every library is inside the common prefix
    assert a.index("put the cup in the bowl") >= shared


def test_module3_tells_the_model_which_of_alike_things_is_which():
    """Module III's request carries, beside the scene, the words that tell alike things
    apart ("the left plate"), after the part a run shares; the offline reader, which reads
    the scene itself, gets the scene unchanged. The examples in the shared part show both a
    place in a region and a place on an object."""
    from mango.generation.engine import load_function_library
    from mango.generation.pipeline import GenerationConfig, make_pipeline
    from mango.generation.prompts import read_messages
    from mango.llm.backend import BackendError

    calls = []

    class Capture:
        name = "capture"

        def model_for(self, role):
            return "capture"

        def complete(self, call, schema):
            calls.append(call)
            raise BackendError("captured")

    scene = SceneTask.model_validate({
        "id": "put the cup on the left plate", "objects": ["cup_1", "plate_1", "plate_2"],
        "states": ["table"], "kinds": {"table": "surface"},
        "descriptions": {"cup_1": "cup", "plate_1": "plate", "plate_2": "plate"},
        "layout": {"plate_1": {"on": "table", "position": [0.0, -0.3]},
                   "plate_2": {"on": "table", "position": [0.0, 0.3]},
                   "cup_1": {"on": "table", "position": [0.1, 0.0]}}})
    library, catalog = load_function_library(None)
    pipe = make_pipeline(Capture(), catalog, GenerationConfig(ablation="baseline"),
                         library=library)
    with pytest.raises(BackendError):
        pipe.module3(scene.id, scene, None, None)
    call = calls[0]
    assert call.context["layout_words"] == {"plate_1": "the left plate",
                                            "plate_2": "the right plate"}
    assert call.context["scene"] == scene.model_dump(mode="json", exclude_defaults=True)
    user = call.messages[1]["content"]
    assert user.index('"the left plate"') > user.index("## Scene")
    assert read_messages(call.messages)[1]["layout_words"] == call.context["layout_words"]
    # the reader's grounding of the instruction's phrases, after the layout words
    assert call.context["referents"] == {"the cup": "cup_1", "on the left plate": "on plate_1"}
    assert user.index('"on plate_1"') > user.index('"the left plate"')
    assert read_messages(call.messages)[1]["referents"] == call.context["referents"]
    head = user[:user.index("## ")]
    assert '"action_id":"place_in"' in head and '"action_id":"place_on"' in head
