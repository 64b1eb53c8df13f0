"""Environment checks behind `mango doctor`.

Everything that touches rclpy runs in child processes (`mango.nodes.doctor_probe`): a broken
RMW makes rclpy exit the process at import, and the doctor must still print its table.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Status = Literal["ok", "warn", "fail", "skip"]

# Interfaces the library itself relies on; anything else found in share/mango_ros is checked too.
REQUIRED_TYPES: dict[str, tuple[str, ...]] = {
    "msg": ("ObjectState", "WorldState", "StepVerdict", "TaskVerdict"),
    "srv": ("LoadOracle",),
    "action": (),
}
SUPPORTED_PYTHON = (3, 11)  # the ROS 2 Kilted wheels are built for CPython 3.11


@dataclass
class CheckResult:
    name: str
    status: Status
    detail: str


def _probe(args: list[str], timeout: float) -> tuple[dict[str, Any] | None, str]:
    """Run a probe; return its JSON result (or None) and the last stderr line."""
    cmd = [sys.executable, "-m", "mango.nodes.doctor_probe", *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"probe '{args[0]}' did not finish within {timeout:.0f} s"
    return _last_json(proc.stdout), _last_line(proc.stderr) or f"exit status {proc.returncode}"


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


_ROS_LOG_PREFIX = re.compile(r"^\[[A-Z]+\] \[[0-9.]+\] (\[[^\]]*\])?\s*:\s*")
_ROS_LOG_SOURCE = re.compile(r",? at /\S+:\d+$")


def _last_line(text: str) -> str:
    """The last line of a child's stderr, without rcutils' level/time prefix and source."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    return _ROS_LOG_SOURCE.sub("", _ROS_LOG_PREFIX.sub("", lines[-1]))


def installed_interface_files() -> dict[str, list[str]]:
    """Interface names installed in share/mango_ros of every ament prefix."""
    found: dict[str, set[str]] = {"msg": set(), "srv": set(), "action": set()}
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        share = Path(prefix) / "share" / "mango_ros"
        for kind in found:
            for f in (share / kind).glob(f"*.{kind}"):
                found[kind].add(f.stem)
    return {k: sorted(v) for k, v in found.items()}


def check_python() -> CheckResult:
    v = sys.version_info
    ok = (v.major, v.minor) == SUPPORTED_PYTHON
    want = ".".join(map(str, SUPPORTED_PYTHON))
    detail = f"{v.major}.{v.minor}.{v.micro} ({sys.executable})"
    if not ok:
        detail += f"; the ROS 2 wheels need Python {want}"
    return CheckResult("python", "ok" if ok else "fail", detail)


def check_dds_profile() -> CheckResult:
    path = os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE")
    if not path:
        return CheckResult(
            "dds profile", "warn",
            "FASTDDS_DEFAULT_PROFILES_FILE unset: Fast DDS defaults (slow, large frames over UDP)",
        )
    if not Path(path).is_file():
        return CheckResult(
            "dds profile", "fail", f"FASTDDS_DEFAULT_PROFILES_FILE={path} is missing")
    return CheckResult("dds profile", "ok", path)


def check_rclpy_and_interfaces() -> list[CheckResult]:
    want_rmw = os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp (default)")
    result, err = _probe(["import"], timeout=30)
    if result is None or not result.get("ok"):
        reason = (result or {}).get("error") or err
        return [
            CheckResult("rclpy", "fail", f"rclpy cannot start with RMW {want_rmw}: {reason}"),
            CheckResult("interfaces", "skip", "needs rclpy"),
        ]
    checks = [CheckResult("rclpy", "ok", f"RMW {result['rmw']}")]
    have: dict[str, list[str]] = result["types"]
    expected = installed_interface_files()
    missing = []
    for kind in ("msg", "srv", "action"):
        for name in sorted(set(REQUIRED_TYPES[kind]) | set(expected.get(kind, []))):
            if name not in have.get(kind, []):
                missing.append(f"{kind}/{name}")
    counts = ", ".join(f"{len(have.get(k, []))} {k}" for k in ("msg", "srv", "action"))
    if missing:
        checks.append(CheckResult(
            "interfaces", "fail",
            f"mango_ros is missing {', '.join(missing)} (rebuild with `make setup`)",
        ))
    else:
        checks.append(CheckResult("interfaces", "ok", f"mango_ros: {counts}"))
    return checks


def check_dds_round_trip(timeout: float = 15.0) -> CheckResult:
    """Publish a WorldState from one process, echo it in another, compare field by field."""
    tag = uuid.uuid4().hex[:8]
    ping_topic, pong_topic = f"/mango_doctor/ping_{tag}", f"/mango_doctor/pong_{tag}"
    echo = subprocess.Popen(
        [sys.executable, "-m", "mango.nodes.doctor_probe", "echo", ping_topic, pong_topic,
         str(timeout)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        ready = echo.stdout.readline() if echo.stdout else ""
        if '"ready"' not in ready:
            echo.wait(timeout=5)
            return CheckResult("dds round trip", "fail",
                               f"echo process failed: {_last_line(echo.stderr.read())}")
        t0 = time.monotonic()
        result, err = _probe(["ping", ping_topic, pong_topic, str(timeout)], timeout + 10)
        if result is None:
            return CheckResult("dds round trip", "fail", f"ping process failed: {err}")
        if not result.get("ok"):
            return CheckResult("dds round trip", "fail", str(result.get("error")))
        ms = (time.monotonic() - t0) * 1000
        return CheckResult("dds round trip", "ok",
                           f"WorldState across two processes, identical ({ms:.0f} ms incl. start)")
    finally:
        if echo.poll() is None:
            echo.terminate()
        try:
            echo.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            echo.kill()


def run_checks() -> list[CheckResult]:
    results = [check_python(), check_dds_profile()]
    results.append(CheckResult(
        "ros domain", "ok", f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0 (default)')}"))
    ros = check_rclpy_and_interfaces()
    results.extend(ros)
    if all(r.status == "ok" for r in ros):
        results.append(check_dds_round_trip())
    else:
        results.append(CheckResult("dds round trip", "skip", "needs rclpy and the interfaces"))
    return results


def realtime_kernel() -> bool:
    """Whether this kernel is PREEMPT_RT (libfranka's `RealtimeConfig::kEnforce` needs it)."""
    rt = Path("/sys/kernel/realtime")
    if rt.is_file():
        return rt.read_text().strip() == "1"
    return "PREEMPT_RT" in os.uname().version


def check_robot(address: str, timeout: float = 3.0,
                connect_timeout: float = 10.0) -> list[CheckResult]:
    """A Franka robot at `address` as libfranka sees it: reachable, connected, its state, its
    errors, its hand, and whether this machine can control it in real time."""
    import socket

    from mango.control.backends.franky_arm import FrankyArm, FrankyOptions
    from mango.control.backends.libfranka import ArmError

    port = 1337  # libfranka's command port (include/franka/robot.h)
    try:
        with socket.create_connection((address, port), timeout=timeout):
            pass
    except OSError as exc:
        return [CheckResult("robot reachable", "fail",
                            f"nothing answers at {address}:{port} (libfranka's port): {exc}; "
                            "check the address, the cable to the control box and that the "
                            "robot is on")]
    results = [CheckResult("robot reachable", "ok", f"{address}:{port} answers")]
    arm = FrankyArm(address, FrankyOptions(realtime=False))
    answer: dict[str, Any] = {}

    def connect() -> None:  # in a thread: libfranka may wait on a robot that never answers
        try:
            arm.reconnect()
            answer["state"] = arm.read(with_width=False)
            answer["status"] = arm.status()
        except ArmError as exc:
            answer["error"] = exc

    worker = threading.Thread(target=connect, daemon=True)
    worker.start()
    worker.join(connect_timeout)
    if worker.is_alive():
        return [*results, CheckResult(
            "libfranka connection", "fail",
            f"no answer from libfranka within {connect_timeout:g} s (another client, such as "
            "a running control node, may hold the robot)")]
    if "error" in answer:
        return [*results, CheckResult(
            "libfranka connection", "fail",
            f"{answer['error']} (is FCI activated in Desk, and the robot's system version one "
            "libfranka 0.21 supports?)")]
    state, (mode, errors) = answer["state"], answer["status"]
    joints = ", ".join(f"{q:.3f}" for q in state.q)
    results.append(CheckResult("libfranka connection", "ok", f"robot mode {mode}"))
    results.append(CheckResult("robot state", "ok", f"joints [{joints}] rad"))
    results.append(CheckResult(
        "robot errors", "fail" if errors else "ok",
        ("present: " + ", ".join(errors) + " (clear them in Desk, or set the control node's "
         "`recover`)") if errors else "none"))
    try:
        width = arm.hand_width()
        results.append(CheckResult("hand", "ok" if width is not None else "skip",
                                   f"width {width:.4f} m" if width is not None else "none"))
    except ArmError as exc:
        results.append(CheckResult("hand", "warn", f"no answer from the hand: {exc}"))
    results.append(CheckResult(
        "realtime kernel", "ok" if realtime_kernel() else "warn",
        "PREEMPT_RT" if realtime_kernel() else
        "not a PREEMPT_RT kernel: libfranka refuses to control with `realtime: true`"))
    return results
