"""Bad node parameters (wrong type, out of range, a timer period that overflows, a topic name
with a space) stop a node at start with one `error:` line naming the parameter, exit 1, never
a traceback; an integer where a number with a fraction is expected is simply accepted."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    ("oracle_node", "hold:=abc", "parameter 'hold': expected an integer"),
    ("oracle_node", "hold:=0", "parameter 'hold' must be at least 1"),
    ("oracle_node", "marker_rate:=1e-300", "parameter 'marker_rate' must be 0 (off) or"),
    ("oracle_node", "world_state_topic:=a b", "Invalid topic name"),
    ("sim_node", "state_rate:=0.0", "parameter 'state_rate' must be between 0.01 and 1000"),
    ("sim_node", "image_width:=3", "parameter 'image_width' must be between 16 and 4096"),
    ("sim_node", "markers:=/no/markers.yaml", "/no/markers.yaml"),
    ("franka_control_node", "backend:=magic", "parameter 'backend' must be one of sim"),
    ("franka_control_node", "control_rate:=.nan", "parameter 'control_rate': expected a finite"),
    ("vla_node", "port:=99999", "parameter 'port' must be a port number"),
    ("camera_node", "rate:=fast", "parameter 'rate': expected a finite number"),
    ("bag_recorder", "discovery_period:=-1.0", "parameter 'discovery_period' must be positive"),
    ("trace_player", "rate_scale:=-2.0", "parameter 'rate_scale' must be at least 0"),
    ("perception_node", "backend:=magic", "unknown perception backend 'magic'"),
    ("perception_node", "publish_rate:=-1.0", "parameter 'publish_rate' must be 0 (off) or"),
    ("perception_node", "extrinsics:=/no/such.yaml", "/no/such.yaml"),
    ("world_state_node", "rate:=0.0", "parameter 'rate' must be between 0.01 and 1000"),
    ("world_state_node", "cameras:=['front']", "parameter 'scene' is required"),
    ("world_state_node", "stale_after:=-1.0", "parameter 'stale_after' must be positive"),
    ("primitives_node", "planner:=rrt", "parameter 'planner' must be 'ik' or 'moveit'"),
    ("primitives_node", "planner:=moveit", "planner 'moveit' needs moveit_py"),
    ("primitives_node", "scene:=/no/scene.yaml", "/no/scene.yaml"),
    ("primitives_node", "chunk_rate:=0.0", "parameter 'chunk_rate' must be between 0.01"),
]


@pytest.mark.parametrize(("node", "param", "says"), CASES,
                         ids=[f"{n}-{p.split(':=')[0]}" for n, p, _ in CASES])
def test_a_bad_parameter_is_one_error_line(node: str, param: str, says: str) -> None:
    proc = subprocess.run([sys.executable, "-m", f"mango.nodes.{node}", "--ros-args",
                           "-p", param], capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and says in errors[0], out


def test_an_integer_is_accepted_for_a_rate() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mango.nodes.oracle_node", "--ros-args",
                             "-p", "marker_rate:=5", "-p", "hold:=2.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "listening on /world_state" in line, line
    finally:
        proc.send_signal(2)
        proc.wait(timeout=10)
