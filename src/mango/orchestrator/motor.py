"""Mode `motor` (MotorMind's roles) in the embedded sim: plan, propose a short batch of
mid-level motions, execute it through the motion core, monitor in the background, verify,
remember.

The controller (`motor_control`) is `control.ArmController.run_motion` — the code behind
`ExecuteMotion` — on a backend that plays trajectories through the loop's stepper. Each attempt
(one batch) has its own monitoring context and thread (`motor_workers.AttemptMonitor`); the
verifier's answer is awaited for `verifier_timeout_s` at most, and a measured lost grasp or
release settles the outcome before any verifier is asked. The memory writer condenses each
assessment in a thread of its own. What the roles see is built by `motor_observe`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mango.control.motion import MotionCommand
from mango.control.robot import load_robot
from mango.errors import InputError
from mango.oracle.world_state import WorldState
from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.loop import Orchestrator, TaskOutcome
from mango.orchestrator.motor_control import EnvMotionBackend, MotorController
from mango.orchestrator.motor_observe import MotorObserver
from mango.orchestrator.motor_vlm import VlmExecutor, VlmMemory, VlmMonitor, VlmPlanner, VlmVerifier
from mango.orchestrator.motor_workers import AttemptMonitor, MemoryWriter, sync_at_boundary
from mango.orchestrator.ports import SimPort
from mango.orchestrator.roles import (
    ActionBatch,
    Alert,
    ExecutorRole,
    Measured,
    MemoryRole,
    MonitorRole,
    MonitorView,
    Observation,
    OfflineExecutor,
    OfflineMemory,
    OfflineMonitor,
    OfflinePlanner,
    OfflineVerifier,
    PlannerRole,
    Verdict,
    VerifierRole,
    measure_grip,
    settled_by_measurement,
)
from mango.orchestrator.schemas import EpisodeRecord, Subgoal
from mango.policy.kinematics import make_kinematics
from mango.sim.faults import Fault, FaultInjector


@dataclass
class MotorRoles:
    """One implementation per role (offline rules by default)."""

    planner: PlannerRole = field(default_factory=OfflinePlanner)
    executor: ExecutorRole = field(default_factory=OfflineExecutor)
    monitor: MonitorRole = field(default_factory=OfflineMonitor)
    verifier: VerifierRole = field(default_factory=OfflineVerifier)
    memory: MemoryRole = field(default_factory=OfflineMemory)

    @classmethod
    def for_decider(cls, config: OrchestratorConfig, backend: Any) -> MotorRoles:
        """The roles the run's decider names, on its backend: the rules (`offline`); a model
        in every role, the looking ones shown the camera (`vlm`); or the local text model
        revising the plan while the rules do the rest (`local`, as in VoLo's loop)."""
        if config.decider == "offline":
            return cls()
        size, fmt = config.image_size, config.image_format
        planner = VlmPlanner(backend)
        planner.name = config.decider
        if config.decider == "local":
            return cls(planner=planner)
        return cls(planner=planner, executor=VlmExecutor(backend, size, fmt),
                   monitor=VlmMonitor(backend, size, fmt),
                   verifier=VlmVerifier(backend, size, fmt), memory=VlmMemory(backend))


@dataclass(frozen=True)
class MotorSettings:
    """Bounds of one motor episode."""

    proposal_retries: int = 2  # schema/conversion errors sent back to the proposer
    max_failures: int = 3  # failed attempts per subgoal before it is given up
    max_attempts: int = 40  # attempts per subgoal
    verifier_timeout_s: float = 20.0  # wall: a verifier answer later than this is discarded
    monitor_sync_s: float = 1.0  # wall: how long a boundary waits for a synchronous monitor


# ---------------------------------------------------------------------- the loop


class MotorOrchestrator(Orchestrator):
    """One motor-mode episode: the roles around `ExecuteMotion`-style batches."""

    def __init__(self, *args: Any, roles: MotorRoles | None = None,
                 settings: MotorSettings | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.fault is not None and self.fault.kind != "drop":
            raise InputError(f"fault {self.fault}: mode motor runs no VLA; of the faults only "
                             "drop applies to its motions (the hand lets go while carrying)",
                             field="fault")
        if not isinstance(self.port, SimPort):
            raise InputError("mode motor runs on the embedded sim (its controller steps the "
                             "physics)", field="mode")
        # the motor loop steps the physics itself, one control period per trajectory row
        self.env, self.prims, self.halt_tool = self.port.env, self.port.prims, \
            self.port.halt_tool
        # the decider opened the model's backend (and checked its options); the roles share it
        self.roles = roles or MotorRoles.for_decider(self.cfg,
                                                     getattr(self.decider, "backend", None))
        self.settings = settings or MotorSettings()
        self.motion_kinematics = make_kinematics(load_robot("fr3"))
        self.base = np.asarray(self.env.robot_base_pose()[0], float)
        self._monitor_ctx: AttemptMonitor | None = None
        self._expect_holding: bool | None = None
        self._next_view = 0.0
        self._seen: Observation | None = None  # the last observation (reused if nothing moved)
        self._subgoal_rgb: dict[str, np.ndarray] = {}  # the camera at each subgoal's start
        self._attempt_rgb: np.ndarray | None = None  # at the attempt's start (looking monitor)
        self._next_image = 0.0

    def _step(self, row: np.ndarray) -> WorldState:
        """One control period: truth, verdict and monitor see it (maybe an interrupt)."""
        self.env.step(row)
        state = self.env.world_state()
        self._observe(state)
        return state

    def _step_quiet(self, row: np.ndarray) -> WorldState:
        """One control period only truth and verdict see (the settling after the task)."""
        self.env.step(row)
        state = self.env.world_state()
        self._feed(state)
        return state

    # -- the clock: every period feeds the attempt's monitoring context at the monitor rate
    def _motor_step(self, row: np.ndarray) -> WorldState:
        state = self._step(row)
        ctx = self._monitor_ctx
        if ctx is not None and state.t + 1e-9 >= self._next_view:
            self._next_view = state.t + 1.0 / self.cfg.monitor_hz
            sigs, self._queued = list(self._queued), []
            rgb = None
            if self._attempt_rgb is not None and state.t + 1e-9 >= self._next_image:
                self._next_image = state.t + 1.0 / self.cfg.vlm_monitor_hz
                rgb = self.port.camera_image()
            ctx.post(MonitorView(
                t=state.t, attempt=ctx.attempt, subgoal=self._active.id if self._active else "",
                signals=tuple((s.kind, s.reason, s.detail) for s in sigs),
                width=self.env.gripper_width(), width_cmd=self.backend.width_cmd,
                expect_holding=self._expect_holding, hand_z=float(self.env.hand_pose()[0][2]),
                table_z=self.scene.table.height, rgb_now=rgb, rgb_before=self._attempt_rgb))
        return state

    def _observation(self, sg: Subgoal, memory: str) -> Observation:
        return self.observer.observe(sg, memory, self.backend.width_cmd, self._done_now(),
                                     self.states[-1])

    def _propose(self, obs: Observation, attempt: int, k: int, feedback: str | None
                 ) -> tuple[ActionBatch | None, list[MotionCommand], str | None]:
        """Ask the executor once: (batch, its commands, None) or (…, why it cannot run)."""
        ex = self.roles.executor
        t0 = time.perf_counter()
        try:
            batch = ex.propose(obs, feedback)
            commands = batch.commands()
        except Exception as exc:  # the backend's schema failure, or a conversion error
            return None, [], f"{type(exc).__name__}: {exc}"
        self._decision("executor", ex.name, batch.rule, "propose", time.perf_counter() - t0,
                       obs.summary(), attempt=attempt, try_=k,
                       **batch.model_dump(exclude={"rule"}))
        return batch, commands, None

    def _reject(self, attempt: int, k: int, problem: str, batch: ActionBatch | None) -> str:
        """A proposal that cannot run goes back to the proposer with the reason."""
        self.record.write("proposal_rejected", self.env.time, role="executor",
                          decider=self.roles.executor.name, attempt=attempt, try_=k,
                          problem=problem,
                          batch=batch.model_dump() if batch is not None else None)
        return (f"Your previous proposal could not be executed: {problem}. Answer again "
                "with a corrected batch.")

    def _execute(self, batch: ActionBatch, commands: list[MotionCommand], attempt: int
                 ) -> tuple[Measured, list[Alert]]:
        """Run a batch under its own monitoring context (opened and closed here)."""
        self._expect_holding = batch.expect_holding
        if getattr(self.roles.monitor, "wants_images", False):
            self._attempt_rgb = self.port.camera_image()
            self._next_image = self.env.time
        mon = AttemptMonitor(attempt, self.roles.monitor, self.record,
                             self.controller.stop_at_boundary, lambda: self.env.time)
        self._monitor_ctx = mon
        self._next_view = self.env.time
        sync = self.settings.monitor_sync_s if getattr(
            self.roles.monitor, "synchronous", False) else 0.0
        try:
            if commands:
                measured, _ = self.controller.execute(
                    commands, lambda _i: sync_at_boundary(mon, sync))
            else:
                measured = Measured(0, 0, "succeeded", "nothing to run")
            sync_at_boundary(mon, sync)
        finally:
            self._monitor_ctx = None
            self._attempt_rgb = None
            alerts = mon.end()
        return measured, alerts

    def _decision(self, role: str, decider: str, rule: str | None, action: str,
                  latency: float, inputs: dict[str, Any], **data: Any) -> None:
        from mango.orchestrator.schemas import digest

        line = self.record.write("decision", self.env.time, role=role, decider=decider,
                                 rule=rule, action=action, tool="motion",
                                 subgoal=self._active.id if self._active else None,
                                 latency_s=round(latency, 6), inputs_digest=digest(inputs),
                                 **data)
        self.decisions.append(line)

    def _verify(self, obs: Observation, batch: ActionBatch, measured: Measured,
                alerts: list[Alert], attempt: int) -> Verdict:
        """A measured lost grasp or release settles it; else the verifier, awaited at most
        `verifier_timeout_s` (a later answer is discarded)."""
        settled = settled_by_measurement(obs, measured)
        if settled is not None:
            return settled
        role = self.roles.verifier
        box: dict[str, Any] = {}
        done = threading.Event()
        ended = threading.Event()

        def ask() -> None:
            try:
                box["v"] = role.verify(obs, batch, measured, alerts)
            except Exception as exc:
                box["e"] = f"{type(exc).__name__}: {exc}"
            done.set()
            if ended.is_set() and "v" in box:
                self.record.write("verdict_discarded", self.env.time, attempt=attempt,
                                  verifier=role.name, **box["v"].model_dump())

        threading.Thread(target=ask, daemon=True, name=f"motor-verifier-{attempt}").start()
        if done.wait(self.settings.verifier_timeout_s) and "v" in box:
            v: Verdict = box["v"]
            return v
        ended.set()
        if done.is_set() and "v" in box:  # answered between the wait and now
            return box["v"]  # type: ignore[no-any-return]
        fallback = OfflineVerifier().verify(obs, batch, measured, alerts)
        why = box.get("e", f"no answer in {self.settings.verifier_timeout_s:g} s")
        return fallback.model_copy(update={"reason": f"{fallback.reason} (verifier: {why})"})

    # -- the episode
    def run(self) -> TaskOutcome:
        from mango.oracle.tracker import StepTracker
        from mango.orchestrator.events import detector_for
        from mango.orchestrator.loop import _NullTracker
        from mango.orchestrator.planning import make_plan

        wall0 = time.perf_counter()
        state = self.env.reset(self.seed)
        self.t_start = state.t
        self.horizon = state.t + (self.cfg.horizon_s or 2.0 * self.scene.horizon)
        self.detector = detector_for(self.scene)
        self.verdict_tracker = StepTracker(self.oracle) if self.oracle is not None else \
            _NullTracker()
        self._queued = []
        self._tool_name = "motion"
        drop_at = None
        if self.fault is not None:
            inj = FaultInjector(self.scene, self.fault)  # refuses a fault the task cannot have
            drop_at = self.fault.when if inj.fault is not None else None
        self.backend = EnvMotionBackend(self, self._motor_step, self.motion_kinematics, drop_at)
        self.controller = MotorController(self.backend, self.motion_kinematics)
        r = self.controller.robot
        self.observer = MotorObserver(self.scene, self.env, self.prims, self.motion_kinematics,
                                      self.base, (float(r.position_lower[6]),
                                                  float(r.position_upper[6])),
                                      self.cfg.monitor != "none")
        self.plan = make_plan(self.scene, self.instruction, state, self.oracle)
        self.monitor = self._make_monitor()
        t0 = time.perf_counter()
        planned = self.roles.planner.plan(self.plan)
        self.record.write("plan", state.t, decider=self.roles.planner.name,
                          rule="plan.from_oracle" if self.plan.source.startswith("oracle")
                          else "plan.from_instruction", criteria={
                              m.subgoal.id: m.criterion for m in planned},
                          latency_s=round(time.perf_counter() - t0, 6), **self.plan.model_dump())
        self._observe(state)
        memory = MemoryWriter(self.roles.memory, self.record, lambda: self.env.time)
        by_id = {s.id: s for s in self.plan.subgoals}
        queue_ids = [s.id for s in self.plan.subgoals]
        outcomes: dict[str, str] = {}
        failures: dict[str, int] = {}
        tries: dict[str, int] = {}
        attempt = 0
        aborted: str | None = None
        try:
            while queue_ids and self.env.time < self.horizon and aborted is None:
                sg = by_id[queue_ids[0]]
                self._active = sg
                tries[sg.id] = tries.get(sg.id, 0) + 1
                if tries[sg.id] > self.settings.max_attempts:
                    outcomes[sg.id] = "gave_up"
                    queue_ids.pop(0)
                    continue
                attempt += 1
                seq, note, pending = memory.latest()  # never waits for a note in progress
                self.record.write("attempt_start", self.env.time, attempt=attempt,
                                  subgoal=sg.id, memory_seq=seq, memory_pending=pending)
                batch, measured, alerts, verdict = self._attempt(sg, attempt, note)
                memory.submit({"attempt": attempt, "subgoal": sg.id,
                               "outcome": verdict.outcome, "reason": verdict.reason,
                               "batch": [a.describe() for a in batch.actions] if batch else [],
                               "measured": measured.__dict__,
                               "alerts": [a.model_dump() for a in alerts]})
                if verdict.outcome == "done":
                    outcomes[sg.id] = "completed"
                    queue_ids.pop(0)
                    continue
                if verdict.outcome == "progress":
                    continue
                failures[sg.id] = failures.get(sg.id, 0) + 1
                if failures[sg.id] > self.settings.max_failures:
                    outcomes[sg.id] = "failed"
                    queue_ids.pop(0)
                    continue
                queue_ids = self._revise(queue_ids, sg, verdict, memory, attempt)
            else:
                for sid in queue_ids:
                    outcomes.setdefault(sid, "timed_out")
        finally:
            self._monitor_ctx = None
            memory.close()
        self._active = None
        self.halt_tool.run(1.0, self.backend._width_out(), self._step_quiet)
        return self._outcome(outcomes, aborted, time.perf_counter() - wall0)

    def _attempt(self, sg: Subgoal, attempt: int, note: str
                 ) -> tuple[ActionBatch | None, Measured, list[Alert], Verdict]:
        """One attempt: propose, execute under its own monitoring context, verify."""
        obs = self._seen if self._seen is not None and self._seen.t == self.env.time and \
            self._seen.subgoal.id == sg.id else self._observation(sg, note)
        obs.memory = note
        if obs.rgb_now is not None:
            obs.rgb_before = self._subgoal_rgb.setdefault(sg.id, obs.rgb_now)
        feedback: str | None = None
        batch: ActionBatch | None = None
        measured = Measured(0, 0, "rejected", "no executable proposal")
        alerts: list[Alert] = []
        for k in range(self.settings.proposal_retries + 1):
            batch, commands, problem = self._propose(obs, attempt, k, feedback)
            if problem is None and batch is not None:
                measured, alerts = self._execute(batch, commands, attempt)
                # the controller plans the whole batch before it moves: a refusal is news
                # for the proposer, not an outcome
                if measured.status != "rejected":
                    break
                problem = measured.message
            feedback = self._reject(attempt, k, problem or "", batch)
            batch = None
        if batch is None:
            verdict = Verdict(outcome="failed", reason="no executable proposal",
                              rule="verify.no_proposal")
            self._seen = obs
            return None, measured, alerts, verdict
        held_before = obs.holding
        self._width = self.backend._width_out()
        after = self._observation(sg, note)
        after.rgb_before = obs.rgb_now
        self._seen = after
        measure_grip(measured, held_before, after)
        self.record.write("motion", self.env.time, attempt=attempt, subgoal=sg.id,
                          commands=[a.describe() for a in batch.actions],
                          **measured.__dict__)
        t0 = time.perf_counter()
        verdict = self._verify(after, batch, measured, alerts, attempt)
        self._decision("verifier", self.roles.verifier.name if
                       verdict.settled_by != "measurement" else "measurement",
                       verdict.rule, "verify", time.perf_counter() - t0,
                       after.summary(), attempt=attempt,
                       **verdict.model_dump(exclude={"rule"}))
        if self.backend.dropped_t is not None and self.backend.drop_at is not None:
            self.record.write("fault", self.backend.dropped_t, fault=str(self.fault),
                              note="the hand let go while carrying")
            self.backend.drop_at = None
        return batch, measured, alerts, verdict

    def _revise(self, queue_ids: list[str], sg: Subgoal, verdict: Verdict,
                memory: MemoryWriter, attempt: int) -> list[str]:
        """The planner revises the unfinished plan: only original subgoals not yet done."""
        _seq, note, _pending = memory.latest()
        unfinished = [s for s in queue_ids if s not in self._done_now()]
        t0 = time.perf_counter()
        planner = self.roles.planner
        try:
            rev = planner.revise(self.plan, unfinished, sg.id, verdict.reason, note)
            problem = None if set(rev.remaining) <= set(unfinished) and rev.remaining else (
                f"remaining {rev.remaining} is not a non-empty subset of the unfinished "
                f"{unfinished}")
        except Exception as exc:
            rev, problem = None, f"{type(exc).__name__}: {exc}"
        if problem is not None or rev is None:
            self.record.write("decision_rejected", self.env.time, role="planner",
                              decider=planner.name, problem=problem)
            rev = OfflinePlanner().revise(self.plan, unfinished, sg.id, verdict.reason, note)
        self._decision("planner", planner.name, rev.rule, "revise", time.perf_counter() - t0,
                       {"unfinished": unfinished, "failed": sg.id, "why": verdict.reason,
                        "memory": note}, attempt=attempt, remaining=rev.remaining,
                       reason=rev.reason)
        return list(rev.remaining)



def run_motor_task(scene: Any, seed: int, config: Any, fault: Fault | None = None,
                   instruction: str | None = None, record: EpisodeRecord | None = None,
                   roles: MotorRoles | None = None,
                   settings: MotorSettings | None = None) -> TaskOutcome:
    """One motor-mode episode, start to end."""
    orch = MotorOrchestrator(scene, seed, config, fault, instruction, record, roles=roles,
                             settings=settings)
    try:
        return orch.run()
    finally:
        orch.close()
