"""The one small interface every language backend implements.

Agents (Generator, Assessor, Judge, Oracle Hacker, ...) send chat messages and get back a
validated pydantic object. Backends that are real language models read the messages; the
deterministic offline planner reads the structured `AgentCall` instead, so both see the
same request and neither needs to parse the other's prompt text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)

# Agent roles; a backend may use a different model per role.
ROLES: tuple[str, ...] = ("generator", "assessor", "judge", "hacker", "interpreter")


@dataclass(frozen=True)
class AgentCall:
    """One request from an agent.

    `task` names what is asked (e.g. "module1.generate", "module3.assess.logic");
    `messages` is the chat prompt for language models; `context` carries the same inputs
    as data (instruction, scene, candidate, feedback) for backends that are not models.
    """

    role: str
    task: str
    messages: list[dict[str, str]]
    context: dict[str, Any] = field(default_factory=dict)


class BackendError(RuntimeError):
    """The backend could not produce a valid answer (after its retries)."""


class Refusal(BackendError):
    """The backend declines the request and says why (an instruction it cannot read), rather
    than answering with something empty."""


@runtime_checkable
class LLMBackend(Protocol):
    """Messages in, validated JSON out (with the backend's own retries on schema errors)."""

    name: str

    def model_for(self, role: str) -> str:
        """The model name used for a role (for transcripts and cache keys)."""
        ...

    def complete(self, call: AgentCall, schema: type[T]) -> T:
        """Answer `call` with an instance of `schema`, or raise `BackendError`."""
        ...
