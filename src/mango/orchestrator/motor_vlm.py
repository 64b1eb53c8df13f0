"""MotorMind's roles over a language model (`mango.llm`: any OpenAI-compatible server, the
local llama.cpp one): each role fills its prompt template (`config/prompts/motor/`) with the
observation as JSON and asks for its schema; the backend validates and repairs the answer.
The roles that look (executor, verifier, monitor) are shown the tools' camera as the `vlm`
decider is (`prompts.image_data_url` / `user_message`: BEFORE and NOW as PNG or JPEG data
URLs): the executor the subgoal's start and now, the verifier the batch's start and its
end, the monitor the attempt's start and the camera at the images' rate. The offline rules
(`roles`) stay the deterministic default; these are what a model says.
"""

from __future__ import annotations

import json
from pathlib import Path
from string import Template
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel

from mango.control.robot import REPO_ROOT
from mango.errors import InputError
from mango.llm.backend import AgentCall, LLMBackend
from mango.orchestrator.prompts import image_data_url, user_message
from mango.orchestrator.roles import (
    ActionBatch,
    Alert,
    AlertList,
    Measured,
    MemoryNote,
    MonitorView,
    MotorSubgoal,
    Observation,
    OfflinePlanner,
    Revision,
    Verdict,
    criterion,
)
from mango.orchestrator.schemas import Plan

PROMPTS = REPO_ROOT / "config" / "prompts" / "motor"
T = TypeVar("T", bound=BaseModel)


def load_prompt(name: str, directory: Path = PROMPTS) -> Template:
    path = directory / f"{name}.md"
    try:
        return Template(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the {name} prompt: {exc.strerror}",
                         file=str(path)) from None


def _json(data: Any) -> str:
    return json.dumps(data, default=str, sort_keys=True)


class _ModelRole:
    """One role's prompt and its call through the backend; a role that `wants_images` is
    shown BEFORE and NOW (`image_size` (width, height), `image_format` png | jpeg)."""

    name = "vlm"
    prompt = ""
    llm_role = "generator"  # the backend's role name (which model answers)
    wants_images = False

    def __init__(self, backend: LLMBackend, image_size: tuple[int, int] = (640, 480),
                 image_format: str = "png") -> None:
        self.backend = backend
        self.template = load_prompt(self.prompt)
        self.image_size, self.image_format = image_size, image_format

    def _images(self, before: np.ndarray | None, now: np.ndarray | None
                ) -> list[tuple[str, str]]:
        """BEFORE (unless it is NOW) and NOW, those there are, as data URLs."""
        if not self.wants_images:
            return []
        pairs = [("NOW", now)] if before is None or before is now else [("BEFORE", before),
                                                                        ("NOW", now)]
        return [(label, image_data_url(img, self.image_size, self.image_format))
                for label, img in pairs if img is not None]

    def _ask(self, schema: type[T], images: list[tuple[str, str]] | None = None,
             **fields: str) -> T:
        labels = [label for label, _ in images or []]
        note = (f"Camera images follow: {' and '.join(labels)}." if labels else
                "No camera image is available." if self.wants_images else "")
        text = self.template.safe_substitute(images_note=note, **fields)
        call = AgentCall(role=self.llm_role, task=f"motor.{self.prompt}",
                         messages=[user_message(text, images or [])], context=fields)
        return self.backend.complete(call, schema)


class VlmExecutor(_ModelRole):
    prompt = "executor"
    wants_images = True

    def propose(self, obs: Observation, feedback: str | None) -> ActionBatch:
        batch = self._ask(ActionBatch, self._images(obs.rgb_before, obs.rgb_now),
                          observation=_json(obs.summary()), feedback=feedback or "")
        return batch.model_copy(update={"rule": None})  # a model's answer names no rule


class VlmMonitor(_ModelRole):
    prompt = "monitor"
    llm_role = "assessor"
    synchronous = False  # a model is never waited for at a command boundary
    wants_images = True

    def assess(self, obs: MonitorView) -> list[Alert]:
        view = {k: v for k, v in obs.__dict__.items() if not k.startswith("rgb_")}
        view["signals"] = [list(s) for s in obs.signals]
        images = self._images(obs.rgb_before, obs.rgb_now) if obs.rgb_now is not None else []
        return [a.model_copy(update={"rule": None})
                for a in self._ask(AlertList, images, view=_json(view)).alerts]


class VlmVerifier(_ModelRole):
    prompt = "verifier"
    llm_role = "judge"
    wants_images = True

    def verify(self, obs: Observation, batch: ActionBatch, measured: Measured,
               alerts: list[Alert]) -> Verdict:
        v = self._ask(Verdict, self._images(obs.rgb_before, obs.rgb_now),
                      criterion=criterion(obs.subgoal),
                      batch=_json(batch.model_dump()), measured=_json(measured.__dict__),
                      alerts=_json([a.model_dump() for a in alerts]),
                      observation=_json(obs.summary()))
        return v.model_copy(update={"rule": None, "settled_by": "model"})


class VlmMemory(_ModelRole):
    prompt = "memory"
    llm_role = "interpreter"

    def condense(self, previous: str, evidence: dict[str, object]) -> MemoryNote:
        return self._ask(MemoryNote, previous=previous or "(none)", evidence=_json(evidence))


class VlmPlanner(_ModelRole):
    """The plan itself comes from the oracle (or the instruction parser), as in every mode;
    the model revises it (the loop keeps only original subgoals still unfinished)."""

    prompt = "planner"

    def plan(self, plan: Plan) -> list[MotorSubgoal]:
        return OfflinePlanner().plan(plan)

    def revise(self, plan: Plan, unfinished: list[str], failed: str, why: str,
               memory: str) -> Revision:
        rev = self._ask(Revision, plan=_json([{"id": s.id, "instruction": s.instruction}
                                              for s in plan.subgoals]),
                        unfinished=_json(unfinished), failed=failed, why=why,
                        memory=memory or "(none)")
        return rev.model_copy(update={"rule": None})
