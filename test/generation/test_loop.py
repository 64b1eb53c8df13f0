"""The refinement loops really iterate, caps hold, and ablations / baseline change the method.

`ScriptedBackend` is a real `LLMBackend`: it answers chosen generator tasks from a script
and passes every other call to the offline planner, recording what it was asked.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from mango.generation.engine import load_function_library
from mango.generation.models import AtomicLibraryAnswer, OracleCandidate, SceneTask
from mango.generation.offline import module1
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.pipeline import GenerationConfig, make_pipeline
from mango.llm.backend import AgentCall, LLMBackend

INSTRUCTION = "put the black bowl in the bottom drawer of the cabinet and close it"

GOOD = {
    "instruction": INSTRUCTION,
    "execution_mode": "sequential",
    "plan": [
        {"step": 1, "execution_mode": "sequential", "actions": [
            {"action_id": "approach", "parameters": {"obj_id": "akita_black_bowl_1"},
             "monitoring": [{"oracle_id": "approach",
                             "handle_as": "near(robot_hand, akita_black_bowl_1)"}]},
            {"action_id": "pick_up", "parameters": {"obj_id": "akita_black_bowl_1"},
             "monitoring": [{"oracle_id": "pick_up", "handle_as":
                             "grasped(akita_black_bowl_1) and up(akita_black_bowl_1)"}]},
            {"action_id": "place_in",
             "parameters": {"obj_id": "akita_black_bowl_1",
                            "target_id": "white_cabinet_1_bottom_region"},
             "monitoring": [{"oracle_id": "place_in",
                             "handle_as": "in(akita_black_bowl_1, white_cabinet_1_bottom_region)"
                                          " and not grasped(akita_black_bowl_1)"}]}]},
        {"step": 2, "execution_mode": "sequential", "actions": [
            {"action_id": "close", "parameters": {"joint_id": "white_cabinet_1_bottom_region"},
             "monitoring": [{"oracle_id": "close",
                             "handle_as": "close(white_cabinet_1_bottom_region)"}]}]},
    ],
}


def flawed() -> dict[str, Any]:
    """handle_as equal to the oracle id, and a hallucinated object."""
    bad = copy.deepcopy(GOOD)
    pick = bad["plan"][0]["actions"][1]
    pick["monitoring"][0]["handle_as"] = "pick_up"
    place = bad["plan"][0]["actions"][2]
    place["parameters"]["target_id"] = "ghost_drawer_1"
    place["monitoring"][0]["handle_as"] = "in(akita_black_bowl_1, ghost_drawer_1)"
    return bad


class ScriptedBackend:
    """Scripted answers for some tasks; the offline planner for the rest."""

    name = "scripted"

    def __init__(self, script: dict[str, list[dict[str, Any]]], repeat_last: bool = True):
        self.script = {k: list(v) for k, v in script.items()}
        self.repeat_last = repeat_last
        self.offline = OfflinePlanner()
        self.calls: list[AgentCall] = []
        self.threads: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def model_for(self, role: str) -> str:
        return f"script-{role}"

    def complete(self, call: AgentCall, schema):
        with self._lock:
            self.calls.append(call)
            self.threads.setdefault(call.role, set()).add(threading.current_thread().name)
        answers = self.script.get(call.task)
        if answers:
            data = answers.pop(0) if len(answers) > 1 or not self.repeat_last else answers[0]
            return schema.model_validate(data)
        return self.offline.complete(call, schema)

    def tasks(self, task: str) -> list[AgentCall]:
        return [c for c in self.calls if c.task == task]


def test_scripted_backend_is_an_llm_backend():
    assert isinstance(ScriptedBackend({}), LLMBackend)
    assert isinstance(OfflinePlanner(), LLMBackend)


def _pipeline(backend, **cfg):
    library, catalog = load_function_library(None)
    return make_pipeline(backend, catalog, GenerationConfig(**cfg), library=library)


@pytest.fixture(scope="module")
def libraries(offline_libero):
    lib, _, _ = offline_libero
    return lib.atomic_library, lib.oracle_library


@pytest.fixture(scope="module")
def drawer_scene(libero_scenes) -> SceneTask:
    return next(e for e in libero_scenes.task_objects if e.id == INSTRUCTION)


def test_flawed_candidate_rejected_then_fixed(libraries, drawer_scene):
    backend = ScriptedBackend({"module3.generate": [flawed(), GOOD]})
    run = _pipeline(backend).module3(INSTRUCTION, drawer_scene, *libraries)
    assert run.approved
    assert run.module3.iterations == 2
    assert run.oracle.to_json_dict() == GOOD

    first = run.module3.history[0]
    assert first.verdict["verdict"] == "REJECTED"
    reports = {r["aspect"]: r["issues"] for r in first.reports}
    assert set(reports) == {"logic", "compliance", "grounding", "execution_reliability"}
    assert any("is the oracle id" in i and "1.2" in i for i in reports["compliance"])
    assert any("'ghost_drawer_1' does not exist" in i for i in reports["grounding"])
    assert any("ghost_drawer_1" in i and "ungrounded" in i
               for i in reports["execution_reliability"])
    # handle_as "pick_up" parses as no predicate call: Execution Reliability says so too
    assert any("1.2" in i for i in reports["execution_reliability"])
    # the interpretation of the rejection reached the generator's second call
    second = backend.tasks("module3.generate")[1]
    fb = " ".join(second.context["feedback"])
    assert "ghost_drawer_1" in fb and "oracle id" in fb
    assert "ghost_drawer_1" in second.messages[1]["content"]
    assert [c.role for c in backend.tasks("module3.interpret")] == ["interpreter"]
    assert run.module3.history[0].feedback == second.context["feedback"]
    assert run.module3.history[1].verdict["verdict"] == "APPROVED"


class BarrierBackend(ScriptedBackend):
    """Assessor calls wait until all three model assessors are inside at once."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.barrier = threading.Barrier(3, timeout=10)

    def complete(self, call: AgentCall, schema):
        if call.role == "assessor":
            self.barrier.wait()  # raises BrokenBarrierError if they ran one after another
        return super().complete(call, schema)


def test_assessors_run_in_parallel(libraries, drawer_scene):
    backend = BarrierBackend({"module3.generate": [GOOD]})
    run = _pipeline(backend).module3(INSTRUCTION, drawer_scene, *libraries)
    assert run.approved
    names = backend.threads["assessor"]
    assert len(names) == 3 and all(n.startswith("assessor") for n in names)


def test_module3_cap_enforced(libraries, drawer_scene):
    backend = ScriptedBackend({"module3.generate": [flawed()]})
    run = _pipeline(backend, module3_max_iterations=4, stop_on_stall=False).module3(
        INSTRUCTION, drawer_scene, *libraries)
    assert not run.approved
    assert run.module3.iterations == 4
    assert len(backend.tasks("module3.generate")) == 4
    assert "not approved within 4" in run.module3.reason
    # the last candidate is still returned
    assert run.oracle.plan[0].actions[1].monitoring[0].handle_as == "pick_up"


def test_default_cap_is_25_and_stall_stops_early(libraries, drawer_scene):
    assert GenerationConfig().module3_max_iterations == 25
    backend = ScriptedBackend({"module3.generate": [flawed()]})
    run = _pipeline(backend).module3(INSTRUCTION, drawer_scene, *libraries)
    assert not run.approved and run.module3.iterations == 2
    assert "repeated its candidate" in run.module3.reason


COMPOSITE = {"atomic_library": [{"id": "put_in", "parameters": ["obj_id", "target_id"],
                                 "post_conditions": ["in(obj_id, target_id)"]}]}
ATOMIC = {"atomic_library": [
    {"id": "approach", "parameters": ["obj_id"],
     "post_conditions": ["near(robot_hand, obj_id)"]},
    {"id": "pick_up", "parameters": ["obj_id"], "post_conditions": ["grasped(obj_id)"]},
    {"id": "place_in", "parameters": ["obj_id", "target_id"],
     "post_conditions": ["in(obj_id, target_id)"]},
]}


def test_composite_library_rejected_then_fixed(libero_tasks):
    """A model's composite 'put_in' is rejected; the assessors' issues reach the generator."""
    backend = ScriptedBackend({"module1.generate": [COMPOSITE, ATOMIC]})
    atomic, res = _pipeline(backend).module1(libero_tasks[:1])
    assert res.approved and res.iterations == 2
    assert atomic == AtomicLibraryAnswer.model_validate(ATOMIC)

    first = res.history[0]
    assert first.verdict["verdict"] == "REJECTED"
    reports = {r["aspect"]: r["issues"] for r in first.reports}
    assert any("'put_in' is composite" in i and "'place_in'" in i
               for i in reports["atomicity"])
    assert any("add 'approach'" in i for i in first.verdict["refinement_instructions"])
    second = backend.tasks("module1.generate")[1]
    fb = second.context["feedback"]
    assert any("split 'put_in' into 'approach', 'pick_up' and 'place_in'" in i for i in fb)
    assert "split 'put_in'" in second.messages[1]["content"]
    assert second.context["previous"] == res.history[0].candidate
    assert AtomicLibraryAnswer.model_validate(second.context["previous"]) == (
        AtomicLibraryAnswer.model_validate(COMPOSITE))
    assert [c.role for c in backend.tasks("module1.interpret")] == ["interpreter"]
    assert res.history[1].verdict["verdict"] == "APPROVED"


def test_offline_generator_applies_the_feedback_on_a_foreign_library(libero_tasks):
    """After a model's composite library, the offline generator makes the edits asked for."""
    backend = ScriptedBackend({"module1.generate": [COMPOSITE]}, repeat_last=False)
    atomic, res = _pipeline(backend).module1(libero_tasks[:1])
    assert res.approved and res.iterations == 2
    assert [t.id for t in atomic.atomic_library] == ["approach", "pick_up", "place_in"]
    assert [t["id"] for t in res.history[0].candidate["atomic_library"]] == ["put_in"]


def test_module1_cap_and_debate_cap(libero_tasks):
    composite = COMPOSITE
    backend = ScriptedBackend({"module1.generate": [composite]})
    pipe = _pipeline(backend, module1_max_iterations=3, stop_on_stall=False)
    _, res = pipe.module1(libero_tasks[:1])
    assert not res.approved and res.iterations == 3
    assert len(backend.tasks("module1.generate")) == 3
    atomicity = res.history[0].reports[0]
    assert atomicity["aspect"] == "atomicity" and "composite" in atomicity["issues"][0]

    loose = {"id": "pick_up", "parameters": ["obj_id"], "correctness_oracle": "up(obj_id)"}
    backend = ScriptedBackend({"module2.generate": [loose]})
    pipe = _pipeline(backend, debate_max_rounds=3, module2_max_iterations=2)
    atomic = module1.generate({"instructions": ["pick up the book"], "previous": None})
    _, res2 = pipe.module2(["pick up the book"], atomic)
    debates = res2.extra["debates"]["pick_up"]
    assert all(d["rounds"] == 3 and not d["hacker_satisfied"] for d in debates)
    hack = debates[0]["log"][0]["hacker"]
    assert hack["exploit_found"] and any("grasped(obj_id)" in i for i in hack["issues"])


def test_debate_fixes_a_loose_oracle(libero_tasks):
    loose = {"id": "pick_up", "parameters": ["obj_id"], "correctness_oracle": "up(obj_id)"}
    backend = ScriptedBackend({"module2.generate": [loose]}, repeat_last=False)
    pipe = _pipeline(backend)
    atomic, _ = pipe.module1(["pick up the book"])
    # the script answers the first debate: make it pick_up's
    atomic = atomic.model_copy(update={"atomic_library": [
        t for t in atomic.atomic_library if t.id == "pick_up"]})
    lib, res = pipe.module2(["pick up the book"], atomic)
    assert res.approved
    pick = lib.get("pick_up")
    assert pick is not None and "grasped(obj_id)" in pick.correctness_oracle
    debate = res.extra["debates"]["pick_up"][0]
    assert debate["rounds"] == 2
    assert debate["log"][0]["oracle"]["correctness_oracle"] == "up(obj_id)"
    assert any("add 'grasped(obj_id)'" in i for i in debate["log"][0]["hacker"]["issues"])
    # the hacker's issues reached the generator, which added what they ask for
    second = backend.tasks("module2.generate")[1]
    assert second.context["task"]["id"] == "pick_up"
    assert any("grasped(obj_id)" in f for f in second.context["feedback"])
    assert pick.correctness_oracle == "up(obj_id) and grasped(obj_id)"


@pytest.mark.parametrize("ablation", ["no_module1", "no_module2", "no_er", "baseline"])
def test_ablations_run(ablation, libero_tasks, libero_scenes):
    backend = ScriptedBackend({})
    pipe = _pipeline(backend, ablation=ablation)
    lib = pipe.generate_library(libero_tasks)
    scene = libero_scenes.task_objects[3]
    run = pipe.module3(scene.id, scene, lib.atomic_library, lib.oracle_library)
    OracleCandidate.model_validate(run.oracle.to_json_dict())
    roles = {c.role for c in backend.calls}
    if ablation == "baseline":
        assert roles == {"generator"}
        assert [c.task for c in backend.calls] == [
            "module1.generate", "module2.generate_library", "module3.generate"]
    if ablation == "no_module1":
        assert not backend.tasks("module1.generate") and lib.module1.iterations == 0
        assert backend.tasks("module2.generate_library")
    if ablation == "no_module2":
        assert not lib.oracle_library.atomic_oracle_library
        assert not backend.tasks("module2.hack")
    if ablation == "no_er":
        aspects = {r["aspect"] for r in run.module3.history[0].reports}
        assert aspects == {"logic", "compliance", "grounding"}
    if ablation != "baseline":
        assert {"generator", "assessor", "judge"} <= roles


def test_bad_ablation_rejected():
    with pytest.raises(ValueError, match="unknown ablation"):
        GenerationConfig(ablation="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        GenerationConfig(module3_max_iterations=0)


def test_offline_generator_follows_a_foreign_library(drawer_scene):
    """A library written by someone else (other ids and parameter names) is obeyed."""
    from mango.generation.models import AtomicOracleLibrary

    foreign = AtomicOracleLibrary.model_validate({"atomic_oracle_library": [
        {"id": "grab", "parameters": ["item"],
         "correctness_oracle": "grasped(item) and up(item)"},
        {"id": "deposit_inside", "parameters": ["item", "container"],
         "correctness_oracle": "in(item, container) and not grasped(item)"},
        {"id": "shut", "parameters": ["door"], "correctness_oracle": "close(door)"},
    ]})
    backend = ScriptedBackend({})
    run = _pipeline(backend).module3(INSTRUCTION, drawer_scene, None, foreign)
    assert run.approved, run.module3.history[-1].reports
    acts = [(a.action_id, a.parameters, a.monitoring[0].handle_as)
            for _, a in run.oracle.actions()]
    assert acts == [
        ("grab", {"item": "akita_black_bowl_1"},
         "grasped(akita_black_bowl_1) and up(akita_black_bowl_1)"),
        ("deposit_inside", {"item": "akita_black_bowl_1",
                            "container": "white_cabinet_1_bottom_region"},
         "in(akita_black_bowl_1, white_cabinet_1_bottom_region)"
         " and not grasped(akita_black_bowl_1)"),
        ("shut", {"door": "white_cabinet_1_bottom_region"},
         "close(white_cabinet_1_bottom_region)"),
    ]


def test_judge_cannot_approve_what_execution_reliability_rejects(libraries, drawer_scene):
    approve = {"verdict": "APPROVED", "reasons": ["looks fine"], "refinement_instructions": []}
    backend = ScriptedBackend({"module3.generate": [flawed(), GOOD],
                               "module3.judge": [approve]})
    run = _pipeline(backend).module3(INSTRUCTION, drawer_scene, *libraries)
    first = run.module3.history[0]
    assert first.verdict["verdict"] == "REJECTED"  # the model said APPROVED; the rules did not
    assert any("execution_reliability" in r for r in first.verdict["reasons"])
    assert run.approved and run.module3.iterations == 2
    assert run.oracle.to_json_dict() == GOOD


def test_rules_judge_malformed_expressions_instead_of_crashing(libraries, drawer_scene):
    """A model's unparseable oracle is reported with the parser's reason, never skipped."""
    broken = {"id": "pick_up", "parameters": ["obj_id"],
              "correctness_oracle": "grasped(obj_id) and up(obj_id"}
    backend = ScriptedBackend({"module2.generate": [broken]})
    pipe = _pipeline(backend, debate_max_rounds=2, module2_max_iterations=1)
    atomic = module1.generate({"instructions": ["pick up the book"], "previous": None})
    _, res = pipe.module2(["pick up the book"], atomic)
    hack = res.extra["debates"]["pick_up"][0]["log"][0]["hacker"]
    assert hack["exploit_found"]
    assert any("is not a valid expression" in i and "column" in i for i in hack["issues"])
    assert not res.approved
    assert any("pick_up" in r and "not a valid expression" in r
               for r in res.history[0].verdict["reasons"])

    garbage = copy.deepcopy(GOOD)
    garbage["plan"][0]["actions"][2]["monitoring"][0]["handle_as"] = "in(akita_black_bowl_1,,"
    backend = ScriptedBackend({"module3.generate": [garbage]})
    run = _pipeline(backend, module3_max_iterations=1).module3(
        INSTRUCTION, drawer_scene, *libraries)
    reports = {r["aspect"]: r["issues"] for r in run.module3.history[0].reports}
    assert any("differs from the library oracle 'place_in'" in i and "1.3" in i
               for i in reports["compliance"])
    assert any("1.3" in i for i in reports["execution_reliability"])
    assert not run.approved
