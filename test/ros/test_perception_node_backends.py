"""perception_node with the classical backends (`tabletop`, `aruco`) and real rclpy: on the
real sim's frames (sim_node's colour, depth, CameraInfo and tf, markers rendered on the
entities), and on a test camera's frames for what each backend must answer with a reason (an
object out of view, no CameraInfo yet, an empty depth image). The learned backends run through
the node in `test/perception/open_vocabulary_cases.py` (transformers on their path)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from rclpy.node import Node
from support.fake_camera import FakeCamera, flat_table
from support.ros import Processes, call_service, wait_for

from mango.ros.detection_msg import detection_from_msg
from mango.ros.world_state_msg import msg_to_state
from mango.sim.markers import auto_marker_map
from mango.sim.scene import as_scene
from mango_ros.msg import WorldState
from mango_ros.srv import Detect

SCENE = "mugs_plates"


def _detect(node: Node, ns: str, name: str, phrases: list[str]) -> Detect.Response:
    return call_service(node, Detect, f"{ns}/{name}/detect",
                        Detect.Request(phrases=phrases, camera="front", max_results=1),
                        timeout=30)


def _marker_file(tmp_path, scene: str) -> str:
    path = tmp_path / "markers.yaml"
    path.write_text(yaml.safe_dump(auto_marker_map(as_scene(scene)).model_dump(mode="json")))
    return str(path)


def _perception(processes: Processes, ns: str, backend: str, *extra: str) -> str:
    name = f"perception_{backend}"
    processes.start(name, "mango.nodes.perception_node", "-r", f"__ns:={ns}",
                    "-r", f"__node:={name}", "-p", f"backend:={backend}",
                    "-p", "cameras:=['front']", *extra)
    return name


def test_tabletop_and_aruco_on_the_sim(ros_node: Node, processes: Processes, namespace: str,
                                       tmp_path) -> None:
    states: list[WorldState] = []
    ros_node.create_subscription(WorldState, f"{namespace}/world_state", states.append, 10)
    processes.start("sim", "mango.nodes.sim_node", "-r", f"__ns:={namespace}",
                    "-p", f"scene:={SCENE}", "-p", "camera_rate:=2.0",
                    "-p", "cameras:=['front']", "-p", "image_width:=640",
                    "-p", "image_height:=480", "-p", "markers:=auto")
    tabletop = _perception(processes, namespace, "tabletop", "-p", f"scene:={SCENE}")
    aruco = _perception(processes, namespace, "aruco", "-p", f"scene:={SCENE}",
                        "-p", f"markers:={_marker_file(tmp_path, SCENE)}")

    def answered(name: str) -> Detect.Response | None:
        r = _detect(ros_node, namespace, name, ["the red mug", "the quantum flux"])
        return r if r.success else None

    for name, near in ((tabletop, 0.025), (aruco, 0.01)):
        reply = wait_for(lambda n=name: answered(n), timeout=120, what=f"{name} answered")
        wait_for(lambda: states, timeout=30, what="a world state")
        truth = msg_to_state(states[-1]).objects["red_coffee_mug_1"].position
        (msg,) = reply.detections
        det = detection_from_msg(msg, (480, 640))
        assert msg.header.frame_id == "world" and det.camera == "front"
        # tabletop sees the visible surface: its centre is biased toward the camera by about
        # a mug's radius (as test/perception/test_tabletop.py); aruco the marker's pose
        assert np.linalg.norm(np.subtract(det.centroid, truth)) < near, name
        x0, y0, x1, y1 = det.box_2d
        assert 0 <= x0 < x1 <= 640 and 0 <= y0 < y1 <= 480
        assert reply.unmatched == ["the quantum flux"] and reply.reasons[0], name
    assert det.entity_id == "red_coffee_mug_1"  # aruco names what its marker sits on
    for name in (tabletop, aruco):
        assert "Traceback" not in processes.log(name)


@pytest.mark.parametrize(("backend", "out_of_view"), [
    ("tabletop", "nothing stands on the table"),
    ("aruco", "not in view"),
])
def test_what_each_backend_answers_for_a_bad_frame(ros_node: Node, processes: Processes,
                                                   namespace: str, tmp_path, backend: str,
                                                   out_of_view: str) -> None:
    extra = (["-p", f"markers:={_marker_file(tmp_path, SCENE)}", "-p", f"scene:={SCENE}"]
             if backend == "aruco" else [])
    name = _perception(processes, namespace, backend, *extra)
    cam = FakeCamera(ros_node, namespace)
    rgb, depth = flat_table()

    def says(text: str, send) -> Detect.Response | None:
        send()
        r = _detect(ros_node, namespace, name, ["the red mug"])
        return r if text in r.message or any(text in w for w in r.reasons) else None

    r = wait_for(lambda: says("has no CameraInfo yet", lambda: cam.send(rgb, depth, info=False)),
                 timeout=60, what="'no CameraInfo'")
    assert not r.success and r.unmatched == ["the red mug"]
    cam.place()
    r = wait_for(lambda: says("the depth image is empty",
                              lambda: cam.send(rgb, np.full_like(depth, np.nan))),
                 timeout=20, what="'empty depth'")
    assert not r.success
    r = wait_for(lambda: says(out_of_view, lambda: cam.send(rgb, depth)), timeout=20,
                 what=f"'{out_of_view}'")
    assert r.success and not r.detections and r.unmatched == ["the red mug"], r.reasons
    assert "Traceback" not in processes.log(name)
