"""The rviz and Foxglove layouts parse and show the topics the nodes publish."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _topics_in(obj: object) -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= _topics_in(v)
        out |= {k for k in obj if isinstance(k, str) and k.startswith("/")}
    elif isinstance(obj, list):
        for v in obj:
            out |= _topics_in(v)
    elif isinstance(obj, str) and obj.startswith("/"):
        out.add(obj.split(".")[0])
    return out


def test_rviz_config_shows_markers_cameras_and_robot() -> None:
    cfg = yaml.safe_load((REPO / "config" / "rviz" / "mango.rviz").read_text())
    displays = cfg["Visualization Manager"]["Displays"]
    classes = {d["Class"] for d in displays}
    assert {"rviz_default_plugins/MarkerArray", "rviz_default_plugins/Image",
            "rviz_default_plugins/RobotModel"} <= classes
    topics = _topics_in(displays)
    assert {"/oracle/markers", "/camera/front/image_raw", "/camera/wrist/image_raw",
            "/robot_description"} <= topics
    assert cfg["Visualization Manager"]["Global Options"]["Fixed Frame"] == "world"


def test_foxglove_layout_references_our_topics() -> None:
    layout = json.loads((REPO / "config" / "foxglove" / "mango_layout.json").read_text())
    panels = set(layout["configById"])
    assert {"3D!oracle", "Image!front", "Image!wrist"} <= panels
    topics = _topics_in(layout["configById"])
    assert {"/oracle/markers", "/oracle/step_verdicts", "/oracle/task_verdict",
            "/camera/front/image_raw"} <= topics

    def leaves(node: object) -> set[str]:
        if isinstance(node, str):
            return {node}
        assert isinstance(node, dict)
        return leaves(node["first"]) | leaves(node["second"])

    assert leaves(layout["layout"]) == panels
