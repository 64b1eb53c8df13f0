"""Oracle node: judges the live world state against a fine-grained oracle.

Subscribes `WorldState`; publishes a `StepVerdict` on every status change
(`/oracle/step_verdicts`, reliable + transient-local so late joiners and recorders get the
history), a `TaskVerdict` (`/oracle/task_verdict`) when the task passes or on `~/finish`, and
rviz markers (`/oracle/markers`). Services: `~/load_oracle`, `~/reset`, `~/finish`.
World time going backwards (a simulator reset) starts a new episode: tracking restarts.
A state that cannot be judged is skipped and said once per distinct problem, at most one line
a second (the rest counted), and the episode's problems summed up at its verdict.
Parameters: `oracle_file`, `functions_file`, `hold`, `world_state_topic`, `marker_rate`
(Hz, 0 = off), and the standard `use_sim_time`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from mango.bags.world_state_cdr import WorldStateDecoder
from mango.errors import InputError, ProblemLog
from mango.json_files import parse_json
from mango.nodes.common import (
    at_least,
    declare_parameters,
    latched_qos,
    rate_param,
    run_node,
    service_qos,
)
from mango.oracle import (
    EvaluationError,
    FunctionLibrary,
    StepTracker,
    TrackerEvent,
    WorldState,
    load_oracle,
    static_check,
)
from mango.oracle.tracker import REPORTED_KINDS
from mango.ros.markers import oracle_markers
from mango.ros.verdict_msg import step_verdict_cdr, task_verdict
from mango_ros.msg import StepVerdict, TaskVerdict
from mango_ros.msg import WorldState as WorldStateMsg
from mango_ros.srv import LoadOracle

PROBLEM_LINES_EVERY_S = 1.0  # stream problems: at most one log line a second per severity


class OracleNode(Node):
    def __init__(self) -> None:
        super().__init__("oracle_node")
        p = declare_parameters(self, {
            "oracle_file": "", "functions_file": "", "hold": at_least(1, 1),
            "world_state_topic": "/world_state", "marker_rate": rate_param(5.0, off_allowed=True),
        })
        functions = p["functions_file"]
        self.library = FunctionLibrary.load(functions) if functions else FunctionLibrary.default()
        self.hold = p["hold"]
        self.tracker: StepTracker | None = None
        self.instruction = ""
        self.last_state: WorldState | None = None
        self._task_published = False
        self._warned_no_oracle = False
        self._problems = ProblemLog()  # stream problems, each said once per episode
        self._held_back = 0  # problem lines the log throttle held back since the last said
        self._markers_dirty = False
        self._markers_t = 0.0
        self._decoder = WorldStateDecoder()

        self.step_pub = self.create_publisher(
            StepVerdict, "oracle/step_verdicts", latched_qos(1000))
        self.task_pub = self.create_publisher(
            TaskVerdict, "oracle/task_verdict", latched_qos(10))
        self.marker_pub = self.create_publisher(MarkerArray, "oracle/markers", 10)
        topic = p["world_state_topic"]
        # Raw CDR in, decoded once by the fast WorldState decoder (the hot path).
        self.create_subscription(
            WorldStateMsg, topic, self._on_state,
            QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE), raw=True)
        deep = service_qos()
        self.create_service(LoadOracle, "~/load_oracle", self._on_load, qos_profile=deep)
        self.create_service(Trigger, "~/reset", self._on_reset, qos_profile=deep)
        self.create_service(Trigger, "~/finish", self._on_finish, qos_profile=deep)
        rate = p["marker_rate"]
        if rate > 0:
            self.create_timer(1.0 / rate, self._publish_markers)

        path = p["oracle_file"]
        if path:
            ok, message, problems = self.load(path)
            if not ok:
                raise InputError(f"{message}: " + "; ".join(problems), file=path)
        self.get_logger().info(f"listening on {topic}")

    # ------------------------------------------------------------------ oracle lifecycle

    def load(self, source: str | dict) -> tuple[bool, str, list[str]]:
        """Check and load an oracle; a broken one is refused and the old one stays."""
        try:
            oracle = load_oracle(Path(source) if isinstance(source, str) else source)
        except InputError as exc:
            return False, "oracle not loaded", [str(exc)]
        problems = static_check(oracle, self.library, sample_state=self.last_state)
        if problems:
            return False, f"oracle not loaded: {len(problems)} problem(s)", [
                str(p) for p in problems]
        try:
            tracker = StepTracker(oracle, self.library, hold=self.hold)
        except (InputError, ValueError) as exc:
            return False, "oracle not loaded", [str(exc)]
        self.tracker = tracker
        self.instruction = oracle.instruction
        self._start_episode()
        n = len(tracker.entries)
        self.get_logger().info(f"loaded oracle '{self.instruction}' ({n} actions)")
        return True, f"loaded {n} actions", []

    def _start_episode(self) -> None:
        assert self.tracker is not None
        self.tracker.reset()
        self._task_published = False
        self._problems = ProblemLog()
        t = self.last_state.t if self.last_state is not None else None
        for e in self.tracker.entries:
            self.step_pub.publish(step_verdict_cdr(t, e.path, e.action.action_id, "pending"))
        self._markers_dirty = True

    # ------------------------------------------------------------------ callbacks

    def _on_state(self, data: bytes) -> None:
        try:
            state = self._decoder.decode(data)
        except InputError as exc:
            self._report(f"bad WorldState message: {exc}", exc.message, error=True)
            return
        if self._decoder.problems:  # breaks the validity rules: skipped, as in a replay
            for problem in self._decoder.problems:
                self._report(f"world state t={state.t:.3f}: state skipped: {problem}", problem)
            return
        previous, self.last_state = self.last_state, state
        self._markers_dirty = True
        tracker = self.tracker
        if previous is not None and state.t < previous.t:
            # World time went back: the simulator (or a bag) restarted; a new episode begins.
            self.get_logger().info(  # throttled: a hostile stream can go back every message
                f"world time went back ({previous.t:.3f} -> {state.t:.3f} s): new episode",
                throttle_duration_sec=PROBLEM_LINES_EVERY_S)
            if tracker is not None:
                self._start_episode()
        if tracker is None:
            if not self._warned_no_oracle:
                self.get_logger().warning("world state received but no oracle loaded")
                self._warned_no_oracle = True
            return
        if self._task_published:
            return
        try:
            events = tracker.update(state)
        except (EvaluationError, InputError) as exc:  # the state is skipped, as in a replay
            self._report(f"state skipped: {exc}", getattr(exc, "key", None), error=True)
            return
        if events:
            self._publish_events(events)
        if tracker.done:
            self._publish_task()

    def _report(self, text: str, key: str | None, error: bool = False) -> None:
        """Log a stream problem once, then at most every 10 s with its count; and, as a stream
        of ever new problems (garbage, a new id in each message) is a flood all the same, at
        most one line a second per severity, the lines held back counted in the next."""
        line = self._problems.note(text, time.monotonic(), key)
        if line is None:
            return
        if self._held_back:
            line += f" ({self._held_back} more problem lines held back by the log throttle)"
        # one call site per severity: rclpy refuses a site whose severity changes
        if error:
            said = self.get_logger().error(line, throttle_duration_sec=PROBLEM_LINES_EVERY_S)
        else:
            said = self.get_logger().warning(line, throttle_duration_sec=PROBLEM_LINES_EVERY_S)
        self._held_back = 0 if said else self._held_back + 1

    def _publish_events(self, events: list[TrackerEvent]) -> None:
        assert self.tracker is not None
        for ev in events:  # verdicts first: logging costs more than the rest of the callback
            status, completed_t = self.tracker.step_state(ev.path)
            self.step_pub.publish(step_verdict_cdr(
                ev.t, ev.path, ev.action_id, status,
                ev.kind if ev.kind in REPORTED_KINDS else "", completed_t, ev.detail))
        log = self.get_logger()
        for ev in events:
            line = f"t={ev.t:.2f} step {ev.path} {ev.action_id}: {ev.kind}"
            if ev.kind in REPORTED_KINDS:
                log.warning(f"{line} ({ev.detail})")
            else:
                log.info(line)

    def _publish_task(self) -> None:
        assert self.tracker is not None
        report = self.tracker.finish() if not self.tracker.done else self.tracker.report()
        if report.verdict == "fail":
            for s in report.steps:
                if s.status == "incomplete":
                    self.step_pub.publish(step_verdict_cdr(
                        report.t_end, s.path, s.action_id, "incomplete",
                        detail="failed here" if s.path == report.failed_step else ""))
        self.task_pub.publish(task_verdict(report, self.instruction))
        self._task_published = True
        self._markers_dirty = True
        where = f" at step {report.failed_step}" if report.failed_step else ""
        self.get_logger().info(f"task verdict: {report.verdict}{where}")
        if self._problems.counts:  # all of them counted, the lines held back too
            self.get_logger().warning(f"stream problems this episode: {self._problems.digest()}",
                                      throttle_duration_sec=PROBLEM_LINES_EVERY_S)

    def _on_load(self, request: LoadOracle.Request,
                 response: LoadOracle.Response) -> LoadOracle.Response:
        if not request.oracle_json.strip() and not request.oracle_path.strip():
            response.success, response.message = False, "give oracle_json or oracle_path"
            return response
        parsed: Any = request.oracle_path.strip()
        if request.oracle_json.strip():  # JSON whatever it holds: never read as a path
            try:
                parsed = parse_json(request.oracle_json, "oracle_json")
            except InputError as exc:
                response.success, response.message = False, "oracle not loaded"
                response.problems = [str(exc)]
                return response
            if not isinstance(parsed, dict):
                response.success, response.message = False, "oracle not loaded"
                response.problems = [f"oracle_json: an oracle is a JSON object, not "
                                     f"{type(parsed).__name__}"]
                return response
        ok, message, problems = self.load(parsed)
        response.success, response.message, response.problems = ok, message, problems
        response.num_actions = len(self.tracker.entries) if ok and self.tracker else 0
        if not ok:
            self.get_logger().warning(f"{message}: {'; '.join(problems)}")
        return response

    def _on_reset(self, _req: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.tracker is None:
            response.success, response.message = False, "no oracle loaded"
            return response
        self._start_episode()
        response.success, response.message = True, "tracking restarted"
        return response

    def _on_finish(self, _req: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.tracker is None:
            response.success, response.message = False, "no oracle loaded"
            return response
        if not self._task_published:
            self._publish_task()
        report = self.tracker.report()
        response.success = True
        response.message = report.verdict + (
            f" (failed_step {report.failed_step})" if report.failed_step else "")
        return response

    def _publish_markers(self) -> None:
        # On change, and at least once a second so a late rviz sees the scene.
        now = time.monotonic()
        if self.last_state is None or (not self._markers_dirty and now - self._markers_t < 1.0):
            return
        self._markers_dirty = False
        self._markers_t = now
        report = self.tracker.report() if self.tracker is not None else None
        self.marker_pub.publish(oracle_markers(self.last_state, self.tracker, report))


def main(args: list[str] | None = None) -> None:
    run_node(OracleNode, args, threads=1)


if __name__ == "__main__":
    main()
