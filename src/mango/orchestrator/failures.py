"""What the orchestrator got wrong, judged against the simulator's ground truth (after VoLo,
App. K.2), and how fast it reacted to the world going wrong.

Both read one episode's record (plan, signals, decisions, tool runs, halts) next to the
ground-truth summary of `events.WorldFailureDetector` (failure events, the task's goals and
when each began or stopped holding), so any run — any monitor, any decider — is scored by one
implementation, in the episode outcome and in the bench alike.

The classes, each counted per occurrence:

- `plan_mismatch`: a task goal no subgoal stands for, or a subgoal that stands for no goal
  (matched on the expert step and, for a pick-and-place, the object);
- `false_completion`: the monitor said a subgoal was done while its goal did not hold;
- `completion_mismatch`: such a claim made just as *another* subgoal's goal came true (the
  right event credited to the wrong subgoal);
- `missed_completion`: a goal came true and stayed so for `tolerance_s`, and the monitor did
  not say so within `tolerance_s`;
- `task_success_qa`: the orchestrator ended believing the task done (it moved past every
  subgoal as completed, no abort) and it was not, or the reverse;
- `missed_failure`: a ground-truth failure event no monitor failure signal followed within
  `failure_window_s` (before it was undone);
- `invariant_failure`: a goal already reached stopped holding (a placed object taken out or
  knocked off) and no failure signal followed within `failure_window_s`: a finished subgoal
  must stay finished;
- `grasp_target_mismatch`: a grasp that took another object than the subgoal's: a wrong
  object came into the hand while a grasp or place tool ran, or a grasp/place decision named
  a subgoal whose object is not its goal's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mango.orchestrator.events import FAILURE_KINDS

K2_CLASSES: tuple[str, ...] = (
    "plan_mismatch", "false_completion", "completion_mismatch", "missed_completion",
    "task_success_qa", "missed_failure", "invariant_failure", "grasp_target_mismatch")


class _HaltLike(Protocol):
    t_request: float
    t_halted: float | None


@dataclass(frozen=True)
class Reaction:
    """One ground-truth failure and how the run reacted: event -> signal -> halt -> at rest.

    `signal_t` is the first monitor failure signal at or after the event; `request_t` when the
    arm was told to hold still (the tool stopped); `halted_t` when the hand fell below the
    halted speed. A lag is None when its later end never came (within the window)."""

    kind: str
    event_t: float
    signal_t: float | None
    request_t: float | None
    halted_t: float | None

    @property
    def total_s(self) -> float | None:
        return None if self.halted_t is None else self.halted_t - self.event_t

    @property
    def detection_s(self) -> float | None:
        return None if self.signal_t is None else self.signal_t - self.event_t

    @property
    def interrupt_s(self) -> float | None:
        if self.signal_t is None or self.request_t is None:
            return None
        return max(0.0, self.request_t - self.signal_t)

    @property
    def stop_s(self) -> float | None:
        if self.request_t is None or self.halted_t is None:
            return None
        return self.halted_t - self.request_t

    def to_json(self) -> dict[str, Any]:
        def ms(x: float | None) -> float | None:
            return None if x is None else round(x * 1000.0, 1)

        return {"kind": self.kind, "event_t": round(self.event_t, 4),
                "total_ms": ms(self.total_s), "detection_ms": ms(self.detection_s),
                "interrupt_ms": ms(self.interrupt_s), "stop_ms": ms(self.stop_s)}


# event times in a summary are rounded to 0.1 ms; robot times are float sums of physics
# steps: "at or after the event" allows for both
_SAME_T = 1e-4


def reactions(events: Sequence[dict[str, Any]], signals: Sequence[dict[str, Any]],
              halts: Sequence[_HaltLike], window_s: float = 30.0) -> list[Reaction]:
    """Every ground-truth failure event with the first failure signal and halt after it."""
    out = []
    fails = sorted(float(s["t"]) for s in signals if s.get("kind") == "failure")
    for ev in events:
        if ev["kind"] not in FAILURE_KINDS:
            continue
        t = float(ev["t"])
        sig = next((x for x in fails if t - _SAME_T <= x <= t + window_s), None)
        h = next((h for h in halts if t - _SAME_T <= h.t_request <= t + window_s), None)
        out.append(Reaction(ev["kind"], t, sig, h.t_request if h else None,
                            h.t_halted if h else None))
    return out


def _holds_at(log: Sequence[Sequence[Any]], goal: int, t: float) -> bool:
    """Whether goal `goal` held at time `t` (its last transition at or before t)."""
    state = False
    for tt, i, h in log:
        if i == goal and float(tt) <= t + _SAME_T:
            state = bool(h)
    return state


def _holds_within(log: Sequence[Sequence[Any]], goal: int, a: float, b: float) -> bool:
    """Whether goal `goal` held at some time in [a, b]."""
    return _holds_at(log, goal, a) or any(
        int(i) == goal and h and a < float(t) <= b for t, i, h in log)


def _goals_of(sub: dict[str, Any], goals: Sequence[dict[str, Any]]) -> list[int]:
    return [i for i, g in enumerate(goals) if g["step"] == sub.get("expert_step")
            and (g["kind"] != "place" or sub.get("object") in (None, g["subject"]))]


def classify(lines: Sequence[dict[str, Any]], world: dict[str, Any], success: bool, *,
             tolerance_s: float = 2.0, failure_window_s: float = 5.0
             ) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """K.2 counts (every class, zeros included) and one finding per occurrence, from an
    episode record's lines and the ground-truth summary (`WorldFailureDetector.summary`)."""
    goals: list[dict[str, Any]] = world.get("goals", [])
    log: list[Sequence[Any]] = world.get("goal_log", [])
    plan = next((x for x in lines if x.get("record") == "plan"), None)
    subs: list[dict[str, Any]] = list(plan["subgoals"]) if plan else []
    by_id = {s["id"]: s for s in subs}
    sigs = [x for x in lines if x.get("record") == "signal"]
    found: list[dict[str, Any]] = []

    def add(cls: str, t: float | None, detail: str) -> None:
        found.append({"class": cls, "t": None if t is None else round(t, 4), "detail": detail})

    # plan against the task's goals
    covered = {i for s in subs for i in _goals_of(s, goals)}
    for i, g in enumerate(goals):
        if i not in covered:
            add("plan_mismatch", None, f"no subgoal for goal {g['subject']} (step {g['step']})")
    for s in subs:
        if goals and not _goals_of(s, goals):
            add("plan_mismatch", None, f"subgoal {s['id']} '{s.get('instruction', '')}' "
                                       "matches no goal of the task")
    # completion claims against the goals
    for x in sigs:
        if x["kind"] != "completed" or x.get("subgoal") not in by_id:
            continue
        t = float(x["t"])
        mine = _goals_of(by_id[x["subgoal"]], goals)
        if mine and all(_holds_within(log, i, t, t + tolerance_s) for i in mine):
            continue
        others = [i for i in range(len(goals)) if i not in mine and any(
            int(gi) == i and h and abs(float(tt) - t) <= tolerance_s for tt, gi, h in log)]
        if others:
            add("completion_mismatch", t, f"subgoal {x['subgoal']} claimed done as goal "
                                          f"{goals[others[0]]['subject']} came true")
        else:
            add("false_completion", t, f"subgoal {x['subgoal']} claimed done; its goal "
                                       "does not hold")
    end_t = max([float(x.get("t", 0.0)) for x in lines] + [0.0])
    said = [(float(x["t"]), set(_goals_of(by_id[x["subgoal"]], goals))) for x in sigs
            if x["kind"] == "completed" and x.get("subgoal") in by_id]
    for k, (tt, i, h) in enumerate(log):
        t, i = float(tt), int(i)
        if not h:
            continue
        until = next((float(t2) for t2, i2, _ in log[k + 1:] if int(i2) == i), end_t)
        if until - t < tolerance_s and until < end_t:
            continue  # came true only in passing
        if not any(i in gs and abs(ts - t) <= tolerance_s for ts, gs in said):
            add("missed_completion", t, f"goal {goals[i]['subject']} came true; the "
                                        "monitor did not say so")
    # the orchestrator's belief of success
    result = next((x for x in lines if x.get("record") == "result"), None)
    if result is not None:
        believed = result.get("aborted") is None and bool(result.get("subgoals")) and all(
            s.get("orchestrator") in ("completed", "advanced") for s in result["subgoals"])
        if believed != success:
            add("task_success_qa", float(result["t"]),
                f"the orchestrator believed {'success' if believed else 'failure'}; "
                f"ground truth: {'success' if success else 'failure'}")
    # failures the monitor never reported
    fail_t = [float(x["t"]) for x in sigs if x["kind"] == "failure"]
    recovered_at = {e["pairs"]: float(e["t"]) for e in world.get("events", [])
                    if e["kind"] == "recovery" and e.get("pairs") is not None}
    for ev in world.get("events", []):
        if ev["kind"] not in FAILURE_KINDS:
            continue
        t = float(ev["t"])
        until = min(t + failure_window_s, recovered_at.get(ev.get("index"), float("inf")))
        if not any(t - _SAME_T <= f <= until + _SAME_T for f in fail_t):
            add("missed_failure", t, f"{ev['kind']} ({ev.get('subject')}) went unreported")
    for k, (tt, i, h) in enumerate(log):
        t = float(tt)
        if h or not any(int(i2) == int(i) and h2 for _, i2, h2 in log[:k]):
            continue
        if not any(t - _SAME_T <= f <= t + failure_window_s for f in fail_t):
            add("invariant_failure", t, f"goal {goals[int(i)]['subject']} was reached and "
                                        "stopped holding, unreported")
    # grasps that took another object
    runs, start = [], None
    for x in lines:
        if x.get("record") == "tool_start" and x.get("tool") in ("grasp", "place"):
            start = float(x["t"])
        elif x.get("record") == "tool_end" and start is not None:
            runs.append((start, float(x["t"])))
            start = None
    for ev in world.get("events", []):
        if ev["kind"] == "wrong_object_picked" and any(
                a - _SAME_T <= float(ev["t"]) <= b + _SAME_T for a, b in runs):
            add("grasp_target_mismatch", float(ev["t"]),
                f"a grasp took {ev.get('subject')}, not the subgoal's object")
    for x in lines:
        if x.get("record") == "decision" and x.get("action") in ("grasp_tool", "place_tool"):
            s = by_id.get(x.get("subgoal"))
            if s is not None and goals and not any(
                    goals[i]["subject"] == s.get("object") for i in _goals_of(s, goals)):
                add("grasp_target_mismatch", float(x["t"]),
                    f"{x['action']} for subgoal {s['id']}, whose object is no goal's")
    counts = {c: sum(1 for f in found if f["class"] == c) for c in K2_CLASSES}
    return counts, found
