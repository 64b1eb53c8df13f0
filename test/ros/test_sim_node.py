"""sim_node: world state and joint states on the graph, joint commands, reset, run_expert."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState
from support.ros import Processes, call_service, wait_for

from mango.ros.images import image_to_numpy
from mango.ros.world_state_msg import msg_to_state
from mango.sim.faults import parse_fault
from mango.sim.runner import run_episode
from mango_ros.msg import WorldState
from mango_ros.srv import ResetScene, RunExpert

SCENE = "libero10_book_caddy"


def test_sim_node_services_and_topics(ros_node: Node, processes: Processes,
                                      namespace: str, tmp_path: Path) -> None:
    states: list[WorldState] = []
    joints: list[JointState] = []
    images: list[Image] = []
    infos: list[CameraInfo] = []
    ros_node.create_subscription(CameraInfo, f"{namespace}/camera/front/camera_info",
                                 infos.append, 5)
    ros_node.create_subscription(WorldState, f"{namespace}/world_state", states.append, 100)
    ros_node.create_subscription(JointState, f"{namespace}/joint_states", joints.append, 100)
    ros_node.create_subscription(Image, f"{namespace}/camera/front/image_raw", images.append, 5)
    processes.start("sim", "mango.nodes.sim_node", "-r", f"__ns:={namespace}",
                    "-p", f"scene:={SCENE}", "-p", "real_time_factor:=0.0",
                    "-p", "camera_rate:=5.0", "-p", "cameras:=['front']")
    wait_for(lambda: len(states) > 5 and joints and images and infos, timeout=60,
             what="sim topics")
    state = msg_to_state(states[-1])
    assert "black_book_1" in state.objects and state.gripper is not None
    assert list(joints[-1].name[:7]) == [f"fr3_joint{i}" for i in range(1, 8)]
    rgb = image_to_numpy(images[-1])
    assert rgb.shape == (224, 224, 3) and rgb.std() > 1.0  # a rendered scene, not a blank
    # CameraInfo describes that image (sensor_msgs/msg/CameraInfo.msg, ros2/common_interfaces):
    # its size, and K = P[:, :3] with square pixels (MuJoCo's fovy spans the height) about the
    # image centre in pixel-centre coordinates; test/sim/test_camera_projection.py checks the
    # same intrinsics against rendered pixels
    info = infos[-1]
    assert (info.width, info.height, info.header.frame_id) == (224, 224, "front_camera")
    f = float(info.k[0])
    assert list(info.k) == pytest.approx([f, 0, 111.5, 0, f, 111.5, 0, 0, 1])
    assert list(info.p) == pytest.approx([f, 0, 111.5, 0, 0, f, 111.5, 0, 0, 0, 1, 0])
    assert info.distortion_model == "plumb_bob" and not any(info.d)

    # A joint command moves the arm there.
    target = np.asarray(joints[-1].position[:7]) + 0.1
    pub = ros_node.create_publisher(JointState, f"{namespace}/joint_command", 10)
    wait_for(lambda: pub.get_subscription_count() > 0, what="joint_command subscriber")
    command = JointState(name=[f"fr3_joint{i}" for i in range(1, 8)], position=target.tolist())
    start = np.asarray(joints[-1].position[:7])

    def moving() -> bool:
        # Re-sent until the arm starts moving: one message sent in the instant the subscription
        # matches can be missed on a loaded machine. Not sent after that, so no late copy can
        # arrive after the reset below.
        if np.max(np.abs(np.asarray(joints[-1].position[:7]) - start)) > 0.005:
            return True
        pub.publish(command)
        return False

    def reached() -> bool:
        return bool(np.max(np.abs(np.asarray(joints[-1].position[:7]) - target)) < 0.01)

    wait_for(moving, timeout=30, what="the arm starting to move")
    wait_for(reached, timeout=30, what="the arm reaching the commanded joints")

    # Reset: world time restarts and the arm is home again.
    reset = ResetScene.Request(scene="", seed=0, request_id="reset-1")
    reply = call_service(ros_node, ResetScene, f"{namespace}/sim_node/reset", reset, timeout=60)
    assert reply.success and "book" in reply.instruction
    n = len(states)
    wait_for(lambda: len(states) > n + 2, what="states after reset")
    assert min(msg_to_state(m).t for m in states[n:]) < 0.5
    # A late copy of that request (a client resending while DDS had lost the reply) gets the
    # same reply and leaves the running episode alone; a new id resets again.
    wait_for(lambda: msg_to_state(states[-1]).t > 1.0, timeout=30, what="world time 1 s")
    copy = call_service(ros_node, ResetScene, f"{namespace}/sim_node/reset", reset, timeout=60)
    assert (copy.success, copy.message) == (reply.success, reply.message)
    n = len(states)
    wait_for(lambda: len(states) > n + 2, what="states after the copy")
    assert min(msg_to_state(m).t for m in states[n:]) > 1.0
    again = ResetScene.Request(scene="", seed=0, request_id="reset-2")
    call_service(ros_node, ResetScene, f"{namespace}/sim_node/reset", again, timeout=60)
    n = len(states)
    wait_for(lambda: len(states) > n + 2, what="states after the second reset")
    assert min(msg_to_state(m).t for m in states[n:]) < 0.5

    # A scene path that is no regular file is refused at once, naming it (a FIFO once blocked
    # the physics thread for good), and the world runs on.
    fifo = tmp_path / "scene.yaml"
    os.mkfifo(fifo)
    for scene, reason in ((fifo, "a named pipe (FIFO)"), ("/dev/zero", "a character device")):
        # answered at all (a FIFO read would block for good; 60 s guards that hang, it bounds
        # no latency)
        bad = call_service(ros_node, ResetScene, f"{namespace}/sim_node/reset", ResetScene.Request(
            scene=str(scene), seed=0, request_id=f"reset-{scene}"), timeout=60)
        assert (bad.success, bad.message) == (
            False, f"{scene}: cannot read scene: {reason}, not a regular file")
    t = msg_to_state(states[-1]).t
    wait_for(lambda: msg_to_state(states[-1]).t > t + 0.2, what="the world running on")

    # The expert with a fault: the service answers with the ground truth the offline run has.
    t_call = msg_to_state(states[-1]).t  # world time now, give or take a state
    reply = call_service(ros_node, RunExpert, f"{namespace}/sim_node/run_expert",
                         RunExpert.Request(fault="drop@0.5", request_id="expert-1"), timeout=240)
    offline = run_episode(SCENE, 0, parse_fault("drop@0.5")).labels
    assert reply.expected_failed_step == offline["failed_step"]
    # Times are world times: the run started when the call arrived, shortly after t_call.
    assert (offline["failed_t"] + t_call - 0.2 <= reply.expected_fail_t
            <= offline["failed_t"] + t_call + 1.5)

    bad = call_service(ros_node, RunExpert, f"{namespace}/sim_node/run_expert",
                       RunExpert.Request(fault="melt@1", request_id="expert-2"))
    assert not bad.success and "bad fault" in bad.message


def test_a_stalled_physics_step_is_said_loudly(capfd: pytest.CaptureFixture[str]) -> None:
    """A physics step that takes long (its joint states stop meanwhile; the control node gives
    up on a simulation silent for 2 s) is a warning naming where the time went."""
    import rclpy

    from mango.nodes.sim_node import SimNode

    rclpy.init(args=["sim", "--ros-args", "-p", "camera_rate:=0.0", "-p", f"scene:={SCENE}"])
    node = None
    try:
        node = SimNode()
        node.physics._check_stall(0.0, 0.05, 0.75, 0.8)  # a 0.8 s step, 0.7 s publishing
        node.physics._check_stall(1.0, 1.001, 1.002, 1.01)  # a normal one: nothing said
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.shutdown()
    err = capfd.readouterr().err
    assert err.count("physics loop stalled") == 1, err
    assert "stalled 0.80 s" in err and "publishing 0.70 s" in err
