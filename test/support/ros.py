"""rclpy test helpers: node subprocesses that are always stopped, waiting, service calls."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar
from weakref import WeakKeyDictionary

from rclpy.node import Node

from mango.client.session import StackSession, request_reply
from mango.stack import Stack


class Processes:
    """Node subprocesses started by a test; all are stopped (SIGINT, then kill) at the end.

    A failing test's report ends with the nodes' logs (`failure_logs`, called by conftest):
    a timeout in CI otherwise says nothing of what the nodes were doing."""

    live: ClassVar[list[Processes]] = []  # not yet stopped, or stopped during the current test
    LOG_TAIL = 4000

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.procs: list[tuple[str, subprocess.Popen[str]]] = []
        Processes.live.append(self)

    def start(self, name: str, module: str, *ros_args: str) -> subprocess.Popen[str]:
        log = (self.logdir / f"{name}.log").open("w")
        cmd = [sys.executable, "-m", module, "--ros-args", *ros_args]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
        self.procs.append((name, proc))
        return proc

    def log(self, name: str) -> str:
        return (self.logdir / f"{name}.log").read_text()

    @classmethod
    def failure_logs(cls) -> str:
        """The tail of every node's log that the current test may have talked to."""
        parts = []
        for procs in cls.live:
            for name, proc in procs.procs:
                try:
                    text = (procs.logdir / f"{name}.log").read_text(errors="replace")
                except OSError as exc:
                    text = f"(no log: {exc})"
                state = "running" if proc.poll() is None else f"exit {proc.returncode}"
                parts.append(f"--- {name} ({state}), last {cls.LOG_TAIL} characters ---\n"
                             f"{text[-cls.LOG_TAIL:]}")
        return "\n".join(parts)

    @classmethod
    def forget_stopped(cls) -> None:
        """After a test: only the processes still running (a module's stack) stay live."""
        cls.live = [p for p in cls.live if any(proc.poll() is None for _, proc in p.procs)]

    def stop_all(self) -> None:
        for _, p in self.procs:
            if p.poll() is None:
                p.send_signal(2)
        deadline = time.monotonic() + 5
        for _, p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def wait_for(pred: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def call_service(node: Node, srv_type: type, name: str, request: Any,
                 timeout: float = 10.0, repeatable: bool = True) -> Any:
    """The reply to one request; a `repeatable` one is sent again while the service has not
    answered this test's node yet (DDS can lose a new client's first reply:
    `mango.client.session.request_reply`). Clients are kept per node for the same reason."""
    key = (srv_type, name)
    clients, answered = _CLIENTS.setdefault(node, ({}, set()))
    if key not in clients:
        clients[key] = node.create_client(srv_type, name)
    client = clients[key]
    assert client.wait_for_service(timeout_sec=timeout), f"service {name} not available"
    try:
        reply = request_reply(client, request, timeout, f"reply from {name}",
                              resend=repeatable and key not in answered)
    except TimeoutError as exc:
        raise AssertionError(str(exc)) from None
    answered.add(key)
    return reply


# node -> (its clients here, the services that answered it)
_CLIENTS: WeakKeyDictionary[Node, tuple[dict[tuple[type, str], Any], set[tuple[type, str]]]] = (
    WeakKeyDictionary())


@contextmanager
def running_stack(stack: Stack, ns: str
                  ) -> Iterator[tuple[Node, dict[str, list[str]]]]:
    """`stack` under the namespace `ns`, each node its own process: the session's node and
    each node's output lines as they come; no node may have printed a traceback at the end."""
    logs: dict[str, list[str]] = {}
    with StackSession(stack.in_namespace(ns), output=lambda who, line: logs.setdefault(
            who, []).append(line)) as session:
        assert session.node is not None
        try:
            yield session.node, logs
        finally:
            for who, lines in logs.items():
                assert not [ln for ln in lines if "Traceback" in ln], (who, lines[-40:])
