"""The orchestration loop (VoLo's phases): plan; monitor & route; halt and recover; one
episode at a time, on a robot port (`ports`: the embedded sim, or the ROS stack through the
orchestrator node): one routing implementation for both.

Every world state a tool sees goes through `_observe`, which feeds it to the ground-truth
detector (the run's measured truth), the verdict tracker and the monitor, and reads the
monitor context at its rate. A signal stops the running tool at that boundary; the arm is
then held still (`halt`) while the decider deliberates — for at least `halt_settle_s` and for
as long as the decision took — and the decision is carried out. A `cancel()` from outside
stops the task at the next boundary, the arm held. Every plan, signal, world event, decision
and tool run is a line of the JSONL episode record.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mango.oracle.model import FineGrainedOracle, load_oracle
from mango.oracle.predicates import StateView, Thresholds, p_in, p_on
from mango.oracle.symbolic import SymbolicOracle
from mango.oracle.tracker import StepTracker
from mango.oracle.world_state import EntityState, WorldState
from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.deciders import (
    DecisionContext,
    Perceived,
    decision_problem,
)
from mango.orchestrator.events import WorldFailureDetector, detector_for
from mango.orchestrator.failures import Reaction, classify, reactions
from mango.orchestrator.liveness import ToolServerLost
from mango.orchestrator.monitors import GroundTruthMonitor, Monitor, NoMonitor, OracleMonitor
from mango.orchestrator.planning import make_plan, subgoal_texts
from mango.orchestrator.ports import RobotPort, SimPort, TaskCancelled, at_rest
from mango.orchestrator.schemas import Decision, EpisodeRecord, Plan, Signal, Subgoal, digest
from mango.orchestrator.tools import Interrupted, ToolResult
from mango.orchestrator.vlm import PlanRequest, VlmMonitor, make_decider
from mango.orchestrator.world import PhysicsWorld, WorldSource
from mango.primitives.runner import MIN_HELD_WIDTH
from mango.sim.faults import Fault
from mango.sim.runner import load_oracle_json
from mango.sim.scene import SceneSpec


@dataclass
class Halt:
    """One safe idle: when it was asked for, when the hand came to rest, how still it held."""

    t_request: float
    t_halted: float | None = None
    t_end: float | None = None
    max_joint_speed: float = 0.0  # rad/s, over the deliberation (after settling)
    signal: str = ""


@dataclass
class TaskOutcome:
    """The result of one orchestrated episode (commands.md §4 and the measurements)."""

    scene: str
    seed: int
    fault: str | None
    plan: Plan
    success: bool
    subgoals: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    world: dict[str, Any]  # the ground-truth events and spells
    verdict: dict[str, Any] | None
    halts: list[Halt]
    t_end: float
    wall_s: float
    states: list[WorldState] = field(default_factory=list)
    aborted: str | None = None
    t_start: float = 0.0  # robot time at the episode's first state
    cancelled: bool = False
    failure_classes: dict[str, int] = field(default_factory=dict)  # K.2 counts (failures)
    findings: list[dict[str, Any]] = field(default_factory=list)  # one per K.2 occurrence
    reactions: list[Reaction] = field(default_factory=list)  # world failure -> arm halted

    def to_json(self) -> dict[str, Any]:
        minutes = max(self.t_end - self.t_start, 1e-9) / 60.0
        return {
            "success": self.success,
            "subgoals": self.subgoals,
            "decisions": len(self.decisions),
            "events": self.world["events"],
            "recovered": self.world["recovered"],
            "unrecovered": self.world["unrecovered"],
            "wall_s": round(self.wall_s, 3),
            "pp_per_min": round((100.0 if self.success else 0.0) / minutes, 3),
            "verdict": self.verdict,
            "scene": self.scene, "seed": self.seed, "fault": self.fault,
            "robot_s": round(self.t_end - self.t_start, 3),
            "aborted": self.aborted,
            "failure_classes": self.failure_classes,
            "reactions": [r.to_json() for r in self.reactions],
        }


class Orchestrator:
    """One orchestrated episode on a robot port: by default the embedded sim (the expert as
    its VLA, optionally faulted); `port` puts it on another robot (the ROS stack)."""

    def __init__(self, scene: SceneSpec, seed: int, config: OrchestratorConfig,
                 fault: Fault | None = None, instruction: str | None = None,
                 record: EpisodeRecord | None = None, port: RobotPort | None = None,
                 max_decisions: int | None = None) -> None:
        self.scene, self.seed, self.cfg = scene, seed, config
        self.fault = fault
        self.instruction = instruction
        self.record = record or EpisodeRecord()
        self.decider = make_decider(config.decider, config)  # first: it checks its options
        self.port: RobotPort = port if port is not None else SimPort(scene, seed, fault,
                                                                     world=config.world)
        # what the oracle and the monitor believe: the physics, or a perception estimate
        self.world: WorldSource = getattr(self.port, "world", None) or PhysicsWorld()
        self.max_decisions = max_decisions
        self._cancel = threading.Event()
        data, path = load_oracle_json(scene)
        self.oracle: FineGrainedOracle | None = (
            load_oracle(data, file=str(path)) if data is not None else None)
        self.states: list[WorldState] = []
        self.halts: list[Halt] = []
        self.decisions: list[dict[str, Any]] = []
        self._active: Subgoal | None = None
        self._tool_running = False
        self._next_poll = 0.0
        self._halt: Halt | None = None
        self._prev_hand: np.ndarray | None = None
        self._prev_q: np.ndarray | None = None
        self._prev_t: float | None = None
        self._hand_hist: list[tuple[float, np.ndarray]] = []
        self._completed_t: float | None = None
        self._last_perceived: Perceived | None = None
        self._before: dict[str, np.ndarray] = {}  # camera image at each subgoal's start

    # ------------------------------------------------------------------ the clock
    def cancel(self) -> None:
        """Stop the task at the next boundary (any thread): the running tool is stopped and
        the arm held; the outcome says `cancelled`."""
        self._cancel.set()

    def _feed(self, state: WorldState) -> WorldState:
        """Truth and verdict see every state; each new world event is a record line."""
        self.states.append(state)
        for ev in self.detector.update(state):
            data = ev.to_json()
            data.pop("t", None)
            self.record.write("world_event", ev.t, **data)
        seen = self.world.observe(state)  # what the oracle and the monitor believe
        self.verdict_tracker.update(seen)
        return seen

    def _observe(self, state: WorldState) -> None:
        """A world state arrived (a control period): feed truth, verdict and monitor; maybe
        interrupt the running tool, or stop for a cancel."""
        seen = self._feed(state)
        self.monitor.update(seen)
        hand = np.asarray(state.objects["robot_hand"].position) if "robot_hand" in \
            state.objects else None
        q = self.port.joint_positions()
        dt = state.t - self._prev_t if self._prev_t is not None and \
            state.t > self._prev_t else self.port.dt
        self._prev_t = state.t
        if hand is not None:
            self._hand_hist.append((state.t, hand))
            if len(self._hand_hist) > 4000:
                del self._hand_hist[:2000]
        h = self._halt
        if h is not None and hand is not None and self._prev_hand is not None:
            if h.t_halted is None and at_rest(self._prev_hand, hand, dt):
                h.t_halted = state.t
            elif h.t_halted is not None and self._prev_q is not None:
                qd = float(np.max(np.abs(q - self._prev_q))) / dt
                h.max_joint_speed = max(h.max_joint_speed, qd)
        self._prev_hand, self._prev_q = hand, q
        if self._cancel.is_set():
            raise TaskCancelled("the task was cancelled")
        # half a period of slack: robot time is a float sum of physics steps, so a poll due
        # "now" can read a hair late and, at the control rate, would wait a whole period
        if state.t + 0.5 * self.port.dt >= self._next_poll:
            self._next_poll = state.t + 1.0 / self.cfg.monitor_hz
            signals = self.monitor.poll(state.t, self._active, self._tool_running)
            for s in signals:
                self.record.write("signal", s.t, **s.model_dump(exclude={"t"}))
            self._queued.extend(signals)
            active = self._active.id if self._active else None
            for x in signals:
                if x.kind == "completed" and x.subgoal == active:
                    self._completed_t = state.t
            urgent = [x for x in self._queued if x.kind == "failure"]
            # a completion lets the tool finish its own motion (a retreat from the knob);
            # one still running `finish_grace_s` later is stopped and routed on
            late = self._completed_t is not None and \
                state.t - self._completed_t >= self.cfg.finish_grace_s
            if self._tool_running and (urgent or late):
                sigs, self._queued = list(self._queued), []
                raise Interrupted(sigs)

    _tool_name: str = ""

    # ------------------------------------------------------------------ perception
    def _hand_travel(self, window: float) -> float:
        if not self._hand_hist:
            return 0.0
        t_end = self._hand_hist[-1][0]
        pts = [p for t, p in self._hand_hist if t >= t_end - window]
        return float(sum(np.linalg.norm(b - a) for a, b in itertools.pairwise(pts)))

    def _hand_height_at(self, t: float | None) -> float | None:
        """The hand's height above the table when a signal's event happened (FK history)."""
        if t is None or not self._hand_hist:
            return None
        best = min(self._hand_hist, key=lambda e: abs(e[0] - t))
        return float(best[1][2] - self.scene.table.height)

    def _perceive(self, sg: Subgoal, signal_t: float | None = None) -> Perceived:
        """What the decider may know: detections from the tools' camera and perception
        backend, the hand from proprioception (FK), the measured gripper width."""
        movable = [e for e in self.scene.entities if e.movable]
        phrases = {e.id: (e.description or " ".join(w for w in e.id.split("_")
                                                    if not w.isdigit())) for e in movable}
        place = sg.destination_phrase or ""
        dest_phrase = place.split(" the ", 1)[1] if " the " in place else None
        asked = list(dict.fromkeys([*phrases.values(), *([dest_phrase] if dest_phrase else [])]))
        found, _ = self.port.detect(asked)
        hand = self.port.hand_position()
        width = self.port.gripper_width()
        held = None
        if width > MIN_HELD_WIDTH and self.port.commanded_width() < 0.07:
            best = math.inf
            for eid, ph in phrases.items():
                det = found.get(ph)
                if det is None:
                    continue
                d = float(np.linalg.norm(np.asarray(det.centroid) - hand))
                if d < best and d < 0.07:
                    best, held = d, det.entity_id or eid
        obj = found.get(phrases.get(sg.object or "", "")) if sg.object in phrases else None
        dest = found.get(dest_phrase) if dest_phrase else None
        at_dest = None
        if obj is not None and dest is not None and sg.relation in ("in", "on"):
            # the oracle's own relation on the perceived boxes (one implementation)
            view = StateView(WorldState(t=self.port.time, objects={
                "obj": _box(obj), "dest": _box(dest)}), Thresholds())
            at_dest = (p_in if sg.relation == "in" else p_on)(view, "obj", "dest")
        moved = None
        if obj is not None and sg.object in self.plan.initial_scene:
            p0 = self.plan.initial_scene[sg.object]
            moved = float(math.dist(obj.centroid[:2], p0[:2]))
        self._last_perceived = Perceived(held=held, gripper_width=width,
                         object_position=tuple(obj.centroid) if obj else None,  # type: ignore[arg-type]
                         destination_position=tuple(dest.centroid) if dest else None,  # type: ignore[arg-type]
                         object_at_destination=at_dest, object_moved_m=moved,
                         table_height=self.scene.table.height,
                         hand_travel_m=self._hand_travel(self.cfg.no_progress_s),
                         hand_height_at_signal=self._hand_height_at(signal_t))
        return self._last_perceived

    # ------------------------------------------------------------------ phases
    def _make_monitor(self) -> Monitor:
        if self.cfg.monitor == "oracle":
            if self.oracle is None:
                from mango.errors import InputError

                raise InputError(f"scene {self.scene.name} has no fine-grained oracle for the "
                                 "oracle monitor", field="monitor")
            return OracleMonitor(self.oracle, self.plan, self.cfg.no_progress_s)
        if self.cfg.monitor == "gt":
            return GroundTruthMonitor(self.detector, self.plan)
        if self.cfg.monitor == "vlm":
            shared = self.decider.backend if getattr(self.decider, "wants_images", False) \
                else None  # type: ignore[attr-defined]
            return VlmMonitor(self.cfg, self.plan, self._camera_image, shared)
        return NoMonitor()

    def _camera_image(self) -> np.ndarray:
        """The tools' camera now (what a model decider or monitor is shown)."""
        return self.port.camera_image()

    def _model_context(self, ctx: DecisionContext) -> None:
        """What only a model decider reads: BEFORE/NOW images, recent decisions, history."""
        if getattr(self.decider, "wants_images", False):
            now = self._camera_image()
            before = self._before.setdefault(ctx.active.id, now)
            ctx.images = {"before": before, "now": now}
        ctx.recent = self.decisions[-5:]
        kinds = ("signal", "tool_start", "tool_end", "halt", "decision_rejected")
        ctx.history = [{k: v for k, v in ln.items() if k != "inputs"}
                       for ln in self.record.lines[-60:] if ln["record"] in kinds][-12:]

    def _decide(self, ctx: DecisionContext) -> Decision:
        if self.cfg.decider != "offline":
            self._model_context(ctx)
        t0 = time.perf_counter()
        d = self.decider.decide(ctx)
        latency = time.perf_counter() - t0
        meta = dict(getattr(self.decider, "last_meta", None) or {"decider": self.decider.name})
        who = meta.pop("decider")
        d = Decision.model_validate(d.model_dump())  # the schema every decider answers in
        problem = decision_problem(d, self.plan, self.cfg.spec)
        t = self.port.time
        if self.max_decisions is not None and len(self.decisions) >= self.max_decisions:
            d = Decision(phase=d.phase, action="abort", subgoal=d.subgoal,
                         rule="loop.step_budget",
                         reason=f"the step budget ({self.max_decisions} decisions) is spent")
        elif problem is not None:
            self.record.write("decision_rejected", t, decider=who, **meta,
                              problem=problem, **d.model_dump())
            d = Decision(phase=d.phase, action="abort", subgoal=d.subgoal,
                         rule="loop.decision_rejected", reason=problem)
        line = self.record.write("decision", t, decider=who, **meta,
                                 latency_s=round(latency, 6),
                                 inputs_digest=digest(ctx.digest_input()),
                                 inputs=ctx.digest_input(), **d.model_dump())
        self.decisions.append(line)
        self._latency = latency
        return d

    @staticmethod
    def _rested(h: Halt, rest_t: float | None) -> None:
        """A port that samples the hand finer than its states timed the rest more closely."""
        if rest_t is not None and (h.t_halted is None or rest_t < h.t_halted):
            h.t_halted = rest_t

    def _hold_and_decide(self, ctx: DecisionContext, why: str) -> Decision:
        """Safe idling: hold the arm still, then deliberate (the arm stays held meanwhile)."""
        self._tool_running = False
        self._tool_name = "halt"
        h = Halt(t_request=self.port.time, signal=why)
        self._halt = h
        self.record.write("halt", h.t_request, reason=why)
        self._rested(h, self.port.hold(self.cfg.halt_settle_s, self._observe))
        ctx.perceived = self._perceive(ctx.active, ctx.signal.t if ctx.signal else None)
        d = self._decide(ctx)
        # the world went on while the decider thought: hold for that long too
        self._rested(h, self.port.hold(max(self.port.dt, self._latency), self._observe))
        h.t_end = self.port.time
        self.halts.append(h)
        self._halt = None
        return d

    def _run_tool(self, d: Decision, sg: Subgoal, held: str | None,
                  resume: bool = False) -> ToolResult:
        budget = self.horizon
        self._tool_running = True
        self._tool_name = d.tool
        self._completed_t = None
        self.monitor.reset_progress_clock(self.port.time)
        self.record.write("tool_start", self.port.time, tool=d.tool, subgoal=sg.id,
                          instruction=d.instruction)
        try:
            if d.tool == "vla":
                res = self.port.run_vla(d.instruction or sg.instruction, self._observe, budget,
                                        resume=resume)
            elif d.tool == "grasp":
                res = self.port.grasp(sg, held, self._observe)
            elif d.tool == "place":
                res = self.port.place(sg, held, self._observe)
            else:
                res = ToolResult("noop", "done", "nothing to run")
        except ToolServerLost as exc:
            self.record.write("tool_end", self.port.time, tool=d.tool, status="lost",
                              message=exc.message, subgoal=sg.id)
            raise
        finally:
            self._tool_running = False
        self.record.write("tool_end", self.port.time, tool=res.tool, status=res.status,
                          message=res.message, subgoal=sg.id)
        ended = getattr(self.monitor, "tool_ended", None)
        if ended is not None:  # a monitor that samples (vlm) looks when a tool stops
            ended(self.port.time, sg)
        return res

    def run(self) -> TaskOutcome:
        wall0 = time.perf_counter()
        state = self.port.start(self.seed)  # a new episode: the VLA's fault is armed
        self.t_start = state.t
        self.horizon = state.t + (self.cfg.horizon_s or 2.0 * self.scene.horizon)
        self.detector: WorldFailureDetector = detector_for(self.scene)
        self.verdict_tracker = StepTracker(self.oracle) if self.oracle is not None else \
            _NullTracker()
        self._queued: list[Signal] = []
        self.plan = make_plan(self.scene, self.instruction, state, self.oracle)
        plan_meta: dict[str, Any] = {"decider": "offline", "rule": "plan.from_oracle"
                                     if self.plan.source.startswith("oracle")
                                     else "plan.from_instruction"}
        if hasattr(self.decider, "plan"):  # a model writes the plan; the rules' is its check
            image = self._camera_image() if getattr(self.decider, "wants_images", False) \
                else None
            self.plan, plan_meta = self.decider.plan(PlanRequest(  # type: ignore[attr-defined]
                self.scene, self.plan.instruction, state, self.oracle, self.plan, image))
        self.record.write("plan", state.t, **plan_meta, **self.plan.model_dump())
        self.monitor = self._make_monitor()
        by_id = {s.id: s for s in self.plan.subgoals}
        queue = [s.id for s in self.plan.subgoals]
        outcomes: dict[str, str] = {}
        attempts: dict[str, int] = {}
        spent: dict[str, set[str]] = {}  # recovery tools that did not help, per subgoal
        self._spent = spent
        try:
            self._observe(state)
            self._route(by_id, queue, outcomes, attempts, spent)
        except TaskCancelled:
            self.cancelled = True
            self._tool_running = False
            self.record.write("cancelled", self.port.time, subgoal=self._active.id
                              if self._active else None)
            if self._active is not None:
                outcomes.setdefault(self._active.id, "cancelled")
            self._aborted = "cancelled"
        except ToolServerLost as exc:
            # a dead server is not retried: the task ends here, naming it
            self._tool_running = False
            self.record.write("server_lost", self.port.time, server=exc.server,
                              message=exc.message,
                              subgoal=self._active.id if self._active else None)
            if self._active is not None:
                outcomes.setdefault(self._active.id, "aborted")
            self._aborted = exc.message
        aborted = self._aborted
        self._active = None
        self._tool_name = "halt"
        # let the world settle so a last release is judged (the arm is held: a controller
        # that went away holds nothing, and the world is watched all the same)
        with contextlib.suppress(ToolServerLost):
            self.port.hold(1.0, self._feed)
        return self._outcome(outcomes, aborted, time.perf_counter() - wall0)

    cancelled = False
    _aborted: str | None = None

    def _route(self, by_id: dict[str, Subgoal], queue: list[str], outcomes: dict[str, str],
               attempts: dict[str, int], spent: dict[str, set[str]]) -> None:
        """Monitor & route, recover: subgoal by subgoal until the queue, the time or the
        decider ends it (`_aborted` says why it was aborted)."""
        aborted = None
        while queue and self.port.time < self.horizon and aborted is None:
            sg = by_id[queue[0]]
            self._active = sg
            rewrites = subgoal_texts(self.scene, sg.expert_step)[0]
            ctx = self._ctx("route", sg, "start", attempts, rewrites)
            d = self._decide(ctx)
            last_instruction = None
            last_res: ToolResult | None = None
            while self.port.time < self.horizon:
                if d.action == "next_subgoal":
                    outcomes[sg.id] = "completed" if sg.id in self._done_now() else "advanced"
                    queue.pop(0)
                    break
                if d.action == "abort":
                    aborted = self._aborted = d.reason or "aborted"
                    outcomes[sg.id] = "aborted"
                    break
                if d.action == "replan":
                    queue[:] = list(d.remaining or [])
                    outcomes.setdefault(sg.id, "replanned")
                    break
                held = self._perceived_held()
                resume = d.action == "continue" and d.tool == "vla" and last_res is not None \
                    and last_res.tool == "vla" and last_res.status == "interrupted"
                if d.tool == "vla" and not resume:
                    last_instruction = d.instruction or sg.instruction
                res = self._run_tool(d, sg, held, resume)
                last_res = res
                if d.action in ("grasp_tool", "place_tool") and (
                        res.status != "succeeded" or (d.action == "place_tool"
                        and sg.id not in self._done_now())):
                    spent.setdefault(sg.id, set()).add(d.action)
                sigs = res.signals or []
                if not sigs and self._queued:
                    sigs, self._queued = list(self._queued), []
                failures = [x for x in sigs if x.kind == "failure"]
                mine = [x for x in sigs if x.kind == "completed" and x.subgoal == sg.id]
                sig = failures[0] if failures else (mine[0] if mine else None)
                done = sg.id in self._done_now()
                if not failures and (mine or (done and res.status != "interrupted")):
                    ctx = self._ctx("route", sg, "signal" if mine else "tool_ended", attempts,
                                    rewrites, sig, res)
                    d = self._decide(ctx)
                    continue
                ok = res.status in ("done", "succeeded")
                if not failures and ok and (self.cfg.monitor == "none" or (
                        res.tool == "grasp" and res.status == "succeeded")):
                    ctx = self._ctx("route", sg, "tool_ended", attempts, rewrites, sig, res)
                    ctx.perceived = self._perceive(sg)
                    d = self._decide(ctx)
                    continue
                if not failures and res.status == "interrupted":
                    # stopped for news that needs no halt (another subgoal's completion)
                    ctx = self._ctx("route", sg, "signal", attempts, rewrites,
                                    sigs[0] if sigs else None, res, running=True)
                    d = self._decide(ctx)
                    last_res = res
                    continue
                why = sig.reason if sig is not None else (
                    f"{res.tool} {res.status}" if not ok else
                    f"{res.tool} ended, subgoal {sg.id} incomplete")
                ctx = self._ctx("recovery", sg, "signal" if sig else "tool_ended", attempts,
                                rewrites, sig, res, running=res.status == "interrupted")
                ctx.last_instruction = last_instruction
                d = self._hold_and_decide(ctx, why)
                if d.action != "next_subgoal" and not (d.action == "continue"
                                                        and ctx.tool_running):
                    attempts[sg.id] = attempts.get(sg.id, 0) + 1  # a false alarm is none
            else:
                outcomes.setdefault(sg.id, "timed_out")
                break

    def _done_now(self) -> set[str]:
        return self.monitor.completed()

    def _perceived_held(self) -> str | None:
        """What the last decision point perceived in the hand (a tool that takes another
        object lets this one go first); nothing held when the gripper has closed on air."""
        p = self._last_perceived
        if p is None or self.port.gripper_width() <= MIN_HELD_WIDTH:
            return None
        return p.held

    def _ctx(self, phase: str, sg: Subgoal, event: str, attempts: dict[str, int],
             rewrites: list[str], sig: Signal | None = None, res: ToolResult | None = None,
             running: bool = False) -> DecisionContext:
        return DecisionContext(
            phase=phase, plan=self.plan, active=sg, mode=self.cfg.spec, event=event,
            signal=sig, tool=res.tool if res else None, tool_status=res.status if res else None,
            tool_running=running, completed=self._done_now(),
            monitored=self.cfg.monitor != "none", attempts=attempts.get(sg.id, 0),
            max_attempts=self.cfg.max_recoveries, rewrites=rewrites,
            spent_tools=set(self._spent.get(sg.id, set())))

    def _outcome(self, outcomes: dict[str, str], aborted: str | None,
                 wall: float) -> TaskOutcome:
        final = self.states[-1]
        steps = [s.expert_step for s in self.plan.subgoals]
        success = all(self.detector.holds(k) for k in steps)
        if success and self.instruction in (None, "", self.scene.instruction):
            success = SymbolicOracle(self.scene.goal).holds(final)
        subgoals = [{"instruction": s.instruction,
                     "outcome": "completed" if self.detector.holds(s.expert_step)
                     else outcomes.get(s.id, "not_started"),
                     "orchestrator": outcomes.get(s.id, "not_started")}
                    for s in self.plan.subgoals]
        verdict = self.verdict_tracker.finish().to_json() if self.oracle is not None else None
        world = self.detector.summary()
        # the K.2 classes read the record up to and with this result (what it believed)
        counts, findings = classify([*self.record.lines, {
            "record": "result", "t": final.t, "subgoals": subgoals, "aborted": aborted}],
            world, success)
        self.record.write("result", final.t, success=success, subgoals=subgoals, world=world,
                          verdict=verdict, aborted=aborted, failure_classes=counts,
                          findings=findings)
        signals = [x for x in self.record.lines if x["record"] == "signal"]
        return TaskOutcome(self.scene.name, self.seed, str(self.fault) if self.fault else None,
                           self.plan, success, subgoals, self.decisions, world, verdict,
                           self.halts, final.t, wall, self.states, aborted, self.t_start,
                           self.cancelled, counts, findings,
                           reactions(world["events"], signals, self.halts))

    def close(self) -> None:
        for part in (getattr(self, "monitor", None), self.decider):
            close = getattr(part, "close", None)
            if callable(close):
                close()  # a model backend (and a llama.cpp server it owns)
        self.port.close()
        self.record.close()


def _box(det: Any) -> EntityState:
    """A detection as a world-state entity (its axis-aligned world box)."""
    return EntityState(position=tuple(det.centroid), size=tuple(det.size),
                       orientation=(1.0, 0.0, 0.0, 0.0))


class _NullTracker:
    def update(self, state: WorldState) -> list[Any]:
        return []


def run_task(scene: SceneSpec, seed: int, config: OrchestratorConfig,
             fault: Fault | None = None, instruction: str | None = None,
             record: EpisodeRecord | None = None) -> TaskOutcome:
    """One orchestrated episode, start to end."""
    if config.spec.executor == "motion":  # its loop lives above this one (`motor`)
        from mango.errors import InputError

        raise InputError("mode motor runs MotorMind's roles: call "
                         "mango.orchestrator.runs.run_episode", field="mode")
    orch = Orchestrator(scene, seed, config, fault, instruction, record)
    try:
        return orch.run()
    finally:
        orch.close()
