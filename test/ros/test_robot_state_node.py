"""robot_state_node with real rclpy: what a late-joining rviz gets (the URDF and the fixed
joints, latched), and one transform per moving joint for each joint state, stamped with it.

QoS as ros/robot_state_publisher sets it (src/robot_state_publisher.cpp: `robot_description`
QoS(1).transient_local(); tf2_ros's static broadcaster: depth 1, reliable, transient local;
joint states with sensor-data QoS).
"""

from __future__ import annotations

import itertools
import math
import threading
import time

import numpy as np
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from support.ros import Processes, wait_for
from tf2_msgs.msg import TFMessage

from mango.control import load_robot
from mango.control.kinematics import fr3_joint_transform
from mango.geometry import quat_to_mat

pytestmark = pytest.mark.ros

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Inbox:
    def __init__(self) -> None:
        self.items: list = []
        self.lock = threading.Lock()

    def __call__(self, msg: object) -> None:
        with self.lock:
            self.items.append(msg)

    def copy(self) -> list:
        with self.lock:
            return list(self.items)


def _joint_state(q: list[float], width: float, t: float) -> JointState:
    msg = JointState(name=[f"fr3_joint{i}" for i in range(1, 8)] + ["fr3_finger_joint1",
                                                                    "fr3_finger_joint2"])
    msg.position = [*q, width / 2, width / 2]
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), round((t % 1) * 1e9)
    return msg


def _warm_up(pub, tfs: Inbox, q: list[float]) -> int:
    """Publish states 1 s of stamps apart until a tf comes back (the node's side has matched
    our subscription then); returns how many tf messages that took."""
    for k in range(100):
        pub.publish(_joint_state(q, 0.04, 1.0 + k))
        try:
            wait_for(lambda: tfs.copy(), 0.1, "tf")
            break
        except AssertionError:
            continue
    time.sleep(0.2)
    return len(tfs.copy())


def test_description_static_and_moving_transforms(ros_node, namespace: str,
                                                  processes: Processes) -> None:
    processes.start("rsp", "mango.nodes.robot_state_node", "-r", f"__ns:={namespace}",
                    "-p", "publish_frequency:=1000.0")
    js_pub = ros_node.create_publisher(JointState, f"{namespace}/joint_states", 10)
    wait_for(lambda: js_pub.get_subscription_count() > 0, 20, "robot_state_node up")
    # subscribed after the node published: transient-local hands over the URDF and statics
    descriptions, statics, tfs = Inbox(), Inbox(), Inbox()
    ros_node.create_subscription(String, f"{namespace}/robot_description", descriptions,
                                 LATCHED)
    ros_node.create_subscription(TFMessage, f"{namespace}/tf_static", statics, LATCHED)
    ros_node.create_subscription(TFMessage, f"{namespace}/tf", tfs, 100)
    wait_for(lambda: descriptions.copy() and statics.copy(), 10, "latched description + statics")
    assert "<robot name=\"fr3\"" in descriptions.copy()[0].data
    static = {t.child_frame_id: t for t in statics.copy()[0].transforms}
    assert static["fr3_link0"].header.frame_id == "base"
    assert static["fr3_hand"].header.frame_id == "fr3_link8"
    assert static["fr3_link8"].transform.translation.z == pytest.approx(0.107)

    q = list(load_robot("fr3").home)
    n = _warm_up(js_pub, tfs, q)
    js_pub.publish(_joint_state(q, 0.06, 200.5))
    msg = wait_for(lambda: tfs.copy()[n] if len(tfs.copy()) > n else None, 10, "a tf message")
    got = {t.child_frame_id: t for t in msg.transforms}
    assert set(got) == {f"fr3_link{i}" for i in range(1, 8)} | {"fr3_leftfinger",
                                                                 "fr3_rightfinger"}
    for i in range(1, 8):
        t = got[f"fr3_link{i}"]
        assert t.header.frame_id == f"fr3_link{i - 1}"
        assert (t.header.stamp.sec, t.header.stamp.nanosec) == (200, 500_000_000)
        r = t.transform.rotation
        m = np.eye(4)
        m[:3, :3] = quat_to_mat([r.w, r.x, r.y, r.z])
        tr = t.transform.translation
        m[:3, 3] = [tr.x, tr.y, tr.z]
        np.testing.assert_allclose(m, fr3_joint_transform(i, q[i - 1]), atol=1e-9)
    assert got["fr3_leftfinger"].transform.translation.y == pytest.approx(0.03)

    # bad joint states are refused, not turned into NaN transforms
    bad = _joint_state(q, 0.06, 201.0)
    bad.position[0] = math.nan
    js_pub.publish(bad)
    js_pub.publish(_joint_state(q, 0.02, 202.0))
    wait_for(lambda: len(tfs.copy()) >= n + 2, 10, "the next good state's tf")
    time.sleep(0.2)
    later = tfs.copy()[n + 1:]
    assert len(later) == 1
    assert {t.child_frame_id: t for t in later[0].transforms}[
        "fr3_leftfinger"].transform.translation.y == pytest.approx(0.01)
    assert "not finite" in processes.log("rsp")


def test_publish_frequency_throttles_by_stamp_and_a_reset_publishes_at_once(
        ros_node, namespace: str, processes: Processes) -> None:
    processes.start("rsp", "mango.nodes.robot_state_node", "-r", f"__ns:={namespace}",
                    "-p", "publish_frequency:=10.0")
    js_pub = ros_node.create_publisher(JointState, f"{namespace}/joint_states", 100)
    tfs = Inbox()
    ros_node.create_subscription(TFMessage, f"{namespace}/tf", tfs, 100)
    wait_for(lambda: js_pub.get_subscription_count() > 0
             and ros_node.count_publishers(f"{namespace}/tf") > 0, 20, "robot_state_node up")
    q = list(load_robot("fr3").home)
    n = _warm_up(js_pub, tfs, q)
    # 100 Hz of stamps sent at 50 Hz: at 10 Hz of stamps 500.0 and 500.1 (a throttle by arrival
    # time would publish every fifth, 0.05 s of stamps apart)
    for k in range(20):
        js_pub.publish(_joint_state(q, 0.04, 500.0 + k * 0.01))
        time.sleep(0.02)
    time.sleep(0.5)
    # time went back (a sim reset): published at once. Asked until its tf comes (the node's
    # joint_states are best effort, as robot_state_publisher's: a copy may be dropped)
    for _ in range(20):
        js_pub.publish(_joint_state(q, 0.04, 0.5))
        try:
            wait_for(lambda: any(_stamp(m) == 0.5 for m in tfs.copy()[n:]), 0.5, "reset tf")
            break
        except AssertionError:
            continue
    time.sleep(0.3)
    stamps = [_stamp(m) for m in tfs.copy()[n:]]
    assert stamps[-1] == 0.5 and stamps.count(0.5) == 1, stamps
    burst = stamps[:-1]
    # the first of the burst that arrived, then one per 0.1 s of stamps (best effort, a loaded
    # machine may drop some of the burst: then it starts later, never more often)
    assert burst and burst[0] < 500.1 + 1e-9, stamps
    assert all(b - a >= 0.1 - 1e-9 for a, b in itertools.pairwise(burst)), stamps


def _stamp(msg: TFMessage) -> float:
    s = msg.transforms[0].header.stamp
    return round(s.sec + s.nanosec * 1e-9, 3)


def test_a_bad_urdf_parameter_stops_the_node_with_one_line(processes: Processes,
                                                           tmp_path) -> None:
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'/>")
    proc = processes.start("rsp", "mango.nodes.robot_state_node",
                           "-p", f"robot_description_file:={bad}")
    assert proc.wait(timeout=30) == 1
    log = processes.log("rsp")
    assert f"error: {bad}:1" in log and "not valid XML" in log
