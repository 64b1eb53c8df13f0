"""The offline planner: a deterministic backend that plays every MANGO role without a model.

This is NOT a language model. It answers each `AgentCall` from the call's structured
`context` with the rules of `module1`, `module2` and `module3`: as Generator it proposes
its best candidate (the atomic decomposition, the skills' oracles, a plan grounded on the
scene) and applies the edits that feedback on someone else's candidate asks for; as
Assessor, Oracle Hacker and Judge it checks any candidate, whoever wrote it.

It is the embedded default backend: fast, reproducible, and honest about what it is
(`name = "offline"`, model "offline-planner (rule-based, not an LLM)").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from mango.generation.offline import module1, module2, module3
from mango.generation.offline.verdicts import interpret, judge_from_reports
from mango.llm.backend import AgentCall, BackendError

T = TypeVar("T", bound=BaseModel)

MODEL_NAME = "offline-planner (rule-based, not an LLM)"

Rule = Callable[[dict[str, Any]], BaseModel]

RULES: dict[str, Rule] = {
    "module1.generate": module1.generate,
    "module1.assess.atomicity": module1.atomicity,
    "module1.assess.redundancy": module1.redundancy,
    "module1.assess.repetition": module1.repetition,
    "module1.judge": module1.judge,
    "module1.interpret": interpret,
    "module2.generate": module2.generate,
    "module2.generate_library": module2.generate_library,
    "module2.hack": module2.hack,
    "module2.judge": module2.judge,
    "module2.interpret": interpret,
    "module3.generate": module3.generate,
    "module3.assess.logic": module3.logic,
    "module3.assess.compliance": module3.compliance,
    "module3.assess.grounding": module3.grounding,
    "module3.judge": judge_from_reports,
    "module3.interpret": interpret,
}


class OfflinePlanner:
    """Deterministic rule-based backend for every MANGO role (not a language model)."""

    name = "offline"

    def __init__(self, **_opts: Any) -> None:
        """Backend options are accepted and ignored: the rules have none."""

    def model_for(self, role: str) -> str:
        return MODEL_NAME

    def complete(self, call: AgentCall, schema: type[T]) -> T:
        rule = RULES.get(call.task)
        if rule is None:
            raise BackendError(f"the offline planner does not know the task '{call.task}'")
        answer = rule(call.context)
        if not isinstance(answer, schema):
            try:
                answer = schema.model_validate(answer.model_dump())
            except Exception as exc:
                raise BackendError(
                    f"offline planner answered {call.task} with {type(answer).__name__}, "
                    f"not {schema.__name__}: {exc}") from None
        return answer
