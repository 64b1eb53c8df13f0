"""The offline reader first, a configured model where the reader cannot read an instruction.

`--backend offline --opt fallback=local` answers every call with the offline planner; when
it refuses (module III's reader could not read the instruction in full, and its refusal names
the words), that one call goes to the fallback model under the same schema, which the
pipeline has already grounded on the scene and the reader's referents. Without a fallback
the refusal stands, so `--backend offline` alone still answers in milliseconds.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from pydantic import BaseModel

from mango.llm.backend import AgentCall, LLMBackend, Refusal

T = TypeVar("T", bound=BaseModel)

log = logging.getLogger(__name__)


class ReaderFirstBackend:
    """The offline planner, handing the calls it refuses to a model backend."""

    def __init__(self, reader: LLMBackend, fallback: LLMBackend) -> None:
        self.reader = reader
        self.fallback = fallback
        self.name = f"{reader.name}+{fallback.name}"
        self.max_concurrency = getattr(fallback, "max_concurrency", 1)
        self.handed_over: list[str] = []  # the tasks the model answered, with the reason

    def model_for(self, role: str) -> str:
        return f"{self.reader.model_for(role)}, else {self.fallback.model_for(role)}"

    def complete(self, call: AgentCall, schema: type[T]) -> T:
        try:
            return self.reader.complete(call, schema)
        except Refusal as refusal:
            log.info("%s: the offline reader refused (%s); asking %s", call.task, refusal,
                     self.fallback.name)
            self.handed_over.append(f"{call.task}: {refusal}")
            return self.fallback.complete(call, schema)
