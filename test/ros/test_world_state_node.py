"""world_state_node with real rclpy on the real sim: sim_node renders marker plates and
publishes its truth on `world_state_truth`; world_state_node hears only the cameras (through a
relay in this process, so a test can stop a camera or slip in broken messages) and
`joint_states`, and its `world_state` must agree with the truth.

Diagnostics: one `diagnostic_msgs/DiagnosticStatus` per track, level OK/WARN, `values` as
key/value pairs (ros2/common_interfaces, diagnostic_msgs/msg/DiagnosticStatus.msg).
"""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Bool, Header
from support.ros import Processes, call_service, wait_for

from mango.ros.images import camera_info, numpy_to_image
from mango.ros.world_state_msg import msg_to_state, stamp_from_seconds
from mango.sim.markers import auto_marker_map
from mango.sim.scene import FR3_JOINTS as ARM
from mango.sim.scene import as_scene
from mango_ros.msg import WorldState
from mango_ros.srv import ResetScene

SCENE = "libero10_mugs_plates"
LAB = Path(__file__).resolve().parents[2] / "config" / "lab"
CAMERAS = ("front", "wrist")
KINDS = (("image_raw", Image), ("depth", Image), ("camera_info", CameraInfo))


class Relay:
    """sim_node's camera topics -> `relay/<camera>/<topic>` while `on` is set."""

    def __init__(self, node: Node, ns: str) -> None:
        self.on = threading.Event()
        self.on.set()
        self.pubs: dict[tuple[str, str], object] = {}
        for cam in CAMERAS:
            for topic, kind in KINDS:
                pub = node.create_publisher(kind, f"{ns}/relay/{cam}/{topic}",
                                            qos_profile_sensor_data)
                self.pubs[(cam, topic)] = pub
                node.create_subscription(kind, f"{ns}/camera/{cam}/{topic}",
                                         lambda m, p=pub: self.on.is_set() and p.publish(m),
                                         qos_profile_sensor_data)


def _start(processes: Processes, ns: str, *extra: str) -> None:
    processes.start("sim", "mango.nodes.sim_node", "-r", f"__ns:={ns}",
                    "-r", "world_state:=world_state_truth", "-p", f"scene:={SCENE}",
                    "-p", "seed:=1", "-p", "markers:=auto", "-p", "camera_rate:=5.0",
                    "-p", "state_rate:=50.0", "-p", "image_width:=640",
                    "-p", "image_height:=480")
    remap = [a for cam in CAMERAS for topic, _ in KINDS
             for a in ("-r", f"camera/{cam}/{topic}:=relay/{cam}/{topic}")]
    processes.start("estimator", "mango.nodes.world_state_node", "-r", f"__ns:={ns}",
                    *remap, "-p", f"scene:={SCENE}", "-p", "stale_after:=1.0", *extra)


def _settled(est: list[WorldState], seen: set[str]) -> WorldState:
    """An estimate published after the tracks that said `seen` (tracks and states are two
    topics: the newest state may predate the newest tracks)."""
    n = len(est)
    wait_for(lambda: len(est) >= n + 2, timeout=10, what="two more estimates")
    return est[-1]


def _levels(msg: DiagnosticArray) -> dict[str, tuple[int, dict[str, str]]]:
    return {s.hardware_id: (ord(s.level), {kv.key: kv.value for kv in s.values})
            for s in msg.status}


def test_estimate_agrees_with_the_sim_and_goes_stale_when_cameras_stop(
        ros_node: Node, processes: Processes, namespace: str) -> None:
    truth: list[WorldState] = []
    est: list[WorldState] = []
    tracks: list[DiagnosticArray] = []
    ros_node.create_subscription(WorldState, f"{namespace}/world_state_truth", truth.append, 100)
    ros_node.create_subscription(WorldState, f"{namespace}/world_state", est.append, 100)
    ros_node.create_subscription(DiagnosticArray, f"{namespace}/world_state_node/tracks",
                                 tracks.append, 10)
    relay = Relay(ros_node, namespace)
    _start(processes, namespace)
    marked = {m.entity for m in auto_marker_map(as_scene(SCENE)).markers}

    def seen() -> set[str]:
        if not tracks:
            return set()
        return {e for e, (level, v) in _levels(tracks[-1]).items()
                if level == ord(DiagnosticStatus.OK) and v["source"].startswith("marker")}

    # the aruco test sees every plate but one (occluded) from the front camera alone
    wait_for(lambda: len(seen() & marked) >= len(marked) - 1, timeout=120,
             what="markers tracked on every entity but one")
    wait_for(lambda: len(est) >= 3 and truth, timeout=20, what="estimates and the truth")
    tracked = seen() & marked
    e = msg_to_state(_settled(est, tracked))
    wait_for(lambda: truth, what="the sim's world state")
    t = min((msg_to_state(m) for m in truth[-200:]), key=lambda s: abs(s.t - e.t))
    assert abs(t.t - e.t) < 0.05
    compared = 0
    for eid in tracked:
        d = math.dist(e.objects[eid].position, t.objects[eid].position)
        assert d < 0.01, (eid, d)
        compared += 1
    assert compared >= len(marked) - 1
    # the hand from FK of the joint states, the gripper from the finger joints
    assert math.dist(e.objects["robot_hand"].position, t.objects["robot_hand"].position) < 0.01
    assert e.gripper is not None and t.gripper is not None
    assert e.gripper.width is not None and t.gripper.width is not None
    assert abs(e.gripper.width - t.gripper.width) < 1e-3
    # published at about `rate` (15 Hz), stamped with the estimate's (the sim's) time
    n0 = len(est)
    wait_for(lambda: len(est) >= n0 + 15, timeout=5, what="15 estimates")

    # the cameras stop: joint states keep the time going, the tracks age and go stale
    relay.on.clear()
    wait_for(lambda: not (seen() & marked), timeout=10, what="every marker track stale")
    level, values = _levels(tracks[-1])[next(iter(marked))]
    assert level == ord(DiagnosticStatus.WARN) and float(values["age"]) > 1.0
    before = msg_to_state(est[-1])
    # the joint states move the estimate's time on; unseen objects keep their last pose
    after = wait_for(lambda: (s := msg_to_state(est[-1])).t > before.t + 0.5 and s,
                     timeout=10, what="the estimate's time moving on")
    for eid in marked:
        assert math.dist(after.objects[eid].position, before.objects[eid].position) < 1e-6

    # ... and come back when they restart
    relay.on.set()
    wait_for(lambda: len(seen() & marked) >= len(marked) - 1, timeout=30, what="tracks back")
    assert "Traceback" not in processes.log("estimator")


def test_broken_inputs_are_skipped_and_the_node_goes_on(
        ros_node: Node, processes: Processes, namespace: str) -> None:
    est: list[WorldState] = []
    ros_node.create_subscription(WorldState, f"{namespace}/world_state", est.append, 100)
    relay = Relay(ros_node, namespace)
    relay.on.clear()  # the test is the only camera
    joints = ros_node.create_publisher(JointState, f"{namespace}/joint_states", 10)
    _start(processes, namespace)
    wait_for(lambda: len(est) >= 3, timeout=90, what="estimates from the joint states")
    t_now = msg_to_state(est[-1]).t

    def header(camera: str, k: int) -> Header:
        h = Header(frame_id=f"{camera}_camera")  # a capture of its own for each case
        h.stamp.sec, h.stamp.nanosec = stamp_from_seconds(t_now + 0.001 * k)
        return h

    def send(camera: str, k: int, rgb: Image, depth: Image | None = None,
             info: CameraInfo | None = None) -> None:
        h = header(camera, k)
        for topic, msg in (("camera_info", info), ("image_raw", rgb), ("depth", depth)):
            if msg is not None:
                msg.header = h
                relay.pubs[(camera, topic)].publish(msg)  # type: ignore[attr-defined]
        time.sleep(0.05)

    black = numpy_to_image(np.zeros((24, 32, 3), np.uint8), "rgb8")
    nan_depth = numpy_to_image(np.full((24, 32), np.nan, np.float32), "32FC1")
    short = numpy_to_image(np.zeros((24, 32, 3), np.uint8), "rgb8")
    short.data = bytes(short.data)[:100]  # shorter than its width x height says
    yuv = Image(encoding="yuv422_yuy2", width=32, height=24, step=64, data=bytes(64 * 24))
    nan_info = camera_info(640, 480, 500.0, 500.0, 320.0, 240.0)  # another size
    fits = camera_info(32, 24, 30.0, 30.0, 15.5, 11.5)
    cases = [  # camera, images (and CameraInfo, sent first), what the node must say
        ("front", short, nan_depth, None, "image data too short for 32x24 rgb8"),
        ("front", black, nan_depth, None, "camera 'front': no camera info received yet"),
        ("front", black, nan_depth, nan_info, "the image is 32x24 but CameraInfo says 640x480"),
        ("front", yuv, nan_depth, None, "unsupported image encoding 'yuv422_yuy2'"),
    ]
    k = iter(range(1, 10_000))
    for case in cases:
        # topics arrive in no fixed order: send the case again (a new capture) until it lands
        def landed(c: tuple = case) -> bool:
            send(c[0], next(k), c[1], c[2], c[3])
            return c[4] in processes.log("estimator")

        wait_for(landed, timeout=20, what=case[4])
    send("wrist", next(k), black, numpy_to_image(np.ones((24, 32), np.float32), "32FC1"),
         fits)  # fits, but no marker in sight
    joints.publish(JointState(header=header("front", next(k)), name=list(ARM),
                              position=[0.1]))
    joints.publish(JointState(header=header("front", next(k)), name=list(ARM),
                              position=[math.nan] * 7))
    n0 = len(est)
    wait_for(lambda: len(est) >= n0 + 10, timeout=10, what="estimates after broken inputs")
    log = processes.log("estimator")
    assert "Traceback" not in log
    for says in ("joint state skipped: index", "a joint position is not finite"):
        assert says in log, says
    for state in (msg_to_state(m) for m in est[n0:]):
        assert all(math.isfinite(v) for o in state.objects.values() for v in o.position)
    assert all(p.poll() is None for _, p in processes.procs)


@pytest.mark.parametrize(("param", "says"), [
    ("markers:=/no/markers.yaml", "/no/markers.yaml"),
    ("extrinsics:=/no/extrinsics.yaml", "/no/extrinsics.yaml"),
    ("device_topics:=['flat_stove_1']", "'flat_stove_1' is not <device>=<topic>"),
    ("device_topics:=['plate_1=/on']", "'plate_1' is not a device of scene"),
])
def test_bad_files_and_devices_are_one_error_line(param: str, says: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "mango.nodes.world_state_node", "--ros-args",
                           "-p", f"scene:={SCENE}", "-p", param],
                          capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and says in errors[0], out


def test_calibration_file_and_a_device_topic(ros_node: Node, processes: Processes,
                                             namespace: str) -> None:
    """Camera and base poses from the lab's example calibration (the sim's placement; the
    wrist camera by FK of the joint states) instead of tf, and a stove's on/off from a Bool
    topic, which wins over what its knob says."""
    scene = "libero10_stove_moka"
    truth: list[WorldState] = []
    est: list[WorldState] = []
    tracks: list[DiagnosticArray] = []
    ros_node.create_subscription(WorldState, f"{namespace}/world_state_truth", truth.append, 100)
    ros_node.create_subscription(WorldState, f"{namespace}/world_state", est.append, 100)
    ros_node.create_subscription(DiagnosticArray, f"{namespace}/world_state_node/tracks",
                                 tracks.append, 10)
    stove = ros_node.create_publisher(Bool, f"{namespace}/stove_on", 10)
    processes.start("sim", "mango.nodes.sim_node", "-r", f"__ns:={namespace}",
                    "-r", "world_state:=world_state_truth", "-p", f"scene:={scene}",
                    "-p", "markers:=auto", "-p", "camera_rate:=5.0", "-p", "state_rate:=50.0",
                    "-p", "image_width:=640", "-p", "image_height:=480")
    processes.start("estimator", "mango.nodes.world_state_node", "-r", f"__ns:={namespace}",
                    "-p", f"scene:={scene}", "-p", f"extrinsics:={LAB / 'extrinsics.yaml'}",
                    "-p", "device_topics:=['flat_stove_1=stove_on']")
    marked = {m.entity for m in auto_marker_map(as_scene(scene)).markers}

    def seen() -> set[str]:
        return {e for e, (level, v) in _levels(tracks[-1]).items()
                if level == ord(DiagnosticStatus.OK) and v["source"].startswith("marker")
                } if tracks else set()

    wait_for(lambda: len(seen() & marked) >= len(marked) - 1, timeout=120,
             what="markers tracked on every entity but one")
    tracked = seen() & marked
    e = msg_to_state(_settled(est, tracked))
    wait_for(lambda: truth, what="the sim's world state")
    t = min((msg_to_state(m) for m in truth[-200:]), key=lambda s: abs(s.t - e.t))
    for eid in tracked:
        assert math.dist(e.objects[eid].position, t.objects[eid].position) < 0.01, eid
    assert not e.devices["flat_stove_1"].on and not t.devices["flat_stove_1"].on

    def switched_on() -> bool:
        stove.publish(Bool(data=True))
        return msg_to_state(est[-1]).devices["flat_stove_1"].on

    wait_for(switched_on, timeout=10, what="the stove on from its topic")

    # a reset sends the sim's time back: a fresh estimate (as the oracle starts a new
    # episode), which finds the objects where the new seed put them
    before = msg_to_state(est[-1]).t
    n_est, n_truth = len(est), len(truth)
    reply = call_service(ros_node, ResetScene, f"{namespace}/sim_node/reset",
                         ResetScene.Request(seed=3, request_id="reset-3"), timeout=60)
    assert reply.success, reply.message
    tracks.clear()
    wait_for(lambda: any(msg_to_state(m).t < before for m in est[n_est:]), timeout=30,
             what="an estimate from before the old episode's time")
    wait_for(lambda: len(seen() & marked) >= len(marked) - 1, timeout=60,
             what="markers tracked again")
    tracked = seen() & marked

    def stamp(m: WorldState) -> float:
        return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec

    def restart() -> int | None:
        """Where the sim's states of the new episode begin: its time restarts at the reset.
        (The old episode's last states come after `n_truth` too, and its times overlap the
        new one's: matched by time they put the frying pan where seed 0 had it.)"""
        return next((i for i in range(max(n_truth, 1), len(truth))
                     if stamp(truth[i]) < stamp(truth[i - 1])), None)

    first = wait_for(restart, timeout=30, what="the sim's states of the new episode")

    def off(m: WorldState) -> float:
        """How far the tracked entity farthest from the sim's (at the estimate's time) is;
        infinite while the sim's state of that time has not come."""
        e = msg_to_state(m)
        recent = truth[max(first, len(truth) - 100):]  # the last 2 s at 50 Hz
        if not recent:
            return math.inf
        t = min((msg_to_state(x) for x in recent), key=lambda s: abs(s.t - e.t))
        if abs(t.t - e.t) >= 0.05:
            return math.inf
        return max(math.dist(e.objects[eid].position, t.objects[eid].position)
                   for eid in tracked)

    # agrees within 1 cm once the new episode's frames are in, and stays so
    wait_for(lambda: off(est[-1]) < 0.01, timeout=10,
             what="the estimate where the new seed put the objects")
    n = len(est)
    wait_for(lambda: len(est) >= n + 5 and off(est[n + 4]) < math.inf, timeout=10,
             what="five more estimates and the sim's states of their times")
    later = [off(m) for m in est[n:n + 5]]
    assert max(later) < 0.01, later
    e = msg_to_state(est[-1])
    assert not e.devices["flat_stove_1"].on  # the topic's word was for the last episode
    assert "time went back" in processes.log("estimator")
    assert "Traceback" not in processes.log("estimator")
