"""Model-driven deciders and the model monitor, over the project's language backends.

- `vlm`: any OpenAI-compatible server (`mango.llm`, `--opt base_url=... --model M`). One
  request per decision point: the system prompt and the phase's user prompt (templates in
  `config/prompts/orchestrator/`), the monitor context (route) or the deliberation context
  (recovery), BEFORE/NOW camera images as data URLs, and an answer schema whose enums are the
  mode's actions/tools and the plan's subgoal ids. The backend validates and repairs the
  answer; the loop checks it again (`decision_problem`). It also writes the plan.
- `local`: the llama.cpp model (text only) writes the plan and every replan; every other
  decision point goes to the offline rules, and the decision line says so (`decider`
  offline, the rule named): nothing presents a rule as a model.
- `VlmMonitor`: images at a rate (VoLo: 0.2 Hz) with a completion/failure question about the
  active subgoal; its answers are the same `Signal`s the other monitors emit.

A model that cannot answer (transport, schema, replay miss) makes an `abort` decision that
says why; it never raises into the loop.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mango.errors import InputError
from mango.llm.backend import AgentCall, BackendError, LLMBackend
from mango.oracle.model import FineGrainedOracle
from mango.oracle.world_state import WorldState
from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.deciders import Decider, DecisionContext, OfflineDecider
from mango.orchestrator.monitors import completed_in_order
from mango.orchestrator.planning import entity_phrase, plan_from_instructions
from mango.orchestrator.prompts import (
    MonitorAnswer,
    PlanAnswer,
    PromptTemplates,
    data_block,
    decision_answer,
    image_data_url,
    replan_answer,
    user_message,
)
from mango.orchestrator.schemas import Decision, Plan, Signal, Subgoal
from mango.sim.scene import SceneSpec

log = logging.getLogger(__name__)

ROLE = "orchestrator"
MONITOR_ROLE = "monitor"
LOCAL_MAX_TOKENS = 256
PLAN_ATTEMPTS = 2  # a plan the expert cannot ground is re-asked once with the problem


def open_backend(cfg: OrchestratorConfig, default: str) -> LLMBackend:
    """The backend a run names (`cfg.backend`, else `default`), built by the llm registry
    with the run's model and options exactly as `mango generate` builds it."""
    from mango.llm.registry import make_backend

    return make_backend(cfg.backend or default, cfg.model, **dict(cfg.backend_opts))


def rounded(value: Any, digits: int = 3) -> Any:
    """Floats cut to mm / mrad: a model reads millimetres, not 17 digits (and pays per token)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def _model_name(backend: LLMBackend, role: str) -> str | None:
    try:
        return backend.model_for(role)
    except BackendError:
        return None


@dataclass
class PlanRequest:
    """What the plan phase knows: the scene, the instruction, the first world state and
    image, and the rules' own plan (what the offline decider would run)."""

    scene: SceneSpec
    instruction: str
    initial: WorldState
    oracle: FineGrainedOracle | None
    rules_plan: Plan
    image: np.ndarray | None = None


class _ModelDecider:
    """What the vlm and local deciders share: the backend, templates, planning, meta."""

    name = "model"
    default_backend = "openai"
    wants_images = False

    def __init__(self, cfg: OrchestratorConfig,
                 backend: LLMBackend | None = None) -> None:
        self.cfg = cfg
        self.templates = PromptTemplates()
        self.backend = backend or open_backend(cfg, self.default_backend)
        self.model = _model_name(self.backend, ROLE)
        # what answered the last decision, for its line in the episode record
        self.last_meta: dict[str, Any] = {"decider": self.name, "model": self.model}

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()

    def _images(self, pairs: list[tuple[str, np.ndarray | None]]) -> list[tuple[str, str]]:
        if not self.wants_images:
            return []
        return [(label, image_data_url(img, self.cfg.image_size, self.cfg.image_format))
                for label, img in pairs if img is not None]

    def _ask(self, task: str, text: str, images: list[tuple[str, str]], schema: type,
             context: dict[str, Any]) -> Any:
        messages = [{"role": "system", "content": self.templates.render("system")},
                    user_message(text, images)]
        call = AgentCall(role=ROLE, task=task, messages=messages,  # type: ignore[arg-type]
                         context=context)
        return self.backend.complete(call, schema)

    # ---------------------------------------------------------------- plan phase
    def plan(self, req: PlanRequest) -> tuple[Plan, dict[str, Any]]:
        """The model's plan, checked against the expert's grounding (re-asked once with the
        problem); if it still cannot be grounded, or the model cannot answer, the rules'
        plan runs and the plan line says so (`decider` offline, `rejected` the reason)."""
        scene = req.scene
        # places by the words people use (what the expert's parser grounds), never region ids
        places = sorted({entity_phrase(scene, r.parent) for r in scene.regions
                         if r.parent != scene.table.id}
                        | {entity_phrase(scene, e.id) for e in scene.entities if not e.movable})
        movable = sorted({entity_phrase(scene, e.id) for e in scene.entities if e.movable}
                         - set(places))
        context = {"phase": "plan", "instruction": req.instruction, "objects": movable,
                   "places": places}
        feedback = ""
        problems: list[str] = []
        t0 = time.perf_counter()
        for attempt in range(PLAN_ATTEMPTS):
            text = self.templates.render(
                "plan", instruction=req.instruction, objects=", ".join(movable),
                places=", ".join(places), feedback=feedback, context=data_block(context))
            try:
                answer = self._ask("orchestrator.plan", text,
                                   self._images([("NOW", req.image)]), PlanAnswer, context)
            except BackendError as exc:
                problems.append(f"the model could not answer: {exc}")
                break
            texts = [s.instruction for s in answer.subgoals]
            try:
                plan = plan_from_instructions(
                    scene, req.instruction, texts, answer.ordered, req.initial, req.oracle,
                    source=f"model {self.model}")
            except ValueError as exc:
                problems.append(f"answer {attempt + 1} {texts}: {exc}")
                feedback = (f"\nYour previous plan {texts} was refused: {exc}. Write the plan "
                            "again.\n")
                continue
            return plan, {"decider": self.name, "model": self.model, "rule": None,
                          "latency_s": round(time.perf_counter() - t0, 6),
                          "attempts": attempt + 1, "refused": problems}
        rules = req.rules_plan
        return rules, {"decider": "offline", "model": None,
                       "rule": "plan.from_oracle" if rules.source.startswith("oracle")
                       else "plan.from_instruction",
                       "latency_s": round(time.perf_counter() - t0, 6),
                       "rejected": f"{self.name} plan refused: " + " | ".join(problems)}

    # ---------------------------------------------------------------- shared context
    @staticmethod
    def _observation(ctx: DecisionContext) -> dict[str, Any] | None:
        return rounded(ctx.perceived.to_json()) if ctx.perceived is not None else None

    @staticmethod
    def _why(ctx: DecisionContext) -> str:
        if ctx.signal is not None:
            s = ctx.signal
            return f"monitor {s.monitor}: {s.kind} {s.reason} (subgoal {s.subgoal}) {s.detail}"
        return f"the {ctx.tool} tool ended: {ctx.tool_status}"

    def _abort(self, ctx: DecisionContext, why: str) -> Decision:
        return Decision(phase=ctx.phase, action="abort",  # type: ignore[arg-type]
                        subgoal=ctx.active.id, reason=why[:600])


class VlmDecider(_ModelDecider):
    """Every decision point is one request to a (vision-)language model."""

    name = "vlm"
    wants_images = True

    def decide(self, ctx: DecisionContext) -> Decision:
        pairs = sorted(ctx.mode.pairs)
        ids = [s.id for s in ctx.plan.subgoals]
        context = {**rounded(ctx.digest_input()), "allowed": [list(p) for p in pairs],
                   "subgoal_ids": ids, "plan": [[s.id, s.instruction] for s in ctx.plan.subgoals],
                   "rewrites": ctx.rewrites}
        before, now = ctx.images.get("before"), ctx.images.get("now")
        same = before is None or before is now
        images = self._images([("NOW", now)] if same else [("BEFORE", before), ("NOW", now)])
        note = "Only the NOW image: the subgoal starts now." if same and images else \
            "" if images else "No camera image is available."
        sg = ctx.active
        pair_text = ", ".join(f"({a}, {t})" for a, t in pairs)
        recent = [{k: d.get(k) for k in ("phase", "action", "tool", "subgoal", "reason")}
                  for d in ctx.recent]
        if ctx.phase == "recovery":
            status = {s.id: ("completed" if s.id in ctx.completed else
                             "active" if s.id == sg.id else "pending") for s in ctx.plan.subgoals}
            text = self.templates.render(
                "recovery", event=ctx.event, why=self._why(ctx), instruction=ctx.plan.instruction,
                ordered="ordered" if ctx.plan.ordered else "any order",
                plan=[{"id": s.id, "instruction": s.instruction, "status": status[s.id]}
                      for s in ctx.plan.subgoals],
                completed=sorted(ctx.completed) or "none", subgoal_id=sg.id,
                subgoal_instruction=sg.instruction, attempts=ctx.attempts,
                max_attempts=ctx.max_attempts, spent=sorted(ctx.spent_tools) or "none",
                rewrites=ctx.rewrites, initial_scene=ctx.plan.initial_scene,
                history=ctx.history, observation=self._observation(ctx), pairs=pair_text,
                images_note=note, context=data_block(context))
        else:
            text = self.templates.render(
                "route", event=ctx.event, subgoal_id=sg.id, subgoal_instruction=sg.instruction,
                signal=ctx.signal.model_dump() if ctx.signal else "none",
                tool=f"{ctx.tool} ({ctx.tool_status})" if ctx.tool else "none",
                observation=self._observation(ctx), recent=recent or "none", pairs=pair_text,
                images_note=note, context=data_block(context))
        t0 = time.perf_counter()
        try:
            answer = self._ask(f"orchestrator.{ctx.phase}", text, images,
                               decision_answer(ctx.mode, ctx.plan), context)
        except BackendError as exc:
            self.last_meta = {"decider": self.name, "model": self.model,
                              "model_s": round(time.perf_counter() - t0, 6)}
            return self._abort(ctx, f"the model could not answer: {exc}")
        self.last_meta = {"decider": self.name, "model": self.model,
                          "model_s": round(time.perf_counter() - t0, 6)}
        instruction = answer.instruction
        if answer.tool == "vla" and not (instruction or "").strip():
            instruction = sg.instruction  # "go on with the subgoal" needs no new words
        return Decision(phase=ctx.phase, action=answer.action,  # type: ignore[arg-type]
                        tool=answer.tool, subgoal=answer.subgoal or sg.id,
                        instruction=instruction if answer.tool == "vla" or
                        answer.action == "rewrite" else None,
                        remaining=answer.remaining if answer.action == "replan" else None,
                        reason=answer.reason)


class LocalDecider(_ModelDecider):
    """The llama.cpp model (text only) for the plan and replans; the offline rules for the
    rest (named in the decision as the rules'), since a 0.5B text model cannot see."""

    name = "local"
    default_backend = "local"

    def __init__(self, cfg: OrchestratorConfig, backend: LLMBackend | None = None) -> None:
        if not any(k == "max_tokens" for k, _ in cfg.backend_opts):
            # a CPU model that repeats itself in `reason` takes minutes per 1,000 tokens
            cfg = dataclasses.replace(cfg, backend_opts=(*cfg.backend_opts,
                                                         ("max_tokens", str(LOCAL_MAX_TOKENS))))
        super().__init__(cfg, backend)
        self.rules = OfflineDecider()

    def decide(self, ctx: DecisionContext) -> Decision:
        d = self.rules.decide(ctx)
        if d.action != "replan":
            self.last_meta = {"decider": "offline", "model": None,
                              "deferred_by": self.name}
            return d
        sg = ctx.active
        # what the rules would return stays out of the prompt (it is in the record)
        context = {**rounded(ctx.digest_input()),
                   "subgoal_ids": [s.id for s in ctx.plan.subgoals]}
        text = self.templates.render(
            "replan", subgoal_id=sg.id, subgoal_instruction=sg.instruction, why=self._why(ctx),
            ordered="ordered" if ctx.plan.ordered else "any order",
            plan="\n".join(f"{s.id}. {s.instruction}" for s in ctx.plan.subgoals),
            completed=sorted(ctx.completed) or "none",
            observation=self._observation(ctx), context=data_block(context))
        t0 = time.perf_counter()
        meta = {"decider": self.name, "model": self.model, "rules_said": d.rule}
        try:
            answer = self._ask("orchestrator.replan", text, [], replan_answer(ctx.plan),
                               context)
        except BackendError as exc:
            self.last_meta = {**meta, "model_s": round(time.perf_counter() - t0, 6)}
            return self._abort(ctx, f"the model could not replan: {exc}")
        self.last_meta = {**meta, "model_s": round(time.perf_counter() - t0, 6)}
        return Decision(phase=ctx.phase, action="replan", subgoal=sg.id,
                        remaining=list(answer.remaining), reason=answer.reason)


class VlmMonitor:
    """A model looks at the tools' camera at a rate and says whether the active subgoal is
    done, going on, or has failed; each answer is a `Signal` like the other monitors'."""

    name = "vlm"

    def __init__(self, cfg: OrchestratorConfig, plan: Plan,
                 capture: Callable[[], np.ndarray],
                 backend: LLMBackend | None = None, max_errors: int = 3) -> None:
        self.cfg, self.plan, self.capture = cfg, plan, capture
        self.period = 1.0 / cfg.vlm_monitor_hz
        self.templates = PromptTemplates()
        self._owns = backend is None
        self.backend = backend or open_backend(cfg, "openai")
        self.max_errors = max_errors
        self._done: set[str] = set()
        self._before: dict[str, np.ndarray] = {}
        self._next_t = self.period
        self._errors = 0
        self._pending: list[Signal] = []
        self.requests = 0
        self.answers: list[dict[str, Any]] = []  # what it was told, for the record and tests

    def update(self, state: WorldState) -> None:
        pass  # it sees only through the camera, at its rate

    def reset_progress_clock(self, t: float) -> None:
        self._next_t = t + self.period  # a new tool run: the first look is one period in

    def completed(self) -> set[str]:
        return set(self._done)

    def poll(self, t: float, active: Subgoal | None, tool_running: bool) -> list[Signal]:
        out, self._pending = self._pending, []
        if active is None:
            return out
        if active.id not in self._before:
            self._before[active.id] = self.capture()
        if not tool_running or active.id in self._done or t + 1e-9 < self._next_t:
            return out
        self._next_t = t + self.period
        return out + self._look(t, active, "rate")

    def tool_ended(self, t: float, active: Subgoal) -> None:
        """A tool stopped: look now, so the loop's next decision knows whether it is done
        (between two looks at 0.2 Hz a finished subgoal would otherwise look unfinished)."""
        if active.id not in self._done and active.id in self._before:
            self._pending.extend(self._look(t, active, "tool_ended"))

    def _look(self, t: float, active: Subgoal, why: str) -> list[Signal]:
        now = self.capture()
        size, fmt = self.cfg.image_size, self.cfg.image_format
        images = [("BEFORE", image_data_url(self._before[active.id], size, fmt)),
                  ("NOW", image_data_url(now, size, fmt))]
        context = {"phase": "monitor", "subgoal": active.id, "t": round(t, 3), "look": why,
                   "instruction": active.instruction,
                   "pending": completed_in_order(self.plan, self._done)}
        text = self.templates.render("monitor", subgoal_id=active.id,
                                     subgoal_instruction=active.instruction,
                                     context=data_block(context))
        messages = [{"role": "system", "content": self.templates.render("system")},
                    user_message(text, images)]
        self.requests += 1
        try:
            ans = self.backend.complete(AgentCall(role=MONITOR_ROLE, task="orchestrator.monitor",
                                                  messages=messages,  # type: ignore[arg-type]
                                                  context=context), MonitorAnswer)
        except BackendError as exc:
            self._errors += 1
            log.warning("vlm monitor: no answer at t=%.2f (%d in a row): %s", t, self._errors,
                        exc)
            if self._errors < self.max_errors:
                return []
            self._errors = 0
            return [Signal(t=t, kind="failure", subgoal=active.id, reason="monitor_no_answer",
                           detail=f"{self.max_errors} looks without an answer: {exc}"[:400],
                           monitor=self.name)]
        self._errors = 0
        self.answers.append({"t": t, "subgoal": active.id, **ans.model_dump()})
        if ans.status == "completed":
            self._done.add(active.id)
            return [Signal(t=t, kind="completed", subgoal=active.id, reason="vlm_completed",
                           detail=ans.reason, monitor=self.name)]
        if ans.status == "failed":
            return [Signal(t=t, kind="failure", subgoal=active.id, reason="vlm_failure",
                           detail=ans.reason, monitor=self.name)]
        return []

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if self._owns and callable(close):
            close()


def make_decider(name: str, config: OrchestratorConfig | None = None) -> Decider:
    """The decider a run's configuration names; a model decider opens its backend here."""
    cfg = config or OrchestratorConfig(decider=name)
    if name == "vlm":
        return VlmDecider(cfg)
    if name == "local":
        return LocalDecider(cfg)
    return OfflineDecider()


def check_backend_config(cfg: OrchestratorConfig) -> None:
    """Refuse, before any work, a run whose model options cannot be read."""
    uses = cfg.decider in ("vlm", "local") or cfg.monitor == "vlm"
    if not uses and (cfg.model or cfg.backend_opts or cfg.backend):
        raise InputError("--model/--opt/--backend are for the vlm and local deciders and the "
                         "vlm monitor", field="decider")
