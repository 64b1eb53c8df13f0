"""The three MANGO modules and their refinement loops.

- Module I: atomic task library. Generator -> Atomicity/Redundancy/Repetition assessors
  (parallel) -> Judge -> Report Interpretation -> next iteration (<= 10).
- Module II: atomic task oracle library. Per task a Generator <-> Oracle Hacker debate
  (<= 10 rounds), then a library Judge; rejected tasks are debated again (<= 10).
- Module III: fine-grained oracle. Generator -> Logic/Compliance/Grounding assessors plus
  the rule-based Execution Reliability assessor -> Judge -> interpretation (<= 25).

Ablations drop Module I, Module II or Execution Reliability; the Baseline asks one
generator call per module with no assessors or judges. Every exchange is recorded in the
shared `Transcript`; every iteration's candidate, reports, verdict and feedback in the
module's history.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from mango.generation.agents import Agent, AssessorSpec, RuleAssessor, Transcript, run_board
from mango.generation.models import (
    AssessorReport,
    AtomicLibraryAnswer,
    AtomicOracle,
    AtomicOracleLibrary,
    AtomicTask,
    Feedback,
    FunctionCatalog,
    HackerReport,
    JudgeVerdict,
    OracleCandidate,
    SceneTask,
    grounded_candidate_schema,
)
from mango.generation.offline.grounding import ParseResult, ground_instruction
from mango.generation.offline.matching import Grounder
from mango.generation.offline.references import layout_words
from mango.generation.reliability import (
    asked_actions,
    named_ids,
    narrowed,
    parameter_ids,
    plan_bound,
    predicate_arguments,
)
from mango.llm.backend import LLMBackend

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)

Ablation = Literal["full", "no_module1", "no_module2", "no_er", "baseline"]
ABLATIONS: tuple[str, ...] = ("full", "no_module1", "no_module2", "no_er", "baseline")

MODULE1_ASSESSORS = (
    AssessorSpec("atomicity", "module1.assess.atomicity"),
    AssessorSpec("redundancy", "module1.assess.redundancy"),
    AssessorSpec("repetition", "module1.assess.repetition"),
)
MODULE3_ASSESSORS = (
    AssessorSpec("logic", "module3.assess.logic"),
    AssessorSpec("compliance", "module3.assess.compliance"),
    AssessorSpec("grounding", "module3.assess.grounding"),
)


@dataclass(frozen=True)
class GenerationConfig:
    """Caps and switches of a run (the paper's caps are the defaults)."""

    ablation: Ablation = "full"
    module1_max_iterations: int = 10
    debate_max_rounds: int = 10
    module2_max_iterations: int = 10
    module3_max_iterations: int = 25
    parallel_assessors: bool = True
    # Stop early when the generator repeats its last candidate after the same feedback:
    # further iterations could only repeat the same exchange.
    stop_on_stall: bool = True

    def __post_init__(self) -> None:
        if self.ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation '{self.ablation}' (one of {', '.join(ABLATIONS)})")
        for name in ("module1_max_iterations", "debate_max_rounds", "module2_max_iterations",
                     "module3_max_iterations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


@dataclass
class IterationRecord:
    iteration: int
    candidate: Any
    reports: list[dict[str, Any]] = field(default_factory=list)
    verdict: dict[str, Any] | None = None
    feedback: list[str] = field(default_factory=list)


@dataclass
class ModuleResult:
    """How a module's loop went: approval, iterations, time and the full history."""

    module: str
    approved: bool
    iterations: int
    seconds: float
    reason: str = ""
    history: list[IterationRecord] = field(default_factory=list)
    calls: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LibraryRun:
    atomic_library: AtomicLibraryAnswer
    oracle_library: AtomicOracleLibrary
    module1: ModuleResult
    module2: ModuleResult

    @property
    def approved(self) -> bool:
        return self.module1.approved and self.module2.approved


@dataclass
class OracleRun:
    oracle: OracleCandidate
    module3: ModuleResult

    @property
    def approved(self) -> bool:
        return self.module3.approved


ProgressFn = Callable[[str], None]


def _dump(model: BaseModel | None) -> Any:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)


def functions_context(catalog: FunctionCatalog) -> dict[str, Any]:
    return {name: {"arguments": p.input_arguments, "description": p.description}
            for name, p in sorted(catalog.predicates.items())}


def scene_context(scene: SceneTask) -> dict[str, Any]:
    return scene.model_dump(mode="json", exclude_defaults=True)


class MangoPipeline:
    """Runs modules I-III on one backend; agents share one transcript."""

    def __init__(
        self,
        backend: LLMBackend,
        catalog: FunctionCatalog,
        config: GenerationConfig | None = None,
        progress: ProgressFn | None = None,
        transcript: Transcript | None = None,
        reliability_factory: Callable[[SceneTask], RuleAssessor] | None = None,
    ) -> None:
        self.backend = backend
        self.catalog = catalog
        self.config = config or GenerationConfig()
        self.progress = progress or (lambda _msg: None)
        self.transcript = transcript or Transcript()
        self.reliability_factory = reliability_factory
        self.generator = Agent(backend, "generator", self.transcript)
        self.assessor = Agent(backend, "assessor", self.transcript)
        self.judge = Agent(backend, "judge", self.transcript)
        self.hacker = Agent(backend, "hacker", self.transcript)
        self.interpreter = Agent(backend, "interpreter", self.transcript)

    # ------------------------------------------------------------------ generic refine loop

    def _refine(
        self,
        module: str,
        schema: type[T],
        base: dict[str, Any],
        specs: tuple[AssessorSpec, ...],
        rules: dict[str, RuleAssessor],
        max_iterations: int,
    ) -> tuple[T, ModuleResult]:
        start = time.perf_counter()
        calls0 = len(self.transcript.entries)
        history: list[IterationRecord] = []
        feedback: list[str] = []
        previous: T | None = None
        candidate: T | None = None
        reason = f"not approved within {max_iterations} iterations"
        approved = False
        for it in range(1, max_iterations + 1):
            ctx = dict(base, feedback=feedback, iteration=it,
                       history=[h.candidate for h in history[-2:]] if history else [])
            if previous is not None:
                ctx["previous"] = _dump(previous)
            candidate = self.generator.ask(f"{module}.generate", ctx, schema, module, it)
            ctx_c = dict(ctx, candidate=_dump(candidate))
            reports = run_board(self.assessor, specs, rules, ctx_c, module, it,
                                self.config.parallel_assessors)
            rep_json = [r.model_dump(mode="json") for r in reports]
            verdict = self.judge.ask(f"{module}.judge", dict(ctx_c, reports=rep_json),
                                     JudgeVerdict, module, it)
            verdict = _gate(verdict, reports, rules)
            record = IterationRecord(it, _dump(candidate), rep_json, _dump(verdict))
            history.append(record)
            n_issues = sum(len(r.issues) for r in reports)
            log.info("%s iteration %d: %s, %d issue(s)", module, it, verdict.verdict, n_issues)
            self.progress(f"{module} iteration {it}: {verdict.verdict} ({n_issues} issue(s))")
            if verdict.approved:
                approved, reason = True, f"approved at iteration {it}"
                break
            fb = self.interpreter.ask(
                f"{module}.interpret", dict(ctx_c, reports=rep_json, verdict=_dump(verdict)),
                Feedback, module, it)
            record.feedback = fb.feedback
            stalled = (previous is not None and _dump(previous) == _dump(candidate)
                       and fb.feedback == feedback)
            feedback = fb.feedback
            previous = candidate
            if stalled and self.config.stop_on_stall:
                reason = (f"stopped at iteration {it}: the generator repeated its candidate "
                          "after the same feedback")
                break
        assert candidate is not None
        result = ModuleResult(module, approved, len(history), time.perf_counter() - start,
                              reason, history, len(self.transcript.entries) - calls0)
        return candidate, result

    def _single(self, module: str, task: str, schema: type[T], ctx: dict[str, Any]
                ) -> tuple[T, ModuleResult]:
        """Baseline: one generator call, nothing checks it."""
        start = time.perf_counter()
        cand = self.generator.ask(task, dict(ctx, feedback=[], iteration=1), schema, module, 1)
        self.progress(f"{module}: single-agent baseline answer")
        return cand, ModuleResult(module, True, 1, time.perf_counter() - start,
                                  "baseline: not assessed", [IterationRecord(1, _dump(cand))],
                                  calls=1)

    # ------------------------------------------------------------------ module I

    def module1(self, instructions: list[str]) -> tuple[AtomicLibraryAnswer, ModuleResult]:
        base = {"instructions": instructions, "functions": functions_context(self.catalog)}
        if self.config.ablation == "baseline":
            return self._single("module1", "module1.generate", AtomicLibraryAnswer, base)
        return self._refine("module1", AtomicLibraryAnswer, base, MODULE1_ASSESSORS, {},
                            self.config.module1_max_iterations)

    # ------------------------------------------------------------------ module II

    def _debate(self, task: AtomicTask, instructions: list[str], judge_feedback: list[str],
                it: int) -> tuple[AtomicOracle, int, bool, list[dict[str, Any]]]:
        feedback = list(judge_feedback)
        rounds: list[dict[str, Any]] = []
        oracle: AtomicOracle | None = None
        for rnd in range(1, self.config.debate_max_rounds + 1):
            ctx: dict[str, Any] = {"task": _dump(task), "instructions": instructions,
                                   "functions": functions_context(self.catalog),
                                   "feedback": feedback, "iteration": rnd}
            if oracle is not None:
                ctx["previous"] = _dump(oracle)
            oracle = self.generator.ask("module2.generate", ctx, AtomicOracle, "module2", it)
            if oracle.id != task.id:
                oracle = oracle.model_copy(update={"id": task.id})
            hack = self.hacker.ask("module2.hack", dict(ctx, oracle=_dump(oracle)), HackerReport,
                                   "module2", it)
            rounds.append({"round": rnd, "oracle": _dump(oracle), "hacker": _dump(hack)})
            if not hack.exploit_found:
                return oracle, rnd, True, rounds
            feedback = [*hack.issues, *([hack.counterexample] if hack.counterexample else [])]
        assert oracle is not None
        return oracle, self.config.debate_max_rounds, False, rounds

    def module2(self, instructions: list[str], atomic_library: AtomicLibraryAnswer | None
                ) -> tuple[AtomicOracleLibrary, ModuleResult]:
        start = time.perf_counter()
        calls0 = len(self.transcript.entries)
        functions = functions_context(self.catalog)
        base: dict[str, Any] = {"instructions": instructions, "functions": functions}
        if atomic_library is not None:
            base["atomic_library"] = _dump(atomic_library)["atomic_library"]
        if self.config.ablation == "baseline":
            return self._single("module2", "module2.generate_library", AtomicOracleLibrary, base)
        if atomic_library is None:
            # Without module I the oracle library is drafted straight from the instructions;
            # the debate and the judge still refine it.
            draft = self.generator.ask("module2.generate_library", dict(base, feedback=[]),
                                       AtomicOracleLibrary, "module2", 0)
            tasks = [AtomicTask(id=o.id, description=o.description, parameters=o.parameters,
                                post_conditions=[o.correctness_oracle])
                     for o in draft.atomic_oracle_library]
        else:
            tasks = list(atomic_library.atomic_library)
        oracles: dict[str, AtomicOracle] = {}
        debates: dict[str, Any] = {}
        todo = [t.id for t in tasks]
        judge_feedback: dict[str, list[str]] = {}
        history: list[IterationRecord] = []
        approved = False
        reason = f"not approved within {self.config.module2_max_iterations} iterations"
        library = AtomicOracleLibrary(atomic_oracle_library=[])
        for it in range(1, self.config.module2_max_iterations + 1):
            for task in tasks:
                if task.id not in todo:
                    continue
                oracle, rounds, tight, log_rounds = self._debate(
                    task, instructions, judge_feedback.get(task.id, []), it)
                oracles[task.id] = oracle
                debates.setdefault(task.id, []).append(
                    {"iteration": it, "rounds": rounds, "hacker_satisfied": tight,
                     "log": log_rounds})
                self.progress(f"module2 iteration {it}: {task.id} debated in {rounds} round(s)"
                              + ("" if tight else " (hacker still finds an exploit)"))
            library = AtomicOracleLibrary(atomic_oracle_library=[oracles[t.id] for t in tasks])
            ctx = dict(base, candidate=_dump(library), iteration=it)
            verdict = self.judge.ask("module2.judge", ctx, JudgeVerdict, "module2", it)
            history.append(IterationRecord(it, _dump(library), [], _dump(verdict),
                                           verdict.refinement_instructions))
            self.progress(f"module2 iteration {it}: {verdict.verdict}")
            if verdict.approved:
                approved, reason = True, f"approved at iteration {it}"
                break
            judge_feedback = {}
            for t in tasks:
                mentioned = [r for r in verdict.refinement_instructions if t.id in r]
                if mentioned:
                    judge_feedback[t.id] = mentioned
            todo = list(judge_feedback) or [t.id for t in tasks]
            if not judge_feedback:
                judge_feedback = {t.id: verdict.refinement_instructions for t in tasks}
        result = ModuleResult("module2", approved, len(history), time.perf_counter() - start,
                              reason, history, len(self.transcript.entries) - calls0,
                              extra={"debates": debates})
        return library, result

    def generate_library(self, instructions: list[str]) -> LibraryRun:
        """Modules I and II (Module I is skipped by the `no_module1` ablation)."""
        if self.config.ablation == "no_module1":
            atomic = AtomicLibraryAnswer(atomic_library=[])
            m1 = ModuleResult("module1", True, 0, 0.0, "skipped (ablation no_module1)")
            oracles, m2 = self.module2(instructions, None)
            atomic = AtomicLibraryAnswer(atomic_library=[
                AtomicTask(id=o.id, description=o.description, parameters=o.parameters)
                for o in oracles.atomic_oracle_library])
        else:
            atomic, m1 = self.module1(instructions)
            if self.config.ablation == "no_module2":
                oracles = AtomicOracleLibrary(atomic_oracle_library=[])
                m2 = ModuleResult("module2", True, 0, 0.0, "skipped (ablation no_module2)")
            else:
                oracles, m2 = self.module2(instructions, atomic)
        return LibraryRun(atomic, oracles, m1, m2)

    # ------------------------------------------------------------------ module III

    def module3(
        self,
        instruction: str,
        scene: SceneTask,
        atomic_library: AtomicLibraryAnswer | None,
        oracle_library: AtomicOracleLibrary | None,
    ) -> OracleRun:
        reading = ground_instruction(instruction, scene)
        base: dict[str, Any] = {
            "instruction": instruction,
            "scene": scene_context(scene),
            "layout_words": layout_words(Grounder(scene), scene.descriptions),
            "referents": reading.phrases,
            "functions": functions_context(self.catalog),
        }
        if atomic_library is not None and atomic_library.atomic_library:
            base["atomic_library"] = _dump(atomic_library)["atomic_library"]
        if oracle_library is not None and oracle_library.atomic_oracle_library:
            base["atomic_oracle_library"] = _dump(oracle_library)["atomic_oracle_library"]
        schema = module3_schema(self.catalog, instruction, scene, atomic_library,
                                oracle_library, reading)
        if self.config.ablation == "baseline":
            cand, res = self._single("module3", "module3.generate", schema, base)
        else:
            rules: dict[str, RuleAssessor] = {}
            if self.config.ablation != "no_er" and self.reliability_factory is not None:
                rules["execution_reliability"] = self.reliability_factory(scene)
            cand, res = self._refine("module3", schema, base, MODULE3_ASSESSORS, rules,
                                     self.config.module3_max_iterations)
        # the answer as the plain model (the enumerating schema's class is only for asking)
        cand = OracleCandidate.model_validate(cand.to_json_dict())
        if cand.instruction.strip() != instruction.strip():
            cand = cand.model_copy(update={"instruction": instruction})
        return OracleRun(cand, res)


def module3_schema(catalog: FunctionCatalog, instruction: str, scene: SceneTask,
                   atomic_library: AtomicLibraryAnswer | None,
                   oracle_library: AtomicOracleLibrary | None,
                   reading: ParseResult | None = None) -> type[OracleCandidate]:
    """The answer schema module III asks with: grounded on the scene, the libraries and the
    predicates' arguments, held to the ids the instruction names and to the actions that
    place things as it asks where the reader read it all, and bounded by the reader's goal
    count."""
    reading = reading or ground_instruction(instruction, scene)
    tasks, oracles, unasked = asked_actions(
        atomic_library.atomic_library if atomic_library else [],
        oracle_library.atomic_oracle_library if oracle_library else [], reading)
    arguments = {p: ids for p, ids in narrowed(predicate_arguments(scene, catalog),
                                               named_ids(reading, scene)).items()
                 if p not in unasked}
    return grounded_candidate_schema(
        scene, {t.id: t.parameters for t in tasks}, [o.id for o in oracles], arguments,
        plan_bound(reading), parameter_ids(tasks, oracles, arguments))


def make_pipeline(
    backend: LLMBackend,
    catalog: FunctionCatalog,
    config: GenerationConfig | None = None,
    progress: ProgressFn | None = None,
    library: Any = None,
) -> MangoPipeline:
    """A pipeline whose Execution Reliability uses the engine's function `library`."""
    from mango.generation.reliability import ExecutionReliabilityAssessor

    return MangoPipeline(
        backend, catalog, config, progress,
        reliability_factory=lambda scene: ExecutionReliabilityAssessor(scene, library))


def _gate(verdict: JudgeVerdict, reports: list[AssessorReport],
          rules: dict[str, RuleAssessor]) -> JudgeVerdict:
    """A judge (a model) may not approve what a rule-based check rejects, or what an assessor
    could not assess: an approved oracle must pass Execution Reliability (spec §7)."""
    if not verdict.approved:
        return verdict
    blocking = [f"{r.aspect}: {'; '.join(r.issues)}" for r in reports
                if (r.aspect in rules and r.issues)
                or any(i.startswith("assessor failed:") for i in r.issues)]
    if not blocking:
        return verdict
    return verdict.model_copy(update={
        "verdict": "REJECTED",
        "reasons": [*verdict.reasons,
                    "the judge approved, but these must be fixed first: " + " | ".join(blocking)],
        "refinement_instructions": [*verdict.refinement_instructions, *blocking],
    })
