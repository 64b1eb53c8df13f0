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
