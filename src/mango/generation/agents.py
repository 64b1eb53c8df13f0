"""Agents: one role of the MANGO method talking to a backend, with a shared transcript.

An `Agent` turns (task, context) into a real chat prompt (via `prompts.build_messages`),
sends it as an `AgentCall` and records the exchange. Assessors of one board are asked in
parallel on a thread pool; a failing assessor yields a report that says so rather than
stopping the loop, because the judge must still see the other reports.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from mango.generation.models import AssessorReport
from mango.generation.prompts import build_messages
from mango.llm.backend import AgentCall, BackendError, LLMBackend

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)

ProgressFn = Callable[[str], None]


@dataclass
class TranscriptEntry:
    module: str
    iteration: int
    role: str
    task: str
    model: str
    messages: list[dict[str, str]]
    answer: Any
    error: str | None
    seconds: float


@dataclass
class Transcript:
    """Every agent exchange of a run, in the order they finished (thread-safe)."""

    entries: list[TranscriptEntry] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, entry: TranscriptEntry) -> None:
        with self._lock:
            self.entries.append(entry)

    def calls(self, module: str | None = None, role: str | None = None) -> int:
        return sum(
            1 for e in self.entries
            if (module is None or e.module == module) and (role is None or e.role == role)
        )

    def write_jsonl(self, path: str | Path) -> None:
        with Path(path).open("w", encoding="utf-8") as fh:
            for e in self.entries:
                fh.write(json.dumps(asdict(e), ensure_ascii=False) + "\n")


class Agent:
    """One role (generator, assessor, judge, hacker, interpreter) bound to a backend."""

    def __init__(self, backend: LLMBackend, role: str, transcript: Transcript) -> None:
        self.backend = backend
        self.role = role
        self.transcript = transcript

    def ask(
        self, task: str, context: dict[str, Any], schema: type[T], module: str, iteration: int
    ) -> T:
        """Send one call; raises `BackendError` when the backend gives no valid answer."""
        messages = build_messages(task, context, schema)
        call = AgentCall(role=self.role, task=task, messages=messages, context=context)
        start = time.perf_counter()
        try:
            answer = self.backend.complete(call, schema)
            if not isinstance(answer, schema):
                answer = schema.model_validate(answer)
        except BackendError as exc:
            log.warning("%s (%s) failed: %s", task, self.role, exc)
            self._record(module, iteration, task, messages, None, str(exc), start)
            raise
        self._record(module, iteration, task, messages, answer.model_dump(mode="json"), None,
                     start)
        return answer

    def _record(self, module: str, iteration: int, task: str, messages: list[dict[str, str]],
                answer: Any, error: str | None, start: float) -> None:
        self.transcript.add(TranscriptEntry(
            module=module, iteration=iteration, role=self.role, task=task,
            model=self.backend.model_for(self.role), messages=messages, answer=answer,
            error=error, seconds=round(time.perf_counter() - start, 6)))


@dataclass(frozen=True)
class AssessorSpec:
    """A model assessor of a board: its aspect name and agent task."""

    aspect: str
    task: str


RuleAssessor = Callable[[dict[str, Any]], AssessorReport]


def run_board(
    agent: Agent,
    specs: Sequence[AssessorSpec],
    rules: dict[str, RuleAssessor],
    context: dict[str, Any],
    module: str,
    iteration: int,
    parallel: bool = True,
) -> list[AssessorReport]:
    """All assessors of a board (model ones and rule-based ones), in parallel."""

    def one_model(spec: AssessorSpec) -> AssessorReport:
        try:
            report = agent.ask(spec.task, context, AssessorReport, module, iteration)
        except BackendError as exc:
            return AssessorReport(aspect=spec.aspect, issues=[f"assessor failed: {exc}"], score=0)
        return report.model_copy(update={"aspect": spec.aspect})

    def one_rule(item: tuple[str, RuleAssessor]) -> AssessorReport:
        aspect, fn = item
        report = fn(context)
        return report.model_copy(update={"aspect": aspect})

    jobs: list[Callable[[], AssessorReport]] = [
        (lambda s=s: one_model(s)) for s in specs
    ] + [(lambda r=r: one_rule(r)) for r in rules.items()]
    if not parallel or len(jobs) <= 1:
        return [job() for job in jobs]
    with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="assessor") as pool:
        futures = [pool.submit(job) for job in jobs]
        return [f.result() for f in futures]
