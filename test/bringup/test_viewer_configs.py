"""The rviz and Foxglove layouts parse and show the topics the nodes publish."""

from __future__ import annotations

from support.layouts import foxglove_layout, rviz_config, topics_in


def test_rviz_config_shows_markers_cameras_and_robot() -> None:
    cfg = rviz_config()
    displays = cfg["Visualization Manager"]["Displays"]
    classes = {d["Class"] for d in displays}
    assert {"rviz_default_plugins/MarkerArray", "rviz_default_plugins/Image",
            "rviz_default_plugins/RobotModel"} <= classes
    topics = topics_in(displays)
    assert {"/oracle/markers", "/camera/front/image_raw", "/camera/wrist/image_raw",
            "/robot_description"} <= topics
    assert cfg["Visualization Manager"]["Global Options"]["Fixed Frame"] == "world"


def test_foxglove_layout_references_our_topics() -> None:
    layout = foxglove_layout()
    panels = set(layout["configById"])
    assert {"3D!oracle", "Image!front", "Image!wrist"} <= panels
    topics = topics_in(layout["configById"])
    assert {"/oracle/markers", "/oracle/step_verdicts", "/oracle/task_verdict",
            "/camera/front/image_raw"} <= topics

    def leaves(node: object) -> set[str]:
        if isinstance(node, str):
            return {node}
        assert isinstance(node, dict)
        return leaves(node["first"]) | leaves(node["second"])

    assert leaves(layout["layout"]) == panels
