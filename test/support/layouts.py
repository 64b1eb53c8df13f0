"""The topics and frames the rviz and Foxglove layouts refer to, read from the files."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
RVIZ = REPO / "config" / "rviz" / "mango.rviz"
FOXGLOVE = REPO / "config" / "foxglove" / "mango_layout.json"


def topics_in(obj: object) -> set[str]:
    """Every string (or key) that is a topic name: starts with '/'; Foxglove's message paths
    (`/topic.field`) count as their topic."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= topics_in(v)
        out |= {k for k in obj if isinstance(k, str) and k.startswith("/")}
    elif isinstance(obj, list):
        for v in obj:
            out |= topics_in(v)
    elif isinstance(obj, str) and obj.startswith("/"):
        out.add(obj.split(".")[0])
    return out


def rviz_config() -> dict:
    return yaml.safe_load(RVIZ.read_text())


def foxglove_layout() -> dict:
    return json.loads(FOXGLOVE.read_text())


def layout_topics() -> set[str]:
    """What the two layouts show; rviz's TF and RobotModel displays read /tf and /tf_static
    (rviz_default_plugins' TF display and the tf2 buffer behind every display), and Foxglove's
    3D panel does too, though neither file names them."""
    shown = topics_in(rviz_config()["Visualization Manager"]["Displays"])
    shown |= topics_in(foxglove_layout()["configById"])
    return shown | {"/tf", "/tf_static"}


def fixed_frames() -> set[str]:
    return {rviz_config()["Visualization Manager"]["Global Options"]["Fixed Frame"],
            foxglove_layout()["configById"]["3D!oracle"]["followTf"]}
