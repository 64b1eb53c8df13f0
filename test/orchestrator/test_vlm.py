"""The model deciders and the vlm monitor, over the real chat-completions protocol: a scripted
OpenAI-compatible server on loopback (`support.chat_server`) that checks every request (the
images are PNG/JPEG data URLs of the configured size, BEFORE differs from NOW, the answer
schema's enums are the mode's and the plan's) and answers scripted decisions, in the real
embedded sim with the expert as the faulted VLA.

The message shapes (content parts `{"type": "image_url", "image_url": {"url": "data:..."}}`)
follow the OpenAI client's own types: openai/openai-python,
src/openai/types/chat/chat_completion_content_part_image_param.py.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.chat_server import ChatServer, Reply, decode_data_url

from mango.orchestrator.config import MODES, OrchestratorConfig
from mango.orchestrator.loop import Orchestrator, TaskOutcome
from mango.orchestrator.planning import make_plan
from mango.orchestrator.schemas import EpisodeRecord
from mango.sim.env import SimEnv, as_scene
from mango.sim.faults import parse_fault

_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


class ScriptedModel:
    """The fake model: reads the request's data block, checks the request, answers.

    plan: the given subgoal texts; route: execute the subgoal / next subgoal once it is done;
    recovery: `recover(context)` (the test's script); monitor: `monitor(context)`.
    """

    def __init__(self, plan_texts: list[str], mode: str, size: tuple[int, int],
                 recover: Callable[[dict[str, Any]], Reply] | None = None,
                 monitor: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.plan_texts, self.mode, self.size = plan_texts, MODES[mode], size
        self.recover = recover
        self.monitor = monitor
        self.seen: list[dict[str, Any]] = []  # per request: phase, images, schema, context

    def __call__(self, body: dict[str, Any]) -> Reply:
        user = body["messages"][1]
        parts = user["content"] if isinstance(user["content"], list) else [
            {"type": "text", "text": user["content"]}]
        text = parts[0]["text"]
        ctx = json.loads(_BLOCK.search(text).group(1))
        labels = [p["text"].rstrip(":") for p in parts[1:] if p["type"] == "text"]
        images = [decode_data_url(p["image_url"]["url"]) for p in parts
                  if p["type"] == "image_url"]
        for img in images:
            assert img.shape == (self.size[1], self.size[0], 3)
        fmt = body.get("response_format") or {}
        schema = fmt.get("json_schema", {}).get("schema")
        self.seen.append({"phase": ctx["phase"], "labels": labels, "images": images,
                          "schema": schema, "ctx": ctx, "messages": body["messages"]})
        phase = ctx["phase"]
        if phase == "plan":
            return Reply(json.dumps({"subgoals": [{"instruction": t} for t in self.plan_texts],
                                     "ordered": True}))
        if phase == "monitor":
            assert self.monitor is not None
            return Reply(json.dumps({"status": self.monitor(ctx), "reason": "scripted look"}))
        if phase == "recovery":
            assert self.recover is not None
            return self.recover(ctx)
        sig = ctx["signal"] or {}
        if ctx["active"] in ctx["completed"] or (sig.get("kind") == "completed"
                                                 and sig.get("subgoal") == ctx["active"]):
            return answer("next_subgoal", "noop", "the monitor says it is done")
        return answer("continue", "vla", "execute the subgoal")


def answer(action: str, tool: str, reason: str, **extra: Any) -> Reply:
    return Reply(json.dumps({"action": action, "tool": tool, "reason": reason, **extra}))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer()
    yield s
    s.close()


def plan_texts(scene_name: str, seed: int = 0) -> list[str]:
    scene = as_scene(scene_name)
    env = SimEnv(scene, seed=seed)
    try:
        state = env.reset(seed)
        return [s.instruction for s in make_plan(scene, None, state).subgoals]
    finally:
        env.close()


def run(server: ChatServer, scene: str, fault: str | None, model: ScriptedModel,
        monitor: str = "oracle", seed: int = 0, **cfg: Any
        ) -> tuple[TaskOutcome, EpisodeRecord, Orchestrator]:
    server.default = model
    opts = (("base_url", server.url), ("api_key_env", ""), ("max_retries", "0"),
            ("backoff_s", "0"), *cfg.pop("opts", ()))
    config = OrchestratorConfig(mode=model.mode.name, monitor=monitor,
                                decider=cfg.pop("decider", "vlm"), model="test-vlm",
                                backend_opts=opts, image_size=model.size, **cfg)
    rec = EpisodeRecord()
    orch = Orchestrator(as_scene(scene), seed, config,
                        parse_fault(fault) if fault else None, record=rec)
    try:
        return orch.run(), rec, orch
    finally:
        orch.close()


def recoveries(out: TaskOutcome) -> list[dict[str, Any]]:
    return [d for d in out.decisions if d["phase"] == "recovery"]


def test_wrong_object_is_recovered_with_the_grasp_tool_the_model_chose(server) -> None:
    size = (320, 240)

    def recover(ctx: dict[str, Any]) -> Reply:
        held = (ctx["perceived"] or {}).get("held")
        assert held == "milk_1"  # the deliberation context carries what perception saw
        return answer("grasp_tool", "grasp", f"{held} is in the hand; take the right one")

    model = ScriptedModel(plan_texts("soup_sauce_basket"), "full", size, recover)
    out, rec, _ = run(server, "soup_sauce_basket", "wrong_object@1", model,
                      image_format="png")
    first = recoveries(out)[0]
    assert (first["action"], first["tool"]) == ("grasp_tool", "grasp")
    assert first["decider"] == "vlm" and first["model"] == "test-vlm" and first["rule"] is None
    assert ("grasp", "succeeded") in [(ln["tool"], ln["status"]) for ln in rec.lines
                                      if ln["record"] == "tool_end"]
    assert out.success and out.verdict["verdict"] == "pass"
    plan = next(ln for ln in rec.lines if ln["record"] == "plan")
    assert plan["decider"] == "vlm" and plan["source"] == "model test-vlm"

    # what went over the wire
    phases = [s["phase"] for s in model.seen]
    assert phases[0] == "plan" and "recovery" in phases
    assert len(model.seen) == len(out.decisions) + 1  # one request per decision point
    rq = next(s for s in model.seen if s["phase"] == "recovery")
    assert rq["labels"] == ["BEFORE", "NOW"]
    before, now = rq["images"]
    assert np.abs(before.astype(int) - now.astype(int)).mean() > 1.0  # the arm moved
    props = rq["schema"]["properties"]
    assert sorted(props["action"]["enum"]) == sorted({a for a, _ in MODES["full"].pairs})
    assert sorted(props["tool"]["enum"]) == ["grasp", "noop", "place", "vla"]
    ids = [s.id for s in out.plan.subgoals]
    assert props["remaining"]["anyOf"][0]["items"]["enum"] == ids
    start = next(s for s in model.seen if s["phase"] == "route")
    assert start["labels"] == ["NOW"]  # a subgoal's start has no BEFORE yet
    assert rq["ctx"]["allowed"] and rq["ctx"]["active"] == "1"


def test_a_drop_is_replanned_onto_the_remaining_original_subgoals(server) -> None:
    """stove_moka: the pot drops in subgoal 2; the model first invents a subgoal (refused by
    the answer schema and re-asked with the error), then returns the original one left."""
    asked: list[dict[str, Any]] = []

    def recover(ctx: dict[str, Any]) -> Reply:
        asked.append(ctx)
        left = [i for i in ctx["subgoal_ids"] if i not in ctx["completed"]]
        if len(asked) == 1:
            return answer("replan", "noop", "dropped; redo it and wipe the stove",
                          remaining=[*left, "3"])
        return answer("replan", "noop", "the pot fell; do what is left", remaining=left)

    model = ScriptedModel(plan_texts("stove_moka"), "full", (256, 192), recover)
    out, rec, _ = run(server, "stove_moka", "drop@0.3", model,
                      opts=(("repair_attempts", "1"),))
    replans = [d for d in out.decisions if d["action"] == "replan"]
    assert len(replans) == 1 and replans[0]["remaining"] == ["2"]
    assert replans[0]["decider"] == "vlm"
    # the invented id never reached the loop: the backend's repair re-ask named it
    repair = model.seen[[s["phase"] for s in model.seen].index("recovery") + 1]
    follow_up = repair["messages"][-1]["content"]
    assert "remaining" in follow_up and "not valid" in follow_up
    after = [ln for ln in rec.lines if ln["record"] == "tool_start" and ln["t"] >= replans[0]["t"]]
    assert after[0]["instruction"] == out.plan.subgoals[1].instruction
    assert out.success


def test_a_replan_that_keeps_inventing_aborts_with_the_reason(server) -> None:
    def recover(ctx: dict[str, Any]) -> Reply:
        return answer("replan", "noop", "add a step", remaining=["1", "2", "9"])

    model = ScriptedModel(plan_texts("soup_sauce_basket"), "full", (160, 120), recover)
    out, _, _ = run(server, "soup_sauce_basket", "drop@0.5", model,
                    opts=(("repair_attempts", "1"),))
    last = out.decisions[-1]
    assert last["action"] == "abort" and last["decider"] == "vlm"
    assert "could not answer" in last["reason"] and "remaining" in last["reason"]
    assert out.aborted == last["reason"] and not out.success


def test_a_false_alarm_is_continued_through_the_cli(server, tmp_path) -> None:
    from typer.testing import CliRunner

    from mango.cli.main import app

    model = ScriptedModel(plan_texts("soup_sauce_basket"), "full", (640, 480),
                          lambda ctx: answer("continue", "vla", "the hand is moving: a false "
                                             "alarm"))
    server.default = model
    res = CliRunner().invoke(app, [
        "task", "run", "--scene", "soup_sauce_basket", "--mode", "full", "--monitor", "oracle",
        "--decider", "vlm", "--model", "test-vlm", "--opt", f"base_url={server.url}",
        "--opt", "api_key_env=", "--no-progress-s", "1.5", "--record", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["success"] and not out["aborted"]
    lines = [json.loads(x) for x in (tmp_path / "episode.jsonl").read_text().splitlines()]
    rec = [ln for ln in lines if ln["record"] == "decision" and ln["phase"] == "recovery"]
    assert rec and all((d["action"], d["tool"], d["decider"]) == ("continue", "vla", "vlm")
                       for d in rec)
    starts = [ln for ln in lines if ln["record"] == "tool_start"]
    assert len({ln["subgoal"] for ln in starts}) == 2
    # the same VLA run went on: one instruction per subgoal
    assert len({ln["instruction"] for ln in starts}) == 2
    assert any(s["phase"] == "recovery" for s in model.seen)
    assert all(s["images"][0].shape == (480, 640, 3) for s in model.seen if s["images"])


def test_the_arm_is_still_while_a_slow_model_deliberates(server) -> None:
    def recover(ctx: dict[str, Any]) -> Reply:
        left = [i for i in ctx["subgoal_ids"] if i not in ctx["completed"]]
        r = answer("replan", "noop", "dropped: do it again", remaining=left)
        r.delay = 1.0
        return r

    model = ScriptedModel(plan_texts("soup_sauce_basket"), "full", (160, 120), recover)
    t0 = time.perf_counter()
    out, _, _ = run(server, "soup_sauce_basket", "drop@0.5", model, image_format="jpeg")
    assert time.perf_counter() - t0 >= 1.0
    rec = recoveries(out)[0]
    assert rec["latency_s"] >= 1.0 and rec["model_s"] >= 1.0
    h = out.halts[0]
    assert h.t_end - h.t_request >= 1.0  # held for the deliberation's length too
    assert h.max_joint_speed < 0.05  # rad/s over the whole deliberation
    assert out.success


def test_a_malformed_answer_is_repaired_and_a_broken_model_aborts(server) -> None:
    calls = {"n": 0}

    def recover(ctx: dict[str, Any]) -> Reply:
        calls["n"] += 1
        if calls["n"] == 1:
            return Reply("Sure! I think we should grasp it: {action: grasp_tool}")
        left = [i for i in ctx["subgoal_ids"] if i not in ctx["completed"]]
        return Reply("```json\n" + json.dumps({"action": "replan", "tool": "noop",
                                               "remaining": left, "reason": "fell"}) + "\n```")

    model = ScriptedModel(plan_texts("soup_sauce_basket"), "full", (160, 120), recover)
    out, _, _ = run(server, "soup_sauce_basket", "drop@0.5", model,
                    opts=(("repair_attempts", "1"),))
    assert recoveries(out)[0]["action"] == "replan" and out.success
    assert calls["n"] == 2

    # a server that only fails: every decision is an abort with the reason, never a crash
    def broken(body: dict[str, Any]) -> Reply:
        return Reply(status=503, error="model overloaded")

    server.default = broken
    config = OrchestratorConfig(mode="full", monitor="oracle", decider="vlm", model="m",
                                backend_opts=(("base_url", server.url), ("api_key_env", ""),
                                              ("max_retries", "0")))
    orch = Orchestrator(as_scene("soup_sauce_basket"), 0, config)
    try:
        out = orch.run()
    finally:
        orch.close()
    assert out.decisions[0]["action"] == "abort" and "HTTP 503" in out.decisions[0]["reason"]
    assert not out.success
    plan = next(ln for ln in orch.record.lines if ln["record"] == "plan")
    assert plan["decider"] == "offline" and "could not answer" in plan["rejected"]


def test_the_vlm_monitor_looks_at_its_rate_and_its_answers_are_signals(server) -> None:
    """A fake VLM that is always right (it reads the sim's ground truth): its completions
    route the task, at 1 Hz of robot time, with BEFORE and NOW images each look."""
    box: dict[str, Any] = {}

    def look(ctx: dict[str, Any]) -> str:
        orch = box["orch"]
        sg = next(s for s in orch.plan.subgoals if s.id == ctx["subgoal"])
        return "completed" if orch.detector.holds(sg.expert_step) else "in_progress"

    model = ScriptedModel(plan_texts("soup_sauce_basket"), "vla_only", (160, 120),
                          monitor=look)
    server.default = model
    config = OrchestratorConfig(mode="vla_only", monitor="vlm", decider="offline",
                                model="test-vlm", vlm_monitor_hz=1.0, image_size=(160, 120),
                                backend_opts=(("base_url", server.url), ("api_key_env", "")))
    orch = Orchestrator(as_scene("soup_sauce_basket"), 0, config)
    box["orch"] = orch
    try:
        out = orch.run()
    finally:
        orch.close()
    looks = [s for s in model.seen if s["phase"] == "monitor"]
    assert looks and all(s["labels"] == ["BEFORE", "NOW"] for s in looks)
    assert all(s["schema"]["properties"]["status"]["enum"] ==
               ["in_progress", "completed", "failed"] for s in looks)
    signals = [ln for ln in orch.record.lines if ln["record"] == "signal"]
    assert [s["subgoal"] for s in signals if s["reason"] == "vlm_completed"] == ["1", "2"]
    for sid in ("1", "2"):  # at the rate within a subgoal; a tool's end adds one look
        ts = [s["ctx"]["t"] for s in looks if s["ctx"]["look"] == "rate"
              and s["ctx"]["subgoal"] == sid]
        assert ts and all(b - a >= 1.0 - 1e-6 for a, b in itertools.pairwise(ts))
    assert len(looks) <= out.t_end * 1.0 + 4
    assert out.success


LOCAL_RUN = Path(__file__).resolve().parents[1] / "data" / "orchestrator" / "local_qwen05b"


def test_the_local_planner_run_replays_offline_and_names_who_answered() -> None:
    """The recorded end-to-end run of the llama.cpp Qwen2.5-Coder-0.5B as planner
    (soup_sauce_basket, drop@0.5; recorded with `mango task run --decider local --backend
    record:...@local`), replayed without the model: its plan named an object the task does
    not move, twice, so the rules' plan ran, said so; its replan after the drop returned the
    two original subgoals; every other decision is the rules', named as such."""
    config = OrchestratorConfig(mode="full", monitor="oracle", decider="local",
                                backend=f"replay:{LOCAL_RUN}")
    rec = EpisodeRecord()
    orch = Orchestrator(as_scene("soup_sauce_basket"), 0, config, parse_fault("drop@0.5"),
                        record=rec)
    try:
        out = orch.run()
    finally:
        orch.close()
    plan = next(ln for ln in rec.lines if ln["record"] == "plan")
    assert plan["decider"] == "offline" and plan["rule"] == "plan.from_oracle"
    assert "orange juice" in plan["rejected"] and plan["rejected"].count("answer ") == 2
    by_model = [d for d in out.decisions if d["decider"] == "local"]
    assert len(by_model) == 1
    replan = by_model[0]
    assert replan["action"] == "replan" and replan["remaining"] == ["1", "2"]
    assert replan["model"] == "qwen2.5-coder-0.5b-instruct-q4_k_m" and replan["rule"] is None
    assert replan["rules_said"] == "recovery.dropped_in_transport"
    rules = [d for d in out.decisions if d["decider"] != "local"]
    assert rules and all(d["decider"] == "offline" and d["rule"] and
                         d["deferred_by"] == "local" for d in rules)
    assert out.success
