"""Mode motor (MotorMind's roles) in the embedded sim: real MuJoCo, real perception backend,
the motion core behind ExecuteMotion, and — for the model roles — a real HTTP server on
loopback speaking the chat-completions protocol (`support.chat_server`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from support.chat_server import ChatServer, Reply, message_parts

from mango.llm.openai_compat import OpenAICompatBackend, OpenAICompatConfig
from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.motor import MotorRoles, MotorSettings, run_motor_task
from mango.orchestrator.motor_vlm import VlmExecutor, VlmMemory, VlmMonitor, VlmVerifier
from mango.orchestrator.roles import ConversionError, MotionAction
from mango.orchestrator.schemas import EpisodeRecord
from mango.sim.env import as_scene
from mango.sim.faults import parse_fault

SCENE = "libero10_soup_sauce_basket"
WAIT = json.dumps({"assessment": "waiting", "done": False, "expect": "nothing changes",
                   "confidence": 0.5, "actions": [{"kind": "wait", "seconds": 0.3}]})


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer()
    yield s
    s.close()


def _backend(server: ChatServer, repairs: int = 0) -> OpenAICompatBackend:
    return OpenAICompatBackend(OpenAICompatConfig(
        base_url=server.url, model="test-model", api_key_env=None, structured="json_schema",
        repair_attempts=repairs, max_retries=0, timeout_s=30.0))


def _run(roles: MotorRoles | None = None, fault: str | None = None, horizon: float | None = None,
         settings: MotorSettings | None = None, scene: str = SCENE,
         instruction: str | None = None) -> tuple[Any, EpisodeRecord]:
    rec = EpisodeRecord()
    out = run_motor_task(as_scene(scene), 0, OrchestratorConfig(mode="motor", monitor="oracle",
                                                                horizon_s=horizon),
                         parse_fault(fault) if fault else None, instruction=instruction,
                         record=rec, roles=roles, settings=settings)
    return out, rec


def _lines(rec: EpisodeRecord, kind: str, **match: Any) -> list[dict[str, Any]]:
    return [ln for ln in rec.lines if ln["record"] == kind
            and all(ln.get(k) == v for k, v in match.items())]


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(message_parts(m)[0] for m in body["messages"])


def test_motor_completes_the_task_and_recovers_a_drop(server: ChatServer) -> None:
    """Offline executor, monitor, planner and memory on the whole task; the drop strikes in
    the first carry. The oracle monitor's STOP ends the batch at the next command boundary,
    the measured release settles that attempt without asking the verifier, and the task still
    completes (the rules re-grasp from perception). The verifier is a model that never answers
    in time, so every other verdict is the rules' and each late answer is discarded."""
    def late(_body: dict[str, Any]) -> Reply:
        return Reply(content=json.dumps({"outcome": "done", "reason": "late"}), delay=1.0)

    server.default = late
    roles = MotorRoles(verifier=VlmVerifier(_backend(server)))
    out, rec = _run(roles, fault="drop@0.5", settings=MotorSettings(verifier_timeout_s=0.05))
    assert len(_lines(rec, "fault")) == 1
    attempt = next(ln["attempt"] for ln in _lines(rec, "alert", level="stop"))
    motion = _lines(rec, "motion", attempt=attempt)[0]
    # the carry was [forward, right]: the STOP during the first leaves the second unexecuted
    assert motion["status"] == "cancelled"
    assert motion["executed"] == 1 < motion["total"]
    assert len(motion["displacement_mm"]) == 1 and motion["displacement_mm"][0] > 50
    verifies = [d for d in out.decisions if d["role"] == "verifier"]
    (settled,) = [d for d in verifies if d["settled_by"] == "measurement"]
    assert settled["attempt"] == attempt and settled["rule"] == "verify.measured_release"
    assert settled["decider"] == "measurement"
    # every other attempt asked the model; the measured one did not
    assert len(server.requests) == len(verifies) - 1
    assert all("no answer in" in d["reason"] for d in verifies if d is not settled)
    assert [s["outcome"] for s in out.subgoals] == ["completed", "completed"]
    assert out.success and out.verdict["verdict"] == "pass"
    assert out.world["recovered"] >= 1 and out.world["unrecovered"] == 0


def _rules(out: Any) -> list[str]:
    return [d["rule"] for d in out.decisions if d["role"] == "executor"]


def _completed(rec: EpisodeRecord, step: str) -> bool:
    return any(ln["kind"] == "completed" and ln["detail"] == f"oracle step {step}"
               for ln in _lines(rec, "signal"))


def test_motor_turns_a_knob_on() -> None:
    """The stove's knob, gripped from above and turned about z past its threshold: the oracle
    monitor completes the step (its device on) and the verifier takes its word."""
    out, rec = _run(scene="libero10_stove_moka", instruction="turn on the stove")
    rules = _rules(out)
    assert "executor.go_over_knob" in rules and "executor.grip_turn_knob" in rules
    assert _completed(rec, "1") and out.success
    assert out.states[-1].devices["flat_stove_1"].on
    assert not _lines(rec, "alert", level="stop")


def test_motor_puts_the_bowl_in_the_drawer_and_pushes_it_shut() -> None:
    """The release over the drawer's exposed part (not the cabinet's middle, under its top),
    then closed fingers pushed along the drawer's closing axis: the scene's whole task passes
    the fine-grained oracle."""
    out, rec = _run(scene="libero10_bowl_drawer")
    rules = _rules(out)
    assert "executor.push_drawer_closed" in rules
    assert _completed(rec, "1") and _completed(rec, "2")
    assert out.success and out.verdict["verdict"] == "pass"
    assert out.states[-1].joints["white_cabinet_1_bottom_region"].openness <= 0.05


def test_motor_slides_the_mug_into_the_microwave_and_sweeps_its_door_shut() -> None:
    """A side grasp along the microwave's opening (its top is closed), the mug slid in and
    let go, the hand turned down again, then the door swept shut in short arcs from its
    measured angle: the scene's whole task passes the fine-grained oracle."""
    out, rec = _run(scene="libero10_mug_microwave")
    rules = _rules(out)
    for rule in ("executor.tilt_hand_level", "executor.slide_close_lift",
                 "executor.slide_in_release", "executor.hand_down",
                 "executor.sweep_door_closed"):
        assert rule in rules, rule
    assert rules.count("executor.sweep_door_closed") >= 5  # short arcs, each from a fresh look
    assert _completed(rec, "1") and _completed(rec, "2")
    assert out.success and out.verdict["verdict"] == "pass"


def test_schema_and_conversion_errors_go_back_to_the_proposer(server: ChatServer) -> None:
    server.push(
        Reply(content=json.dumps({"assessment": "x", "done": False, "expect": "y",
                                  "confidence": 2.5, "actions": []})),  # schema: confidence
        Reply(content=json.dumps({"assessment": "x", "done": False, "expect": "y",
                                  "confidence": 0.5,
                                  "actions": [{"kind": "move", "direction": "up"}]})),  # no mm
        Reply(content=json.dumps({"assessment": "x", "done": False, "expect": "up 3 cm",
                                  "confidence": 0.5,
                                  "actions": [{"kind": "move", "direction": "up", "mm": 30}]})))
    server.default = lambda _body: Reply(content=WAIT)
    roles = MotorRoles(executor=VlmExecutor(_backend(server)))
    _out, rec = _run(roles, horizon=0.5)
    rejected = _lines(rec, "proposal_rejected", attempt=1)
    assert [r["try_"] for r in rejected] == [0, 1]
    assert "confidence" in rejected[0]["problem"]
    assert "action 0 (move): 'mm' is required" in rejected[1]["problem"]
    prompts = [_prompt(r.body) for r in server.requests[:3]]
    assert "could not be executed" not in prompts[0]
    assert "confidence" in prompts[1] and "'mm' is required" in prompts[2]
    motions = _lines(rec, "motion", attempt=1)
    assert motions[0]["executed"] == 1 and abs(motions[0]["displacement_mm"][0] - 30) < 3


def test_a_late_monitor_or_verifier_answer_of_an_ended_attempt_is_discarded(
        server: ChatServer) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        text = _prompt(body)
        if "You are the Executor" in text:  # a short batch: the attempt ends before 2.5 s
            return Reply(content=WAIT)
        if "You are the Monitor" in text:
            return Reply(content=json.dumps({"alerts": [
                {"level": "stop", "reason": "late", "detail": "too late"}]}), delay=2.5)
        return Reply(content=json.dumps({"outcome": "done", "reason": "late verdict"}),
                     delay=2.5)

    server.default = answer
    backend = _backend(server)
    roles = MotorRoles(executor=VlmExecutor(backend), monitor=VlmMonitor(backend),
                       verifier=VlmVerifier(backend))
    out, rec = _run(roles, horizon=0.5, settings=MotorSettings(verifier_timeout_s=0.3))
    deadline = time.monotonic() + 8.0
    while time.monotonic() < deadline and not (_lines(rec, "alert_discarded")
                                               and _lines(rec, "verdict_discarded")):
        time.sleep(0.1)
    assert _lines(rec, "alert_discarded", attempt=1, reason="late")
    assert _lines(rec, "verdict_discarded", attempt=1, outcome="done")
    assert not _lines(rec, "alert", reason="late")  # never acted on
    first = _lines(rec, "motion", attempt=1)[0]
    assert first["status"] == "succeeded" and first["executed"] == first["total"]
    verdict = next(d for d in out.decisions if d["role"] == "verifier" and d["attempt"] == 1)
    assert verdict["outcome"] == "progress" and "no answer" in verdict["reason"]
    assert out.subgoals[0]["orchestrator"] != "completed"


def test_memory_never_blocks_the_next_attempt(server: ChatServer) -> None:
    notes = iter([Reply(content=json.dumps({"note": "note A"})),
                  Reply(content=json.dumps({"note": "note B"}), delay=6.0)])

    def answer(body: dict[str, Any]) -> Reply:
        if "You keep the task memory" in _prompt(body):
            return next(notes, Reply(content=json.dumps({"note": "later"})))
        return Reply(content=WAIT)

    server.default = answer
    backend = _backend(server)
    roles = MotorRoles(executor=VlmExecutor(backend), memory=VlmMemory(backend))
    _out, rec = _run(roles, horizon=2.0)
    starts = [(i, ln) for i, ln in enumerate(rec.lines) if ln["record"] == "attempt_start"]
    for i, ln in starts:  # each attempt reads the latest note completed before it started
        done = [n for n in rec.lines[:i] if n["record"] == "memory_note"]
        assert ln["memory_seq"] == (done[-1]["seq"] if done else 0)
    # note 2 (submitted after attempt 2) takes 6 s: every later attempt started without it
    later = [ln for _i, ln in starts if ln["attempt"] >= 3]
    assert len(later) >= 2
    assert all(ln["memory_seq"] <= 1 and ln["memory_pending"] >= 1 for ln in later)
    on_a = [ln for ln in later if ln["memory_seq"] == 1]
    assert on_a, "no attempt planned on the completed note A"
    asked = [r for r in server.requests if "You are the Executor" in _prompt(r.body)]
    prompt = _prompt(asked[on_a[0]["attempt"] - 1].body)  # one request per attempt here
    assert "note A" in prompt and "note B" not in prompt


def test_the_model_roles_are_shown_before_and_now(server: ChatServer) -> None:
    """The executor sees the subgoal's start (BEFORE, once something moved) and NOW, the
    verifier the batch's start and its end, the monitor the attempt's start and the camera
    at the images' rate: PNG (or JPEG) data URLs of the configured size, as the `vlm`
    decider's."""
    # the hand starts above the front camera's view: the batch brings it into the picture
    down = json.dumps({"assessment": "lower", "done": False, "expect": "the hand in view",
                       "confidence": 0.5,
                       "actions": [{"kind": "move", "direction": "forward", "mm": 150},
                                   {"kind": "move", "direction": "down", "mm": 120}]})

    def answer(body: dict[str, Any]) -> Reply:
        text = _prompt(body)
        if "You are the Executor" in text:
            return Reply(content=down)
        if "You are the Monitor" in text:
            return Reply(content=json.dumps({"alerts": []}))
        return Reply(content=json.dumps({"outcome": "progress", "reason": "it moved"}))

    server.default = answer
    backend = _backend(server)
    size = (160, 120)
    roles = MotorRoles(executor=VlmExecutor(backend, size), verifier=VlmVerifier(backend, size),
                       monitor=VlmMonitor(backend, size, "jpeg"))
    rec = EpisodeRecord()
    run_motor_task(as_scene(SCENE), 0, OrchestratorConfig(
        mode="motor", monitor="oracle", horizon_s=4.0, vlm_monitor_hz=2.0), record=rec,
        roles=roles, settings=MotorSettings(verifier_timeout_s=10.0))
    seen: dict[str, list[list[tuple[str, Any]]]] = {"Executor": [], "Verifier": [],
                                                    "Monitor": []}
    for r in server.requests:
        text, images = message_parts(r.body["messages"][-1])
        role = next(k for k in seen if f"You are the {k}" in text)
        assert ("Camera images follow" in text) == bool(images)
        assert all(img.shape == (size[1], size[0], 3) for _, img in images)
        urls = [p["image_url"]["url"] for p in r.body["messages"][-1]["content"]
                if p["type"] == "image_url"] if images else []
        fmt = "data:image/jpeg" if role == "Monitor" else "data:image/png"
        assert all(u.startswith(fmt) for u in urls)
        if images:
            seen[role].append(images)
    ex, ver, mon = seen["Executor"], seen["Verifier"], seen["Monitor"]
    assert len(ex) >= 2 and len(ver) >= 1 and mon

    def moved(a: Any, b: Any) -> bool:
        """The arm shows elsewhere: pixels that changed a lot (not a codec's noise)."""
        return int((np.abs(a.astype(int) - b.astype(int)).max(axis=2) > 60).sum()) > 15

    # the subgoal's start: NOW only; then BEFORE is that image, NOW shows the arm moved
    assert [label for label, _ in ex[0]] == ["NOW"]
    assert [label for label, _ in ex[1]] == ["BEFORE", "NOW"]
    assert not moved(ex[1][0][1], ex[0][0][1]) and moved(ex[1][1][1], ex[0][0][1])
    # the verifier: the batch's start (the executor's NOW) and its end
    assert [label for label, _ in ver[0]] == ["BEFORE", "NOW"]
    assert not moved(ver[0][0][1], ex[0][0][1]) and moved(ver[0][1][1], ver[0][0][1])
    # the monitor: the attempt's start, and the camera while the batch runs
    assert all([label for label, _ in m] in (["NOW"], ["BEFORE", "NOW"]) for m in mon)
    assert any(len(m) == 2 and moved(m[1][1], m[0][1]) for m in mon)


def test_the_vlm_decider_puts_the_model_in_every_motor_role(server: ChatServer) -> None:
    """`--mode motor --decider vlm` is the model in the roles, not the rules under its name:
    the executor, monitor and verifier are asked (with the camera), and the record names the
    model as the one that proposed and judged."""
    def answer(body: dict[str, Any]) -> Reply:
        text = _prompt(body)
        if "You are the Executor" in text:
            return Reply(content=WAIT)
        if "You are the Monitor" in text:
            return Reply(content=json.dumps({"alerts": []}))
        if "You are the Verifier" in text:
            return Reply(content=json.dumps({"outcome": "progress", "reason": "waiting"}))
        return Reply(content=json.dumps({"note": "nothing happened yet"}))

    server.default = answer
    rec = EpisodeRecord()
    run_motor_task(as_scene(SCENE), 0, OrchestratorConfig(
        mode="motor", monitor="oracle", decider="vlm", model="test-model", horizon_s=2.0,
        image_size=(160, 120), backend_opts=(("base_url", server.url), ("api_key_env", ""),
                                             ("max_retries", "0"))),
        record=rec, settings=MotorSettings(verifier_timeout_s=10.0))
    roles = {next(k for k in ("Executor", "Monitor", "Verifier", "memory")
                  if k in _prompt(r.body)) for r in server.requests}
    assert {"Executor", "Monitor", "Verifier"} <= roles
    proposals = _lines(rec, "decision", role="executor")
    assert proposals and all(d["decider"] == "vlm" and d.get("rule") is None
                             for d in proposals)


def test_actions_convert_to_motion_commands_or_name_the_field() -> None:
    cmd = MotionAction(kind="rotate", axis="z", direction="cw", degrees=30).to_command(0)
    assert cmd.kind == "rotate" and cmd.axis == (0.0, 0.0, 1.0) and cmd.angle_deg == -30
    cmd = MotionAction(kind="move", direction="left", mm=12).to_command(0)
    assert cmd.direction == (0.0, 1.0, 0.0) and cmd.distance_mm == 12
    assert MotionAction(kind="gripper", gripper="width", width_mm=40).to_command(0).width == 0.04
    with pytest.raises(ConversionError, match="action 3 \\(rotate\\): 'degrees' is required"):
        MotionAction(kind="rotate", axis="z", direction="ccw").to_command(3)
    with pytest.raises(ConversionError, match="direction must be cw or ccw"):
        MotionAction(kind="rotate", axis="z", direction="up", degrees=5).to_command(0)
