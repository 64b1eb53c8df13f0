"""Judging a recorded bag (`judge_bag`, what `mango replay` runs), on several cores if long.

The costly part of a replay, decoding each state and evaluating the actions' conditions in
it, does not depend on the tracker's progress. So the bag is cut into adjacent byte spans:
this process tracks the first span state by state, while forked workers decode the later
spans and evaluate every action's condition in each of their states; the tracker then runs
on through the workers' results in recording order (`StepTracker.update_values`), with
exactly the semantics of feeding it the states one by one. Workers are forked, inheriting
the compiled oracle, so this suits a process with no middleware threads running (the
`mango replay` command, not a node).
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import traceback
from array import array
from dataclasses import dataclass, field

from mango.bags.states import (
    Bag,
    StreamProblems,
    bag_name,
    bag_reader,
    iter_bag_world_states,
    iter_episode,
    no_messages,
    track_states,
    world_state_payloads,
)
from mango.bags.world_state_cdr import WorldStateDecoder
from mango.errors import InputError
from mango.oracle.predicates import EvaluationError
from mango.oracle.tracker import Report, StepTracker

log = logging.getLogger(__name__)

PARALLEL_MIN_BYTES = 8 << 20  # below this, forking costs more than it saves
# Work per state of tracking (finished actions skipped) against evaluating every action: the
# first span is this much larger than the others so that all finish together.
_LAZY_SHARE = 1.25


class WorkerFailed(RuntimeError):
    """A worker died or raised something other than a bag or evaluation error."""


@dataclass
class SpanResult:
    """One span's states: their times and every action's condition value, row by row."""

    ts: array = field(default_factory=lambda: array("d"))
    values: bytearray = field(default_factory=bytearray)  # len(ts) rows of n_actions bytes
    errors: dict[int, str] = field(default_factory=dict)  # index in values -> why no value
    # Messages skipped, reported in recording order once the states before them are tracked:
    # (index of the next kept state, index of the message in the span, the state's time, or
    # None when it could not be decoded at all, and why).
    skipped: list[tuple[int, int, float | None, list[str]]] = field(default_factory=list)
    failure: str | None = None  # what stopped the span early (the topic's type, the bag)


def auto_jobs(bag: Bag, jobs: int) -> int:
    """Worker count for `jobs` (0 = one per usable core when the bag is big enough)."""
    if jobs > 0:
        return jobs
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return cores if bag_reader(bag).size >= PARALLEL_MIN_BYTES else 1


def evaluate_span(bag: Bag, topic: str, tracker: StepTracker,
                  span: tuple[int, int] | None) -> SpanResult:
    """Decode the span's states and evaluate every action's condition in each."""
    out = SpanResult()
    ts, values, errors = out.ts, out.values, out.errors
    decoder = WorldStateDecoder()
    n_actions = len(tracker.entries)
    evaluate = tracker.condition_values
    try:
        for i, data in enumerate(world_state_payloads(bag, topic, span)):
            try:
                state = decoder.decode(data)
            except InputError as exc:
                out.skipped.append((len(ts), i, None, [exc.message]))
                continue
            if decoder.problems:
                out.skipped.append((len(ts), i, state.t, decoder.problems))
                continue
            row, row_errors = evaluate(state)
            if row_errors:
                base = len(values)
                for k, why in row_errors.items():
                    errors[base + k] = why
            ts.append(state.t)
            values.extend(row)
    except InputError as exc:  # the topic's type, or the bag itself
        out.failure = exc.message
    assert len(values) == len(ts) * n_actions
    return out


def _worker(conn: multiprocessing.connection.Connection, bag: Bag, topic: str,
            tracker: StepTracker, span: tuple[int, int]) -> None:
    try:
        conn.send(("ok", evaluate_span(bag, topic, tracker, span)))
    except BaseException:  # reported to the parent, which raises
        conn.send(("crash", traceback.format_exc()))
    finally:
        conn.close()


def _spans(size: int, jobs: int) -> list[tuple[int, int]]:
    """Adjacent byte spans: the first (tracked lazily in this process, which skips finished
    actions) a little larger than the workers', which evaluate every action."""
    first = _LAZY_SHARE * size / (_LAZY_SHARE + jobs - 1)
    cuts = [0] + [round(first + (size - first) * k / (jobs - 1)) for k in range(jobs - 1)]
    return list(itertools.pairwise([*cuts, size + 1]))


def judge_parallel(bag: Bag, topic: str, tracker: StepTracker, jobs: int,
                   problems: StreamProblems | None = None) -> Report:
    """Judge the bag's last episode (restarting where world time goes back) with `jobs`
    processes: this one tracks the first span state by state while forked workers evaluate
    the later spans; then the tracker runs on through the workers' results."""
    bag = bag_reader(bag)
    spans = _spans(bag.size, jobs)
    ctx = multiprocessing.get_context("fork")
    workers = []
    try:
        for span in spans[1:]:
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker, args=(child, bag, topic, tracker, span),
                               daemon=True)
            proc.start()
            child.close()
            workers.append((proc, parent))
        problems = problems or StreamProblems(topic)
        count, last = track_states(tracker, iter_bag_world_states(bag, topic, spans[0], problems),
                                   problems=problems)
        count += problems.skipped_messages  # messages read, the skipped ones too
        results = []
        for proc, conn in workers:
            try:
                kind, payload = conn.recv()
            except EOFError:
                kind, payload = "crash", f"worker exited with code {proc.exitcode}"
            if kind != "ok":
                raise WorkerFailed(payload)
            results.append(payload)
    finally:
        for proc, conn in workers:
            conn.close()
            if proc.is_alive():
                proc.terminate()
            proc.join()
    n = len(tracker.entries)
    for r in results:
        values, errors = r.values, r.errors
        skipped = list(reversed(r.skipped))

        for j, t in enumerate(r.ts):
            if last is not None and t < last:
                tracker.reset()
            last = t
            base = j * n
            while skipped and skipped[-1][0] == j:
                _report_skipped(problems, skipped.pop(), count, last)
            if problems.held is not None:
                problems.usable()

            def value_of(i: int, base: int = base, values: bytearray = values,
                         errors: dict[int, str] = errors) -> bool:
                if values[base + i]:
                    return True
                why = errors.get(base + i)
                if why is not None:
                    raise EvaluationError(why)
                return False

            try:
                tracker.update_values(t, value_of)
            except EvaluationError as exc:
                problems.unjudged(t, exc)
        for entry in reversed(skipped):  # after the span's last kept state
            _report_skipped(problems, entry, count, last)
        if r.failure is not None:  # after the states before it, as a sequential pass would
            raise InputError(r.failure, file=bag_name(bag))
        count += len(r.ts) + len(r.skipped)
    if count == 0:
        raise no_messages(bag, topic)
    problems.messages = count
    return tracker.finish()


def _report_skipped(problems: StreamProblems, entry: tuple[int, int, float | None, list[str]],
                    first: int, last: float | None) -> None:
    """A worker's skipped message, said as the one-process pass says it; `first` is the number
    of messages before the worker's span."""
    _, local, t_bad, why = entry
    if t_bad is None:
        problems.t = last if last is not None else 0.0
        problems.unreadable(first + local + 1, why[0])
    else:
        problems.invalid(t_bad, why)


def judge_bag(bag: Bag, tracker: StepTracker, topic: str = "/world_state",
              episode: int | None = None, jobs: int = 1,
              problems: StreamProblems | None = None) -> Report:
    """Feed one episode's states to `tracker` and finish it; what `mango replay` does.

    The default (last) episode is judged in a single pass, restarting the tracker where world
    time goes back, exactly what the oracle node does live. With `jobs` > 1 that pass uses
    that many processes (0: one per core for a big bag); see `judge_parallel`. A chosen
    `episode` is judged in this process. What was skipped is counted in `problems`; a run
    in which no state could be judged is an `InputError` saying why, not a verdict.
    """
    bag = bag_reader(bag)
    problems = problems if problems is not None else StreamProblems(topic)
    report = None
    if episode is None and jobs != 1:
        jobs = auto_jobs(bag, jobs)
        if jobs > 1:
            try:
                report = judge_parallel(bag, topic, tracker, jobs, problems)
            except WorkerFailed as exc:  # e.g. killed for memory: do it in one
                log.warning("parallel replay failed (%s); judging in one process", exc)
                tracker.reset()
                problems.restart()
    if report is None:
        if episode is not None:
            track_states(tracker, iter_episode(bag, topic, episode, problems),
                         problems=problems)
        else:
            track_states(tracker, iter_bag_world_states(bag, topic, problems=problems),
                         problems=problems)
        report = tracker.finish()
    if report.n_states == 0:
        raise problems.nothing_usable(bag, episode)
    return report
