"""Goal bookkeeping: one goal at a time, a new one preempts, cancel names its goal, and every
goal ends with exactly one terminal status."""

from __future__ import annotations

import threading
import time

from mango.control import GoalRun, GoalSlot, GoalStatus


def test_first_reason_wins_and_names_the_status() -> None:
    run = GoalRun(object())
    run.halt("preempted by a new goal")
    run.halt("cancelled")
    assert run.stop.is_set() and run.reason == "preempted by a new goal"
    assert run.stop_status is GoalStatus.PREEMPTED
    other = GoalRun(object())
    other.halt("halted by the halt service")
    assert other.stop_status is GoalStatus.CANCELLED


def test_cancel_applies_to_the_active_goal_only() -> None:
    slot = GoalSlot()
    a, b = object(), object()
    run = slot.begin(a)
    slot.cancel(b, at_boundary=False)
    assert not run.stop.is_set()
    slot.cancel(a, at_boundary=True)
    assert run.cancel_at_boundary and not run.stop.is_set()
    slot.cancel(a, at_boundary=False)
    assert run.stop.is_set() and run.reason == "cancelled"
    slot.end(run)
    assert slot.active() is None


def test_every_goal_gets_one_terminal_status_under_preemption() -> None:
    """Goals arrive while others run: each one that ran to its end succeeded, every earlier
    one was preempted, none moved the arm alongside another (one preempted before its turn
    never owns it)."""
    slot = GoalSlot()
    statuses: dict[int, list[GoalStatus]] = {}
    running = 0
    overlap = False
    lock = threading.Lock()

    def goal(i: int) -> None:
        nonlocal running, overlap
        run = slot.begin(i)
        try:
            if not run.owns_arm:  # preempted while waiting for its turn (a loaded machine)
                assert run.stop.is_set()
                statuses.setdefault(i, []).append(run.stop_status)
                return
            with lock:
                running += 1
                overlap |= running > 1
            stopped = run.stop.wait(0.05)  # the "motion"
            with lock:
                running -= 1
            status = run.stop_status if stopped else GoalStatus.SUCCEEDED
            statuses.setdefault(i, []).append(status)
        finally:
            slot.end(run)

    threads = [threading.Thread(target=goal, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
        time.sleep(0.01)
    for t in threads:
        t.join(timeout=10)
    assert not overlap
    assert sorted(statuses) == list(range(12))
    assert all(len(s) == 1 for s in statuses.values())
    assert set(s for (s,) in statuses.values()) <= {GoalStatus.SUCCEEDED, GoalStatus.PREEMPTED}
    assert statuses[11] == [GoalStatus.SUCCEEDED]  # the last one is never preempted
    assert slot.active() is None


def test_a_burst_of_goals_never_holds_more_than_two_threads() -> None:
    """While one goal holds the arm, a burst of 50 arrives: each one preempted before its turn
    returns at once (stopped, not owning the arm), so only the newest waits — executor threads
    stay free to answer the next goals (a storm of ROS goals once exhausted them)."""
    slot = GoalSlot()
    holder = slot.begin(object())
    waiting = []
    lock = threading.Lock()
    peak = [0]

    def arrive() -> None:
        with lock:
            waiting.append(1)
            peak[0] = max(peak[0], len(waiting))
        run = slot.begin(object())
        with lock:
            waiting.pop()
        slot.end(run)

    threads = []
    for _ in range(50):
        t = threading.Thread(target=arrive)
        t.start()
        threads.append(t)
        time.sleep(0.002)
        with lock:
            assert len(waiting) <= 2, len(waiting)  # the newest, and one arriving
    assert holder.stop.is_set() and holder.stop_status is GoalStatus.PREEMPTED
    slot.end(holder)  # the holder hands the arm back: the newest runs
    for t in threads:
        t.join(timeout=2)
    assert not any(t.is_alive() for t in threads)
    assert slot.active() is None


def test_halt_and_cancel_reach_a_goal_still_waiting_for_its_turn() -> None:
    slot = GoalSlot()
    holder = slot.begin(object())
    handle = object()
    got: list[GoalRun] = []
    t = threading.Thread(target=lambda: got.append(slot.begin(handle)))
    t.start()
    time.sleep(0.05)
    slot.cancel(handle, at_boundary=True)  # not started: a boundary cancel stops it now
    t.join(timeout=2)
    assert got and got[0].stop.is_set() and not got[0].owns_arm
    slot.end(got[0])
    slot.end(holder)
    assert slot.active() is None
