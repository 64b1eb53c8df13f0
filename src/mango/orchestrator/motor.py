"""Mode `motor` (MotorMind's roles) in the embedded sim: plan, propose a short batch of
mid-level motions, execute it through the motion core, monitor in the background, verify,
remember.

The controller is `control.ArmController.run_motion` — the code behind `ExecuteMotion` — on
`EnvMotionBackend`, a control backend that plays trajectories through the loop's stepper (so
the ground truth, the verdict tracker and the oracle monitor see every control period). A stop
is `GoalSlot.cancel(at_boundary=True)`, as a cancel of an `ExecuteMotion` goal is.

Each attempt (one batch) has its own `AttemptMonitor`: a thread that reads the monitor's short
context and posts alerts; once the attempt has ended its context is closed, and an answer
that comes later is recorded as discarded, never acted on. The verifier's answer is awaited
for `verifier_timeout_s` at most, and a measured lost grasp or release settles the outcome
before any verifier is asked. `MemoryWriter` condenses each assessment in a thread of its own;
planning reads its latest completed note and never waits for one in progress.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mango.control.controller import SETTLE_TOL, ArmController
from mango.control.goals import GoalSlot
from mango.control.joint_state import Measured as JointMeasured
from mango.control.motion import MotionCommand
from mango.control.robot import load_robot
from mango.control.trajectory import JointTrajectory
from mango.errors import InputError
from mango.geometry import quat_to_mat
from mango.oracle.predicates import StateView, Thresholds, p_in, p_on
from mango.oracle.world_state import EntityState, WorldState
from mango.orchestrator.loop import Orchestrator, TaskOutcome
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
from mango.primitives.planning import GRIPPER_OPEN
from mango.primitives.runner import MIN_HELD_WIDTH
from mango.sim.faults import Fault, FaultInjector

Stepper = Callable[[np.ndarray], WorldState]


@dataclass
class MotorRoles:
    """One implementation per role (offline rules by default)."""

    planner: PlannerRole = field(default_factory=OfflinePlanner)
    executor: ExecutorRole = field(default_factory=OfflineExecutor)
    monitor: MonitorRole = field(default_factory=OfflineMonitor)
    verifier: VerifierRole = field(default_factory=OfflineVerifier)
    memory: MemoryRole = field(default_factory=OfflineMemory)


@dataclass(frozen=True)
class MotorSettings:
    """Bounds of one motor episode."""

    proposal_retries: int = 2  # schema/conversion errors sent back to the proposer
    max_failures: int = 3  # failed attempts per subgoal before it is given up
    max_attempts: int = 40  # attempts per subgoal
    verifier_timeout_s: float = 20.0  # wall: a verifier answer later than this is discarded
    monitor_sync_s: float = 1.0  # wall: how long a boundary waits for a synchronous monitor


# ---------------------------------------------------------------------- controller


class EnvMotionBackend:
    """`ControlBackend` on a `SimEnv`: trajectories played one control period at a time through
    the loop's stepper (the sim is its own clock: no wall-time pacing). `drop` (a fault of the
    motion tool, as the VLA's) opens the hand part way through the first carry."""

    def __init__(self, orch: Orchestrator, step: Stepper, kinematics: Any,
                 drop_at: float | None = None) -> None:
        self.env, self.step, self.kinematics = orch.env, step, kinematics
        self.width_cmd = GRIPPER_OPEN
        self.drop_at = drop_at
        self.dropped_t: float | None = None
        self.forced_open = False  # the drop fault holds the hand open until a gripper command
        self.commands: list[MotionCommand] = []  # the batch being executed, and which command
        self.index = 0

    def measured(self) -> JointMeasured:
        # the finger joints can read a hair past the full opening: the width is clamped
        width = min(max(self.env.gripper_width(), 0.0), GRIPPER_OPEN)
        return JointMeasured(self.env.joint_positions(), width, time.monotonic(), self.env.time)

    def prepare(self, traj: JointTrajectory, start: JointMeasured) -> JointTrajectory:
        return traj  # played as given, like the sim backend

    def _width_out(self) -> float:
        return GRIPPER_OPEN if self.forced_open else self.width_cmd

    def hold(self) -> None:
        self.step(np.r_[self.env.joint_positions(), self._width_out()])

    def execute(self, traj: JointTrajectory, run: Any, on_point: Any) -> Any:
        from mango.control.goals import Outcome

        dt = self.env.dt
        q0, w0 = self.env.joint_positions(), self.width_cmd
        n = max(1, math.ceil(traj.duration / dt - 1e-9))
        drop_k = self._drop_row(traj, n)
        # an arm motion plans the gripper at its measured width: like the Franka Hand, whose
        # grasp holds until the next gripper command, the gripper keeps its last command then
        cmd = self.commands[self.index] if self.index < len(self.commands) else None
        keep = traj.gripper is None or cmd is None or not cmd.kind.startswith("gripper")
        for k in range(1, n + 1):
            if run.stop.is_set():
                self.hold()
                return Outcome(False, True, run.reason, k - 1)
            q, w = traj.sample(k * dt, q0, w0)
            if w is not None and not keep:
                self.width_cmd = float(w)
                self.forced_open = False  # a gripper command ends the fault's opening
            if drop_k is not None and k >= drop_k and not self.forced_open:
                self.forced_open = True  # the fault: the hand lets go, commanded closed
                self.dropped_t = self.env.time
            self.step(np.r_[q, self._width_out()])
        end = np.asarray(traj.positions[-1], float)
        for _ in range(round(1.0 / dt)):  # settle on the end (the controller measures there)
            if float(np.max(np.abs(self.env.joint_positions() - end))) <= SETTLE_TOL:
                break
            self.step(np.r_[end, self._width_out()])
        return Outcome(True, points_executed=len(traj))

    def _drop_row(self, traj: JointTrajectory, n: int) -> int | None:
        """The row at which a pending drop strikes: a carry (closed on something, the hand
        travelling ≥ 5 cm in the plane)."""
        if self.drop_at is None or self.dropped_t is not None:
            return None
        if self.width_cmd > 0.01 or self.env.gripper_width() <= MIN_HELD_WIDTH:
            return None
        kin = self.kinematics
        a, b = kin.fk(traj.positions[0])[0], kin.fk(traj.positions[-1])[0]
        if float(np.hypot(*(b - a)[:2])) < 0.05:
            return None
        return max(1, round(self.drop_at * n))


class MotorController:
    """MotorMind's controller: validates a batch (planned whole from the measured state before
    anything moves) and executes it through `ArmController.run_motion`; returns the measured
    motion per command."""

    def __init__(self, backend: EnvMotionBackend, kinematics: Any) -> None:
        self.robot = load_robot("fr3")
        self.backend = backend
        self.arm = ArmController(self.robot, kinematics, backend, backend.env.dt)
        self.slot = GoalSlot()
        self._handle: object | None = None

    def stop_at_boundary(self) -> None:
        """A STOP: the batch ends at its next command boundary (ExecuteMotion's cancel)."""
        handle = self._handle
        if handle is not None:
            self.slot.cancel(handle, at_boundary=True)

    def execute(self, commands: list[MotionCommand],
                on_command: Callable[[int], None]) -> tuple[Measured, list[np.ndarray]]:
        handle = object()
        run = self.slot.begin(handle)
        self._handle = handle
        p0 = self.arm.kinematics.fk(self.backend.env.joint_positions())[0]
        self.backend.commands, self.backend.index = list(commands), 0

        def boundary(i: int, _pose: Any) -> None:
            self.backend.index = i + 1
            on_command(i)

        try:
            res = self.arm.run_motion(run, lambda: commands, boundary)
        finally:
            self._handle = None
            self.slot.end(run)
        poses = [np.asarray(p, float) for p, _q in res.poses]
        prev, disp = p0, []
        for p in poses:
            disp.append(round(float(np.linalg.norm(p - prev)) * 1000.0, 1))
            prev = p
        status = {0: "succeeded", 1: "cancelled", 2: "cancelled", 3: "rejected", 4: "failed"}[
            int(res.status)]
        return Measured(executed=res.commands_executed, total=len(commands), status=status,
                        message=res.message, displacement_mm=disp,
                        widths_mm=[round(w * 1000.0, 2) for w in res.widths]), poses


# ---------------------------------------------------------------------- monitoring


class AttemptMonitor:
    """One attempt's monitoring context and the thread that reads it."""

    def __init__(self, attempt: int, role: MonitorRole, record: EpisodeRecord,
                 on_stop: Callable[[], None], now: Callable[[], float]) -> None:
        self.attempt, self.role, self.record = attempt, role, record
        self.on_stop, self.now = on_stop, now
        self.alerts: list[Alert] = []
        self.discarded = 0
        self._cond = threading.Condition()
        self._view: MonitorView | None = None
        self._signals: list[tuple[str, str, str]] = []
        self._posted = 0
        self._answered = 0
        self._ended = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"motor-monitor-{attempt}")
        self._thread.start()

    def post(self, view: MonitorView) -> None:
        with self._cond:
            self._signals.extend(view.signals)
            self._view = view
            self._posted += 1
            self._cond.notify_all()

    def sync(self, timeout: float) -> None:
        """Wait (at most `timeout` s) until every posted view has been assessed."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._answered < self._posted and not self._ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def end(self) -> list[Alert]:
        """The attempt is over: its context closes; what it heard stays with it."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()
            return list(self.alerts)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._view is None and not self._ended:
                    self._cond.wait()
                if self._view is None:
                    return
                view = MonitorView(**{**self._view.__dict__,
                                      "signals": tuple(self._signals)})
                posted = self._posted
                self._view, self._signals = None, []
            try:
                alerts = self.role.assess(view)
                error = None
            except Exception as exc:  # a model's failure is evidence, not a crash
                alerts, error = [], f"{type(exc).__name__}: {exc}"
            with self._cond:
                ended = self._ended
                if not ended:
                    self.alerts.extend(alerts)
                self._answered = posted
                self._cond.notify_all()
            t = self.now()
            if error is not None:
                self.record.write("monitor_error", t, attempt=self.attempt, error=error)
            for a in alerts:
                if ended:
                    self.discarded += 1
                    self.record.write("alert_discarded", t, attempt=self.attempt,
                                      monitor=self.role.name, **a.model_dump())
                    continue
                self.record.write("alert", t, attempt=self.attempt, monitor=self.role.name,
                                  **a.model_dump())
                if a.level == "stop":
                    self.on_stop()
            if ended:
                return


class MemoryWriter:
    """Condenses evidence in the background; `latest` never waits."""

    def __init__(self, role: MemoryRole, record: EpisodeRecord,
                 now: Callable[[], float]) -> None:
        self.role, self.record, self.now = role, record, now
        self._lock = threading.Lock()
        self._note = ""
        self._seq = 0  # of the latest completed note
        self._submitted = 0
        self._jobs: queue.Queue[tuple[int, dict[str, Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True, name="motor-memory")
        self._thread.start()

    def submit(self, evidence: dict[str, Any]) -> int:
        with self._lock:
            self._submitted += 1
            seq = self._submitted
        self._jobs.put((seq, evidence))
        return seq

    def latest(self) -> tuple[int, str, int]:
        """(seq of the latest completed note, its text, notes still being written)."""
        with self._lock:
            return self._seq, self._note, self._submitted - self._seq

    def close(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            seq, evidence = job
            with self._lock:
                previous = self._note
            try:
                note = self.role.condense(previous, evidence).note
            except Exception as exc:  # keep the last good note
                self.record.write("memory_error", self.now(), seq=seq,
                                  error=f"{type(exc).__name__}: {exc}")
                with self._lock:
                    self._seq = seq
                continue
            # recorded before it is published: an attempt that reads it comes after its line
            self.record.write("memory_note", self.now(), seq=seq, memory=self.role.name,
                              note=note)
            with self._lock:
                self._note, self._seq = note, seq


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
        self.roles = roles or MotorRoles()
        self.settings = settings or MotorSettings()
        self.motion_kinematics = make_kinematics(load_robot("fr3"))
        self.base = np.asarray(self.env.robot_base_pose()[0], float)
        self._monitor_ctx: AttemptMonitor | None = None
        self._expect_holding: bool | None = None
        self._next_view = 0.0
        self._seen: Observation | None = None  # the last observation (reused if nothing moved)

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
            ctx.post(MonitorView(
                t=state.t, attempt=ctx.attempt, subgoal=self._active.id if self._active else "",
                signals=tuple((s.kind, s.reason, s.detail) for s in sigs),
                width=self.env.gripper_width(), width_cmd=self.backend.width_cmd,
                expect_holding=self._expect_holding, hand_z=float(self.env.hand_pose()[0][2]),
                table_z=self.scene.table.height))
        return state

    def _observation(self, sg: Subgoal, memory: str) -> Observation:
        """Perception (the tools' camera and backend) and proprioception, in the world frame."""
        from mango.orchestrator.planning import entity_phrase

        others = [entity_phrase(self.scene, e.id) for e in self.scene.entities
                  if e.movable and e.id != sg.object and e.id != sg.destination]
        asked = [p for p in (sg.object_phrase, self._dest_phrase(sg)) if p]
        found, _ = self.prims.detect(list(dict.fromkeys(asked + others)))
        obj = found.get(sg.object_phrase or "")
        dest = found.get(self._dest_phrase(sg) or "")
        q = self.env.joint_positions()
        p, quat = self.motion_kinematics.fk(q)
        rot = quat_to_mat(quat)
        width, cmd = self.env.gripper_width(), self.backend.width_cmd
        at = None
        if obj is not None and dest is not None and sg.relation in ("in", "on"):
            view = StateView(WorldState(t=self.env.time, objects={
                "obj": _box(obj), "dest": _box(dest)}), Thresholds())
            at = (p_in if sg.relation == "in" else p_on)(view, "obj", "dest")
        lo, hi = self.robot_q7
        return Observation(
            t=self.env.time, subgoal=sg, hand=np.asarray(p, float) + self.base,
            opening_yaw=math.atan2(float(rot[1, 1]), float(rot[0, 1])), q7=float(q[6]),
            q7_range=(lo, hi), width=width, width_cmd=cmd,
            # commanded closed and stopped by something: not on air, not held open
            holding=cmd < 0.01 and MIN_HELD_WIDTH < width < GRIPPER_OPEN - 0.01, object_det=obj,
            destination_det=dest, at_destination=at, completed=self._done_now(),
            travel_z=self.prims.travel_z, table_z=self.scene.table.height, memory=memory,
            others=[d for p, d in found.items() if p not in asked],
            table_area=self.prims.executor.area, monitored=self.cfg.monitor != "none",
            frame=self.prims.last_frame)

    @staticmethod
    def _dest_phrase(sg: Subgoal) -> str | None:
        place = sg.destination_phrase or ""
        return place.split(" the ", 1)[1] if " the " in place else None

    @property
    def robot_q7(self) -> tuple[float, float]:
        r = self.controller.robot
        return float(r.position_lower[6]), float(r.position_upper[6])

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
        mon = AttemptMonitor(attempt, self.roles.monitor, self.record,
                             self.controller.stop_at_boundary, lambda: self.env.time)
        self._monitor_ctx = mon
        self._next_view = self.env.time
        sync = self.settings.monitor_sync_s if getattr(
            self.roles.monitor, "synchronous", False) else 0.0
        try:
            if commands:
                measured, _ = self.controller.execute(
                    commands, lambda _i: _sync_at_boundary(mon, sync))
            else:
                measured = Measured(0, 0, "succeeded", "nothing to run")
            _sync_at_boundary(mon, sync)
        finally:
            self._monitor_ctx = None
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


def _sync_at_boundary(mon: AttemptMonitor, timeout: float) -> None:
    """A command boundary: a synchronous monitor's answers are in before the next command."""
    if timeout:
        mon.sync(timeout)


def _box(det: Any) -> EntityState:
    return EntityState(position=tuple(det.centroid), size=tuple(det.size),
                       orientation=(1.0, 0.0, 0.0, 0.0))


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
