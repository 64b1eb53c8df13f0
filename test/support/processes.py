"""Reading a running command's output in tests (a stack started with `mango bringup`)."""

from __future__ import annotations

import os
import subprocess
import time


def read_until(proc: subprocess.Popen[str], needle: str, timeout: float) -> list[str]:
    """The output lines up to and including the first holding `needle`; fails with all of
    them when the process ends or `timeout` s pass first."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            lines.append(line)
            if needle in line:
                return lines
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.05)
    raise AssertionError(f"{needle!r} not seen; output:\n{''.join(lines)}")
