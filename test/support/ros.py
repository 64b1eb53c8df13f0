"""rclpy test helpers: node subprocesses that are always stopped, waiting, service calls."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rclpy.node import Node


class Processes:
    """Node subprocesses started by a test; all are stopped (SIGINT, then kill) at the end."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.procs: list[tuple[str, subprocess.Popen[str]]] = []

    def start(self, name: str, module: str, *ros_args: str) -> subprocess.Popen[str]:
        log = (self.logdir / f"{name}.log").open("w")
        cmd = [sys.executable, "-m", module, "--ros-args", *ros_args]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
        self.procs.append((name, proc))
        return proc

    def log(self, name: str) -> str:
        return (self.logdir / f"{name}.log").read_text()

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
                 timeout: float = 10.0) -> Any:
    client = node.create_client(srv_type, name)
    try:
        assert client.wait_for_service(timeout_sec=timeout), f"service {name} not available"
        future = client.call_async(request)
        wait_for(future.done, timeout, f"reply from {name}")
        return future.result()
    finally:
        node.destroy_client(client)
