"""What runs beside a motor attempt: the attempt's monitoring context and the thread that reads
it (`AttemptMonitor`), and the memory writer that condenses evidence in the background
(`MemoryWriter`). Once an attempt has ended its context is closed, and an answer that comes
later is recorded as discarded, never acted on; planning reads the latest completed note and
never waits for one in progress.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from mango.orchestrator.motor_schemas import Alert, MemoryRole, MonitorRole, MonitorView
from mango.orchestrator.schemas import EpisodeRecord


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


def sync_at_boundary(mon: AttemptMonitor, timeout: float) -> None:
    """A command boundary: a synchronous monitor's answers are in before the next command."""
    if timeout:
        mon.sync(timeout)
