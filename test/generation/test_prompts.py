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
