"""perception_node with real rclpy: on the real sim (sim_node's images, depth, camera_info,
segmentation and tf), and on frames a test camera publishes (what a camera may get wrong).

`Detect` always answers: unknown phrases, regions, out-of-view objects, an unknown camera,
no CameraInfo and an empty depth image come back as reasons, never as a failed call."""

from __future__ import annotations

import math
import time

import numpy as np
from rclpy.node import Node
from support.fake_camera import FakeCamera, flat_table
from support.ros import Processes, call_service, wait_for
from visualization_msgs.msg import MarkerArray

from mango.nodes.common import latched_qos
from mango.ros.detection_msg import detection_from_msg
from mango.ros.world_state_msg import msg_to_state
from mango_ros.msg import Detections, SegmentationLabels, WorldState
from mango_ros.srv import Detect, ResetScene

SCENE = "libero10_stove_moka"


def _detect(node: Node, ns: str, phrases: list[str], camera: str = "",
            max_results: int = 1) -> Detect.Response:
    return call_service(node, Detect, f"{ns}/perception_node/detect",
                        Detect.Request(phrases=phrases, camera=camera, max_results=max_results),
                        timeout=30)


def test_detect_on_the_sim(ros_node: Node, processes: Processes, namespace: str) -> None:
    states: list[WorldState] = []
    published: list[Detections] = []
    markers: list[MarkerArray] = []
    ros_node.create_subscription(WorldState, f"{namespace}/world_state", states.append, 10)
    ros_node.create_subscription(Detections, f"{namespace}/detections", published.append, 10)
    ros_node.create_subscription(MarkerArray, f"{namespace}/detection_markers", markers.append,
                                 10)
    processes.start("sim", "mango.nodes.sim_node", "-r", f"__ns:={namespace}",
                    "-p", f"scene:={SCENE}", "-p", "camera_rate:=5.0",
                    "-p", "cameras:=['front', 'wrist']", "-p", "image_width:=320",
                    "-p", "image_height:=240", "-p", "segmentation:=true")
    processes.start("perception", "mango.nodes.perception_node", "-r", f"__ns:={namespace}",
                    "-p", "backend:=sim", "-p", "cameras:=['front', 'wrist']",
                    "-p", "publish_rate:=2.0", "-p", "phrases:=['the frying pan']")

    def answered() -> Detect.Response | None:
        r = _detect(ros_node, namespace, ["the moka pot"])
        return r if r.success else None

    reply = wait_for(answered, timeout=90, what="a Detect answered from sim frames")
    wait_for(lambda: states, timeout=30, what="a world state")
    truth = msg_to_state(states[-1])
    ((det_msg,),) = [reply.detections]
    det = detection_from_msg(det_msg, (240, 320))
    assert det.entity_id == "moka_pot_1" and det.camera == "front"
    assert det_msg.header.frame_id == "world" and det_msg.camera_frame_id == "front_camera"
    assert np.linalg.norm(np.subtract(det.centroid, truth.objects["moka_pot_1"].position)) < 0.01
    assert det.mask is not None and det.mask.sum() > 50
    x0, y0, x1, y1 = det.box_2d
    assert not det.mask[y0:y1, x0:x1].all()  # a silhouette, not its box
    assert det.mask.sum() == det.mask[y0:y1, x0:x1].sum()

    reply = _detect(ros_node, namespace, ["a purple unicorn", "the cook region",
                                          "the moka pot"], camera="front")
    assert reply.success and [d.entity_id for d in reply.detections] == ["moka_pot_1"]
    reasons = dict(zip(reply.unmatched, reply.reasons, strict=True))
    assert "no scene entity matches 'a purple unicorn'" in reasons["a purple unicorn"]
    assert "region, which has no pixels" in reasons["the cook region"]

    # the wrist camera is carried: its pose comes from sim_node's tf at the image's stamp
    wrist = _detect(ros_node, namespace, ["the moka pot", "the frying pan", "the stove"],
                    camera="wrist")
    assert wrist.success and wrist.detections
    front = {d.entity_id: d for d in _detect(
        ros_node, namespace, ["the moka pot", "the frying pan", "the stove"]).detections}
    compared = 0
    for d in wrist.detections:
        if d.box.x_offset > 0 and d.box.y_offset > 0 and d.box.x_offset + d.box.width < 320 \
                and d.box.y_offset + d.box.height < 240:
            a, b = d.centroid, front[d.entity_id].centroid
            assert math.dist((a.x, a.y, a.z), (b.x, b.y, b.z)) < 0.015
            compared += 1
    assert compared >= 1
    for phrase, why in zip(wrist.unmatched, wrist.reasons, strict=True):
        assert "not in view of camera 'wrist'" in why, (phrase, why)

    unknown = _detect(ros_node, namespace, ["the moka pot"], camera="top")
    assert not unknown.success and "unknown camera 'top'" in unknown.message

    # published at the rate, for the `phrases` parameter, and as rviz markers
    wait_for(lambda: any(m.detections and m.detections[0].phrase == "the frying pan"
                         for m in published), timeout=20, what="detections at publish_rate")
    wait_for(lambda: any(len(m.markers) >= 3 for m in markers), timeout=20, what="markers")
    assert "Traceback" not in processes.log("perception")


def test_after_a_reset_nothing_is_seen_of_the_world_before(ros_node: Node,
                                                          processes: Processes,
                                                          namespace: str) -> None:
    """Resets between two scenes that share no object, each followed at once by Detects: every
    detection lies where its entity is in its own scene (never the new scene's labels over a
    capture of the old one, whose stamps the restarted clock makes look recent), and the new
    scene is seen soon. sim_node publishes no image of a world after the reset that ended it,
    and perception_node forgets its captures when the labels of a new episode come."""
    a, b = "libero10_soup_sauce_basket", "libero10_mugs_plates"
    states: list[WorldState] = []
    ros_node.create_subscription(WorldState, f"{namespace}/world_state", states.append, 10)
    processes.start("sim", "mango.nodes.sim_node", "-r", f"__ns:={namespace}",
                    "-p", f"scene:={a}", "-p", "camera_rate:=10.0", "-p", "cameras:=['front']",
                    "-p", "image_width:=160", "-p", "image_height:=120",
                    "-p", "segmentation:=true")
    processes.start("perception", "mango.nodes.perception_node", "-r", f"__ns:={namespace}",
                    "-p", "backend:=sim", "-p", "cameras:=['front']")
    phrases = {a: "the tomato sauce", b: "the white mug"}
    wait_for(lambda: _detect(ros_node, namespace, [phrases[a]]).success and states,
             timeout=90, what="a first detection")
    def objects() -> dict[str, tuple[float, ...]]:
        return {e: tuple(o.position) for e, o in msg_to_state(states[-1]).objects.items()}

    truth = {a: objects()}
    for i, scene in enumerate([b, a, b, a]):
        reply = call_service(ros_node, ResetScene, f"{namespace}/sim_node/reset",
                             ResetScene.Request(scene=scene, seed=0,
                                                request_id=f"switch-{i}"), timeout=60)
        assert reply.success, reply.message
        n = len(states)
        wait_for(lambda n=n: len(states) > n + 2 and states[-1].objects, timeout=20,
                 what="world states after the reset")
        truth[scene] = objects()
        seen_new, deadline = False, time.monotonic() + 20
        while not seen_new and time.monotonic() < deadline:
            for d in _detect(ros_node, namespace, list(phrases.values())).detections:
                det = detection_from_msg(d, (120, 160))
                own = next(s for s, objs in truth.items() if det.entity_id in objs)
                where = truth[own][det.entity_id]
                assert np.linalg.norm(np.subtract(det.centroid, where)) < 0.03, (
                    i, scene, det.entity_id, det.centroid, where)
                seen_new |= own == scene
        assert seen_new, f"reset {i}: the new scene was not seen within 20 s"


def test_what_a_camera_gets_wrong(ros_node: Node, processes: Processes,
                                  namespace: str) -> None:
    """A camera of our own: no CameraInfo yet, then CameraInfo with an empty depth image."""
    processes.start("perception", "mango.nodes.perception_node", "-r", f"__ns:={namespace}",
                    "-p", "backend:=sim", "-p", f"scene:={SCENE}", "-p", "cameras:=['front']")
    cam = FakeCamera(ros_node, namespace)
    labels = ros_node.create_publisher(SegmentationLabels,
                                       f"{namespace}/camera/segmentation_labels", latched_qos(1))
    labels.publish(SegmentationLabels(scene=SCENE, ids=["main_table", "moka_pot_1"]))
    first = wait_for(lambda: _detect(ros_node, namespace, ["the moka pot"]), timeout=60,
                     what="the perception service")
    assert not first.success and "no depth or segmentation image received yet" in first.message
    rgb, _ = flat_table(32, 24)
    empty = np.full((24, 32), np.nan)
    seg = np.full((24, 32), 2)

    def reply_says(text: str, with_info: bool) -> Detect.Response | None:
        cam.send(rgb, empty, info=with_info, segmentation=seg)
        r = _detect(ros_node, namespace, ["the moka pot"])
        return r if text in r.message else None

    r = wait_for(lambda: reply_says("has no CameraInfo yet", False), timeout=20,
                 what="'no CameraInfo'")
    assert not r.success and r.unmatched == ["the moka pot"] and "CameraInfo" in r.reasons[0]
    # CameraInfo, but no tf for front_camera: no pose; the node says so
    r = wait_for(lambda: reply_says("no pose in the world", True), timeout=20, what="no pose")
    assert not r.success
    cam.place()
    r = wait_for(lambda: reply_says("the depth image is empty", True), timeout=20,
                 what="'empty depth'")
    assert not r.success and "empty" in r.reasons[0]
    assert "Traceback" not in processes.log("perception")
