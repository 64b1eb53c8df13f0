"""The orchestration loop in the embedded sim (VoLo's phases): plan; monitor & route; halt and
recover; one episode at a time.

The loop owns the clock: every control period goes through `_step`, which feeds the world
state to the ground-truth detector (the run's measured truth), the verdict tracker and the
monitor, and reads the monitor context at its rate. A signal stops the running tool at that
boundary; the arm is then held still (`halt`) while the decider deliberates — for at least
`halt_settle_s` and for as long as the decision took — and the decision is carried out.
Every plan, signal, decision and tool run is a line of the JSONL episode record.
"""

from __future__ import annotations

import itertools
import math
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
    make_decider,
)
from mango.orchestrator.events import WorldFailureDetector, detector_for
from mango.orchestrator.failures import Reaction, classify, reactions
from mango.orchestrator.monitors import GroundTruthMonitor, Monitor, NoMonitor, OracleMonitor
from mango.orchestrator.planning import make_plan, subgoal_texts
from mango.orchestrator.schemas import Decision, EpisodeRecord, Plan, Signal, Subgoal, digest
from mango.orchestrator.tools import HaltTool, Interrupted, PrimitiveTools, ToolResult, VlaTool
from mango.orchestrator.world import ESTIMATED_CAMERAS, make_world, world_markers
from mango.perception.base import PerceptionConfig
from mango.perception.registry import make_backend
from mango.primitives.planning import GRIPPER_OPEN
from mango.primitives.runner import MIN_HELD_WIDTH, SimPrimitives
from mango.sim.env import SimEnv
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.faults import Fault
from mango.sim.runner import load_oracle_json
from mango.sim.scene import SceneSpec

HALTED_SPEED = 0.01  # m/s: the hand is "halted" below this


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
    failure_classes: dict[str, int] = field(default_factory=dict)  # K.2 counts (failures)
    findings: list[dict[str, Any]] = field(default_factory=list)  # one per K.2 occurrence
    reactions: list[Reaction] = field(default_factory=list)  # world failure -> arm halted

    def to_json(self) -> dict[str, Any]:
        minutes = max(self.t_end, 1e-9) / 60.0
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
            "robot_s": round(self.t_end, 3),
            "aborted": self.aborted,
            "failure_classes": self.failure_classes,
            "reactions": [r.to_json() for r in self.reactions],
        }


class Orchestrator:
    """One orchestrated episode on a `SimEnv` (the expert as its VLA, optionally faulted)."""

    def __init__(self, scene: SceneSpec, seed: int, config: OrchestratorConfig,
                 fault: Fault | None = None, instruction: str | None = None,
                 record: EpisodeRecord | None = None) -> None:
        self.scene, self.seed, self.cfg = scene, seed, config
        self.fault = fault
        self.instruction = instruction
        self.record = record or EpisodeRecord()
        markers = world_markers(scene, config.world)
        self.env = SimEnv(scene, seed=seed, cameras=("front",) if markers is None else
                          ESTIMATED_CAMERAS, image_size=(640, 480), markers=markers)
        self.world = make_world(self.env, config.world)
        self.policy = ExpertPolicy(scene, fault)
        self.decider = make_decider(config.decider)
        self.halt_tool = HaltTool(self.env)
        self.vla = VlaTool(self.env, self.policy)
        backend = make_backend(PerceptionConfig(backend="sim", scene=scene))
        self.prims = SimPrimitives(self.env, backend, on_state=self._observe)
        self.tools = PrimitiveTools(self.prims)
        data, path = load_oracle_json(scene)
        self.oracle: FineGrainedOracle | None = (
            load_oracle(data, file=str(path)) if data is not None else None)
        self.states: list[WorldState] = []
        self.halts: list[Halt] = []
        self.decisions: list[dict[str, Any]] = []
        self._width = GRIPPER_OPEN
        self._active: Subgoal | None = None
        self._tool_running = False
        self._next_poll = 0.0
        self._halt: Halt | None = None
        self._prev_hand: np.ndarray | None = None
        self._prev_q: np.ndarray | None = None
        self._hand_hist: list[tuple[float, np.ndarray]] = []
        self._completed_t: float | None = None
        self._last_perceived: Perceived | None = None

    # ------------------------------------------------------------------ the clock
    def _observe(self, state: WorldState) -> None:
        """One control period happened: feed truth, verdict and monitor; maybe interrupt."""
        self.states.append(state)
        self.detector.update(state)
        seen = self.world.observe(state)  # what the oracle and the monitor believe
        self.verdict_tracker.update(seen)
        self.monitor.update(seen)
        self._width = float(self.prims.width_cmd) if self._tool_name in ("grasp", "place") \
            else self._width
        hand = np.asarray(state.objects["robot_hand"].position) if "robot_hand" in \
            state.objects else None
        q = self.env.joint_positions()
        if hand is not None:
            self._hand_hist.append((state.t, hand))
            if len(self._hand_hist) > 4000:
                del self._hand_hist[:2000]
        h = self._halt
        if h is not None and hand is not None and self._prev_hand is not None:
            speed = float(np.linalg.norm(hand - self._prev_hand)) / self.env.dt
            if h.t_halted is None and speed < HALTED_SPEED:
                h.t_halted = state.t
            elif h.t_halted is not None and self._prev_q is not None:
                qd = float(np.max(np.abs(q - self._prev_q))) / self.env.dt
                h.max_joint_speed = max(h.max_joint_speed, qd)
        self._prev_hand, self._prev_q = hand, q
        # half a period of slack: robot time is a float sum of physics steps, so a poll due
        # "now" can read a hair late and, at the control rate, would wait a whole period
        if state.t + 0.5 * self.env.dt >= self._next_poll:
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

    def _step(self, row: np.ndarray) -> WorldState:
        self.env.step(row)
        if self._tool_name == "vla":
            self._width = float(row[7])
        state = self.env.world_state()
        self._observe(state)
        return state

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
        found, _ = self.prims.detect(asked)
        hand, _ = self.env.hand_pose()
        width = self.env.gripper_width()
        held = None
        if width > MIN_HELD_WIDTH and self._width < 0.07:
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
            view = StateView(WorldState(t=self.env.time, objects={
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
        return NoMonitor()

    def _decide(self, ctx: DecisionContext) -> Decision:
        t0 = time.perf_counter()
        d = self.decider.decide(ctx)
        latency = time.perf_counter() - t0
        d = Decision.model_validate(d.model_dump())  # the schema every decider answers in
        problem = decision_problem(d, self.plan, self.cfg.spec)
        t = self.env.time
        if problem is not None:
            self.record.write("decision_rejected", t, decider=self.decider.name,
                              problem=problem, **d.model_dump())
            d = Decision(phase=d.phase, action="abort", subgoal=d.subgoal,
                         rule="loop.decision_rejected", reason=problem)
        line = self.record.write("decision", t, decider=self.decider.name,
                                 latency_s=round(latency, 6),
                                 inputs_digest=digest(ctx.digest_input()),
                                 inputs=ctx.digest_input(), **d.model_dump())
        self.decisions.append(line)
        self._latency = latency
        return d

    def _hold_and_decide(self, ctx: DecisionContext, why: str) -> Decision:
        """Safe idling: hold the arm still, then deliberate (the arm stays held meanwhile)."""
        self._tool_running = False
        self._tool_name = "halt"
        h = Halt(t_request=self.env.time, signal=why)
        self._halt = h
        self.record.write("halt", h.t_request, reason=why)
        self.halt_tool.run(self.cfg.halt_settle_s, self._width, self._step)
        ctx.perceived = self._perceive(ctx.active, ctx.signal.t if ctx.signal else None)
        d = self._decide(ctx)
        # the world went on while the decider thought: hold for that long too
        self.halt_tool.run(max(self.env.dt, self._latency), self._width, self._step)
        h.t_end = self.env.time
        self.halts.append(h)
        self._halt = None
        return d

    def _run_tool(self, d: Decision, sg: Subgoal, held: str | None,
                  resume: bool = False) -> ToolResult:
        budget = self.horizon
        self._tool_running = True
        self._tool_name = d.tool
        self._completed_t = None
        self.monitor.reset_progress_clock(self.env.time)
        self.record.write("tool_start", self.env.time, tool=d.tool, subgoal=sg.id,
                          instruction=d.instruction)
        try:
            if d.tool == "vla":
                res = self.vla.run(d.instruction or sg.instruction, self._step, budget,
                                   resume=resume)
            elif d.tool == "grasp":
                res = self.tools.grasp(sg, held, self._width, self._step)
            elif d.tool == "place":
                res = self.tools.place(sg, held, self._width, self._step)
            else:
                res = ToolResult("noop", "done", "nothing to run")
        finally:
            self._tool_running = False
        self.record.write("tool_end", self.env.time, tool=res.tool, status=res.status,
                          message=res.message, subgoal=sg.id)
        return res

    def run(self) -> TaskOutcome:
        wall0 = time.perf_counter()
        state = self.env.reset(self.seed)
        self.horizon = self.cfg.horizon_s or 2.0 * self.scene.horizon
        self.policy.reset()  # a new episode: the fault is armed
        self.detector: WorldFailureDetector = detector_for(self.scene)
        self.verdict_tracker = StepTracker(self.oracle) if self.oracle is not None else \
            _NullTracker()
        self._queued: list[Signal] = []
        self.plan = make_plan(self.scene, self.instruction, state, self.oracle)
        self.record.write("plan", state.t, decider=self.decider.name, rule="plan.from_oracle"
                          if self.plan.source.startswith("oracle") else "plan.from_instruction",
                          **self.plan.model_dump())
        self.monitor = self._make_monitor()
        self._observe(state)
        by_id = {s.id: s for s in self.plan.subgoals}
        queue = [s.id for s in self.plan.subgoals]
        outcomes: dict[str, str] = {}
        aborted = None
        attempts: dict[str, int] = {}
        spent: dict[str, set[str]] = {}  # recovery tools that did not help, per subgoal
        self._spent = spent
        while queue and self.env.time < self.horizon and aborted is None:
            sg = by_id[queue[0]]
            self._active = sg
            rewrites = subgoal_texts(self.scene, sg.expert_step)[0]
            ctx = self._ctx("route", sg, "start", attempts, rewrites)
            d = self._decide(ctx)
            last_instruction = None
            last_res: ToolResult | None = None
            while self.env.time < self.horizon:
                if d.action == "next_subgoal":
                    outcomes[sg.id] = "completed" if sg.id in self._done_now() else "advanced"
                    queue.pop(0)
                    break
                if d.action == "abort":
                    aborted = d.reason
                    outcomes[sg.id] = "aborted"
                    break
                if d.action == "replan":
                    queue = list(d.remaining or [])
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
        self._active = None
        self._tool_name = "halt"
        # let the world settle so a last release is judged
        self.halt_tool.run(1.0, self._width, self._step_quiet)
        return self._outcome(outcomes, aborted, time.perf_counter() - wall0)

    def _step_quiet(self, row: np.ndarray) -> WorldState:
        self.env.step(row)
        state = self.env.world_state()
        self.states.append(state)
        self.detector.update(state)
        self.verdict_tracker.update(self.world.observe(state))
        return state

    def _done_now(self) -> set[str]:
        return self.monitor.completed()

    def _perceived_held(self) -> str | None:
        """What the last decision point perceived in the hand (a tool that takes another
        object lets this one go first); nothing held when the gripper has closed on air."""
        p = self._last_perceived
        if p is None or self.env.gripper_width() <= MIN_HELD_WIDTH:
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
                           self.halts, final.t, wall, self.states, aborted, counts, findings,
                           reactions(world["events"], signals, self.halts))

    def close(self) -> None:
        self.env.close()
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
    orch = Orchestrator(scene, seed, config, fault, instruction, record)
    try:
        return orch.run()
    finally:
        orch.close()
