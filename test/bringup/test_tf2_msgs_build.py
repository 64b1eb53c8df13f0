"""`make setup`'s tf2_msgs step (scripts/build_tf2_msgs.sh): the package it built into the
venv is the standard one (ros2/geometry2 tf2_msgs/msg/TFMessage.msg,
`geometry_msgs/TransformStamped[] transforms`; its RIHS01 type hash equals the one rosbags
ships for ROS 2 Kilted's tf2_msgs/msg/TFMessage), imports from the venv and serializes; with a
system ROS 2's tf2_msgs on the path the step builds nothing.

The build itself is `make setup`'s, run by `make test` on every fresh clone (its stamp depends
on the script, so an edited script is built again): checking what it built costs nothing,
where building it again into a temporary prefix cost a minute of the suite (#33)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mango.bags.types import default_types

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "build_tf2_msgs.sh"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHON=sys.executable, VIRTUAL_ENV=sys.prefix, **extra)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    return env


def test_the_setup_built_the_standard_tfmessage_into_the_venv() -> None:
    import tf2_msgs
    from geometry_msgs.msg import TransformStamped
    from rclpy.serialization import deserialize_message, serialize_message
    from tf2_msgs.msg import TFMessage

    prefix = Path(sys.prefix)
    assert Path(tf2_msgs.__file__).is_relative_to(prefix), tf2_msgs.__file__
    desc = json.loads((prefix / "share/tf2_msgs/msg/TFMessage.json").read_text())
    hashes = {h["type_name"]: h["hash_string"] for h in desc["type_hashes"]}
    assert hashes["tf2_msgs/msg/TFMessage"] == default_types().type_hash("tf2_msgs/msg/TFMessage")
    assert (prefix / "share/ament_index/resource_index/packages/tf2_msgs").is_file()
    m = TFMessage(transforms=[TransformStamped(child_frame_id="fr3_link1")])
    back = deserialize_message(serialize_message(m), TFMessage)
    assert back.transforms[0].child_frame_id == "fr3_link1"


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
