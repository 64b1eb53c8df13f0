"""`make setup`'s tf2_msgs step (scripts/build_tf2_msgs.sh) on a fresh prefix: the package it
builds is the standard one (ros2/geometry2 tf2_msgs/msg/TFMessage.msg,
`geometry_msgs/TransformStamped[] transforms`; its RIHS01 type hash equals the one rosbags
ships for ROS 2 Kilted's tf2_msgs/msg/TFMessage), imports and serializes; with a system
ROS 2's tf2_msgs on the path the step builds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mango.bags.types import default_types

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "build_tf2_msgs.sh"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHON=sys.executable, VIRTUAL_ENV=sys.prefix, **extra)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    return env


def test_builds_the_standard_tfmessage_into_a_fresh_prefix(tmp_path: Path) -> None:
    prefix, build = tmp_path / "prefix", tmp_path / "build"
    out = subprocess.run(["bash", str(SCRIPT), str(prefix), str(build)], env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"built into {prefix}" in out.stdout
    desc = json.loads((prefix / "share/tf2_msgs/msg/TFMessage.json").read_text())
    hashes = {h["type_name"]: h["hash_string"] for h in desc["type_hashes"]}
    assert hashes["tf2_msgs/msg/TFMessage"] == default_types().type_hash("tf2_msgs/msg/TFMessage")
    assert (prefix / "share/ament_index/resource_index/packages/tf2_msgs").is_file()

    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import tf2_msgs; "
            "assert tf2_msgs.__file__.startswith(sys.argv[1]), tf2_msgs.__file__; "
            "from tf2_msgs.msg import TFMessage; from geometry_msgs.msg import TransformStamped;"
            "from rclpy.serialization import serialize_message, deserialize_message;"
            "m = TFMessage(transforms=[TransformStamped(child_frame_id='fr3_link1')]);"
            "print(deserialize_message(serialize_message(m), TFMessage).transforms[0]"
            ".child_frame_id)")
    env = _env(LD_LIBRARY_PATH=f"{prefix / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    ran = subprocess.run([sys.executable, "-c", code, str(site)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "fr3_link1"


def test_a_system_tf2_msgs_is_left_alone(tmp_path: Path) -> None:
    system = tmp_path / "opt_ros" / "tf2_msgs"
    system.mkdir(parents=True)
    (system / "__init__.py").write_text("")
    prefix = tmp_path / "prefix"
    out = subprocess.run(["bash", str(SCRIPT), str(prefix), str(tmp_path / "build")],
                         env=_env(PYTHONPATH=f"{system.parent}:{os.environ.get('PYTHONPATH', '')}"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "using the system's" in out.stdout and str(system) in out.stdout
    assert not prefix.exists()
