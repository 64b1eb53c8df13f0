"""What a model deciding for the orchestrator is sent: prompt templates from files, camera
images as data URLs, and per-request answer schemas whose enums are exactly what this mode and
this plan allow — so a server that enforces the schema cannot answer outside them, and one that
does not gets the backend's repair re-ask with the validation error.

Templates live in `config/prompts/orchestrator/*.md` (`$name` placeholders, `string.Template`),
beside the scenes, so they are edited as text and reviewed as text.
"""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path
from typing import Any, ClassVar, Literal

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from mango.errors import InputError
from mango.orchestrator.config import ModeSpec
from mango.orchestrator.schemas import Plan
from mango.sim.scene import REPO_ROOT

PROMPTS_DIR = REPO_ROOT / "config" / "prompts" / "orchestrator"
TEMPLATES = ("system", "route", "recovery", "plan", "replan", "monitor")


class PromptTemplates:
    """The orchestrator's prompt files, read once; `render` names the file and placeholder
    a value is missing for."""

    def __init__(self, directory: Path = PROMPTS_DIR) -> None:
        self.directory = directory
        self._text: dict[str, string.Template] = {}
        for name in TEMPLATES:
            path = directory / f"{name}.md"
            try:
                self._text[name] = string.Template(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise InputError(f"cannot read the prompt template: {exc.strerror}",
                                 file=str(path)) from None
            if not self._text[name].is_valid():
                raise InputError("invalid placeholder (a '$' not followed by a name; write $$ "
                                 "for a dollar sign)", file=str(path))

    def render(self, name: str, **values: Any) -> str:
        tpl = self._text[name]
        try:
            return tpl.substitute({k: _text(v) for k, v in values.items()}).strip()
        except KeyError as exc:
            raise InputError(f"placeholder ${exc.args[0]} has no value",
                             file=str(self.directory / f"{name}.md"),
                             field=str(exc.args[0])) from None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "), default=str)


def data_block(data: dict[str, Any]) -> str:
    """The request's inputs as one fenced JSON block (what a non-reading tool can parse)."""
    return "```json\n" + json.dumps(data, sort_keys=True, default=str) + "\n```"


def image_data_url(rgb: np.ndarray, size: tuple[int, int], fmt: str = "png") -> str:
    """An RGB image (HxWx3 uint8) as a `data:image/...;base64,` URL at `size` (width,
    height), the form the chat-completions protocol takes images in."""
    w, h = size
    img = np.ascontiguousarray(rgb[..., :3], dtype=np.uint8)
    if img.shape[1] != w or img.shape[0] != h:
        img = cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)
    bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    ext, mime = (".jpg", "image/jpeg") if fmt == "jpeg" else (".png", "image/png")
    params = [cv2.IMWRITE_JPEG_QUALITY, 90] if fmt == "jpeg" else []
    ok, buf = cv2.imencode(ext, bgr, params)
    if not ok:
        raise InputError(f"could not encode a {w}x{h} {fmt} image", field="image_format")
    return f"data:{mime};base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def user_message(text: str, images: list[tuple[str, str]]) -> dict[str, Any]:
    """One user message: text, then each (label, data URL) image after its label."""
    if not images:
        return {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for label, url in images:
        parts.append({"type": "text", "text": f"{label}:"})
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": parts}


def _enum(values: list[str]) -> Any:
    return Literal[tuple(values)]  # type: ignore[valid-type]


class DecisionAnswer(BaseModel):
    """A model's decision; subclasses per request carry the enums (`decision_answer`)."""

    model_config = ConfigDict(extra="forbid")
    pairs: ClassVar[frozenset[tuple[str, str]]] = frozenset()

    @model_validator(mode="after")
    def _allowed(self) -> DecisionAnswer:
        # checked here so a wrong pairing is re-asked by the backend's repair path
        action, tool = self.action, self.tool  # type: ignore[attr-defined]
        if (action, tool) not in self.pairs:
            allowed = ", ".join(f"({a}, {t})" for a, t in sorted(self.pairs))
            raise ValueError(f"({action}, {tool}) is not an allowed pair; allowed: {allowed}")
        rem = self.remaining  # type: ignore[attr-defined]
        if action == "replan" and rem is None:
            raise ValueError("replan must list the remaining original subgoal ids")
        if rem is not None and len(set(rem)) != len(rem):
            raise ValueError("remaining lists a subgoal twice")
        if action == "rewrite" and not (self.instruction or "").strip():  # type: ignore[attr-defined]
            raise ValueError("rewrite must give the VLA's new instruction")
        return self


def decision_answer(mode: ModeSpec, plan: Plan) -> type[DecisionAnswer]:
    """The answer schema for one decision: actions, tools and subgoal ids as enums."""
    actions = sorted({a for a, _ in mode.pairs})
    tools = sorted({t for _, t in mode.pairs})
    ids = _enum([s.id for s in plan.subgoals])
    model = create_model(
        "DecisionAnswer", __base__=DecisionAnswer,
        action=(_enum(actions), ...), tool=(_enum(tools), ...),
        subgoal=(ids | None, None), instruction=(str | None, None),
        remaining=(list[ids] | None, None),  # type: ignore[valid-type]
        reason=(str, Field(..., max_length=240)))
    model.pairs = mode.pairs
    return model


class PlannedSubgoal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instruction: str = Field(..., min_length=3, max_length=200)


class PlanAnswer(BaseModel):
    """A model's plan: atomic subgoal instructions in order, and whether order matters."""

    model_config = ConfigDict(extra="forbid")
    subgoals: list[PlannedSubgoal] = Field(..., min_length=1, max_length=12)
    ordered: bool


class ReplanAnswer(BaseModel):
    """A model's replan: which original subgoals remain (`remaining_answer` adds the enum)."""

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(..., max_length=240)

    @model_validator(mode="after")
    def _once(self) -> ReplanAnswer:
        rem = self.remaining  # type: ignore[attr-defined]
        if len(set(rem)) != len(rem):
            raise ValueError("remaining lists a subgoal twice")
        return self


def replan_answer(plan: Plan) -> type[ReplanAnswer]:
    ids = _enum([s.id for s in plan.subgoals])
    return create_model("ReplanAnswer", __base__=ReplanAnswer,
                        remaining=(list[ids], ...))  # type: ignore[valid-type]


class MonitorAnswer(BaseModel):
    """The vlm monitor's verdict on the active subgoal."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["in_progress", "completed", "failed"]
    reason: str = Field(..., max_length=240)
