"""What a person reads from the nodes: every log line names its logger, and rclpy's own use of
its deprecated `Logger.warn` brings no `DeprecationWarning` along."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from rclpy.node import Node
from support.ros import call_service

from mango_ros.action import RunPolicy

# rcutils' default format: "[SEVERITY] [stamp] [logger.name]: message"
LOG_LINE = re.compile(r"\[(DEBUG|INFO|WARN|ERROR|FATAL)\] \[\d+\.\d+\] (\S*)")


def test_rclpy_deprecated_warn_brings_no_deprecation_warning(ros_node: Node, namespace: str,
                                                            tmp_path: Path) -> None:
    """An action server asked for the result of a goal it never had logs a warning through
    `Logger.warn` (ros2/rclpy, rclpy/rclpy/action/server.py, `_execute_get_result_request`);
    with Python's warnings shown for that module, only the warning itself appears."""
    env = dict(os.environ, PYTHONWARNINGS="default::DeprecationWarning:rclpy.action.server")
    log = tmp_path / "vla.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mango.nodes.vla_node", "--ros-args", "-r",
             f"__ns:={namespace}", "-p", "scene:=libero10_book_caddy"],
            stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        request = RunPolicy.Impl.GetResultService.Request()
        request.goal_id.uuid = list(uuid.uuid4().bytes)
        reply = call_service(ros_node, RunPolicy.Impl.GetResultService,
                             f"{namespace}/run_policy/_action/get_result", request, timeout=30)
        assert reply.status == 0  # STATUS_UNKNOWN
        deadline = time.monotonic() + 10
        while "unknown or expired goal" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    text = log.read_text()
    ns = namespace.strip("/")
    assert "[WARN]" in text and f"[{ns}.vla_node.action_server]: Sending result response " \
        "for unknown or expired goal" in text, text
    assert "DeprecationWarning" not in text, text


def test_bringup_output_names_every_logger(tmp_path: Path) -> None:
    """rich read rclpy's `[oracle_node]` as a markup tag and dropped it: `[INFO] [stamp] :`."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mango.cli.main", "bringup", "oracle", "--set",
         "trace_player.rate_scale=4.0", "--bag", str(tmp_path / "bag")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in proc.stdout:
            lines.append(line)
            if "task verdict: pass" in line or time.monotonic() > deadline:
                break
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    logged = [m for line in lines if (m := LOG_LINE.search(line))]
    assert any("task verdict: pass" in line for line in lines), "".join(lines)
    assert len(logged) >= 3, "".join(lines)
    names = {m.group(2) for m in logged}
    assert "[oracle_node]:" in names and "[trace_player]:" in names, names
    assert all(re.fullmatch(r"\[\w[\w.]*\]:", n) for n in names), names
