"""Start a stack's nodes as processes, forward their output, stop them cleanly, and report a
node that dies. This is what `mango bringup` and the Python API (`Bringup`) use where
launch_ros is not available."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mango.errors import InputError
from mango.stack import PACKAGE, Stack, StackNode, params_document, ros_args

log = logging.getLogger(__name__)


@dataclass
class NodeProcess:
    node: StackNode
    proc: subprocess.Popen[str]
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=20))

    @property
    def label(self) -> str:
        return f"{self.node.namespace}/{self.node.name}".lstrip("/")


class NodeDied(RuntimeError):
    """A required node exited while the stack was running."""

    def __init__(self, label: str, code: int, tail: list[str]) -> None:
        self.label, self.code, self.tail = label, code, tail
        last = f": {tail[-1]}" if tail else ""
        super().__init__(f"node {label} exited with code {code}{last}")


PARENT_ENV = "MANGO_PARENT_PID"  # a node started by a bringup ends when that process does


class Bringup:
    """Run a stack's nodes as child processes (`python -m mango.nodes.<executable>`)."""

    def __init__(self, stack: Stack, output: Callable[[str, str], None] | None = None,
                 env: dict[str, str] | None = None) -> None:
        for n in stack.nodes:
            if n.package != PACKAGE:
                raise InputError(
                    f"node {n.name} comes from package {n.package}: that needs a system ROS 2 "
                    f"(`ros2 launch`); `mango bringup` runs only {PACKAGE} nodes")
        self.stack = stack
        self.output = output
        self.env = env
        self.procs: list[NodeProcess] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="mango-bringup-")
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for n in self.stack.nodes:
            params = Path(self._tmp.name) / f"{n.name}.yaml"
            params.write_text(yaml.safe_dump(params_document(n)))
            cmd = [sys.executable, "-m", f"mango.nodes.{n.executable}", *ros_args(n, params)]
            # the node ends with this process even when it is killed without a chance to stop
            # them (`mango.nodes.common.die_with_parent`): no stack outlives its bringup
            env = {**(self.env if self.env is not None else os.environ),
                   PARENT_ENV: str(os.getpid())}
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                env=env, start_new_session=True)  # Ctrl-C reaches us, we stop them in order
            np = NodeProcess(n, proc)
            self.procs.append(np)
            t = threading.Thread(target=self._pump, args=(np,), daemon=True)
            t.start()
            self._threads.append(t)
            log.info("started %s (pid %d)", np.label, proc.pid)

    def _pump(self, np: NodeProcess) -> None:
        assert np.proc.stdout is not None
        for line in np.proc.stdout:
            line = line.rstrip("\n")
            np.tail.append(line)
            if self.output is not None:
                self.output(np.label, line)

    def check(self) -> None:
        """Raise `NodeDied` for the first required node that has exited."""
        for np in self.procs:
            code = np.proc.poll()
            if code is not None and np.node.required:
                time.sleep(0.1)  # let the pump catch the last lines
                raise NodeDied(np.label, code, list(np.tail))

    def dead(self) -> list[NodeProcess]:
        return [np for np in self.procs if np.proc.poll() is not None]

    def spin(self, stop: threading.Event | None = None, period: float = 0.1) -> None:
        """Block until `stop` is set or a required node dies (`NodeDied`)."""
        reported: set[str] = set()
        while stop is None or not stop.is_set():
            self.check()
            for np in self.dead():
                if np.label not in reported:
                    reported.add(np.label)
                    log.warning("optional node %s exited with code %s", np.label,
                                np.proc.returncode)
            time.sleep(period)

    def stop(self, timeout: float = 5.0) -> dict[str, int]:
        """SIGINT every node (reverse start order), then SIGTERM, then SIGKILL; exit codes."""
        for np in reversed(self.procs):
            if np.proc.poll() is None:
                _signal(np.proc, signal.SIGINT)
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 2.0)):
            deadline = time.monotonic() + wait
            for np in self.procs:
                try:
                    np.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    log.warning("%s did not stop; sending %s", np.label, sig.name)
                    _signal(np.proc, sig)
        for np in self.procs:
            np.proc.wait()
        for t in self._threads:
            t.join(timeout=1.0)
        self._tmp.cleanup()
        return {np.label: np.proc.returncode for np in self.procs}

    def __enter__(self) -> Bringup:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
