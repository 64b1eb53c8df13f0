"""Record a live run, replay it offline: identical reports. A killed recorder loses nothing
that reached the disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rclpy.node import Node
from rosbags.highlevel import AnyReader
from std_srvs.srv import Trigger
from support.ros import Processes, call_service, wait_for

from mango.bags import BagReader
from mango.bags.types import default_types
from mango.nodes.common import latched_qos
from mango.oracle import check_trace, read_trace
from mango_ros.msg import TaskVerdict

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / "config" / "oracles" / "libero10_soup_sauce_basket.json"
TRACE = REPO / "test" / "data" / "oracle" / "libero" / "soup_sauce_basket_fail_mid.jsonl"


def _mango(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mango.cli.main", *args],
                          capture_output=True, text=True, timeout=120)


def test_live_run_recorded_and_replayed_gives_identical_report(
    ros_node: Node, processes: Processes, namespace: str, tmp_path: Path
) -> None:
    bag = tmp_path / "live"
    tasks: list[TaskVerdict] = []
    ros_node.create_subscription(TaskVerdict, f"{namespace}/oracle/task_verdict", tasks.append,
                                 latched_qos(10))
    processes.start("oracle_node", "mango.nodes.oracle_node", "-r", f"__ns:={namespace}",
                    "-p", f"oracle_file:={ORACLE}",
                    "-p", f"world_state_topic:={namespace}/world_state")
    recorder = processes.start(
        "recorder", "mango.nodes.bag_recorder", "-r", f"__ns:={namespace}",
        "-p", f"output:={bag}", "-p",
        f"topics:=['{namespace}/world_state', '{namespace}/oracle/step_verdicts', "
        f"'{namespace}/oracle/task_verdict']", "-p", "discovery_period:=0.05")
    # the recorder subscribes to each topic as it appears: the verdict topics' (the test's
    # own task-verdict subscription besides) before the trace plays, or it may miss them
    wait_for(lambda: "recording" in processes.log("recorder")
             and ros_node.count_subscribers(f"{namespace}/world_state") >= 1
             and ros_node.count_subscribers(f"{namespace}/oracle/step_verdicts") >= 1
             and ros_node.count_subscribers(f"{namespace}/oracle/task_verdict") >= 2,
             timeout=30, what="recorder up on every topic")
    player = processes.start(
        "player", "mango.nodes.trace_player", "-r", f"__ns:={namespace}",
        "-p", f"trace_file:={TRACE}", "-p", f"topic:={namespace}/world_state",
        "-p", "rate_scale:=10.0", "-p", "wait_for_subscribers:=2")
    assert player.wait(timeout=60) == 0, processes.log("player")
    call_service(ros_node, Trigger, f"{namespace}/oracle_node/finish", Trigger.Request())
    live = json.loads(wait_for(lambda: tasks and tasks[-1], what="task verdict").report_json)
    time.sleep(0.5)  # let the recorder take the verdict too
    recorder.send_signal(signal.SIGINT)
    assert recorder.wait(timeout=10) == 0, processes.log("recorder")

    replayed = _mango("replay", str(bag), "--oracle", str(ORACLE),
                      "--topic", f"{namespace}/world_state", "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout) == live
    # no --topic: the bag's only WorldState topic is the namespaced one
    gated = _mango("replay", str(bag), "--oracle", str(ORACLE), "--json", "--exit-code")
    assert gated.returncode == 1, gated.stderr  # fail_mid: a fail verdict, and --exit-code
    assert json.loads(gated.stdout) == live
    assert live == check_trace(ORACLE, read_trace(TRACE)).to_json()

    exported = tmp_path / "trace.jsonl"
    out = _mango("bag", "export", str(bag), "-o", str(exported))
    assert out.returncode == 0, out.stderr
    assert [s.to_record() for s in read_trace(exported)] == [
        s.to_record() for s in read_trace(TRACE)]
    checked = _mango("oracle", "check", str(ORACLE), str(exported), "--json")
    assert json.loads(checked.stdout) == live

    topics = BagReader(bag).topics()
    assert topics[f"{namespace}/oracle/task_verdict"][1] >= 1


def test_bag_readable_after_sigkill(processes: Processes, namespace: str, tmp_path: Path) -> None:
    bag = tmp_path / "killed"
    recorder = processes.start(
        "recorder", "mango.nodes.bag_recorder", "-r", f"__ns:={namespace}",
        "-p", f"output:={bag}", "-p", f"topics:=['{namespace}/world_state']",
        "-p", "discovery_period:=0.05")
    processes.start("player", "mango.nodes.trace_player", "-r", f"__ns:={namespace}",
                    "-p", f"trace_file:={TRACE}", "-p", f"topic:={namespace}/world_state",
                    "-p", "rate_scale:=2.0", "-p", "wait_for_subscribers:=1")
    # Kill mid-run (the whole trace takes ~4 s here), past at least one metadata rewrite.
    wait_for(lambda: bag.exists() and len(list(BagReader(bag).messages())) > 15, timeout=20,
             what="messages on disk")
    time.sleep(1.1)
    os.kill(recorder.pid, signal.SIGKILL)
    recorder.wait(timeout=5)

    reader = BagReader(bag)
    messages = list(reader.messages())
    assert 15 < len(messages) < len(read_trace(TRACE))
    assert {m.topic for m in messages} == {f"{namespace}/world_state"}
    assert reader.metadata["topics_with_message_count"][0]["topic_metadata"]["name"] == (
        f"{namespace}/world_state")
    # Every message decodes, and the states are the trace's, in order (looping).
    states = [s.to_record() for s in read_trace(TRACE)]
    exported = tmp_path / "cut.jsonl"
    assert _mango("bag", "export", str(bag), "--topic", f"{namespace}/world_state",
                  "-o", str(exported)).returncode == 0
    assert [s.to_record() for s in read_trace(exported)] == states[: len(messages)]

    repaired = tmp_path / "repaired"
    out = _mango("bag", "repair", str(bag), "-o", str(repaired))
    assert out.returncode == 0, out.stderr
    with AnyReader([repaired], default_typestore=default_types().store) as r:
        assert sum(c.msgcount for c in r.connections) == len(messages)


def test_mango_record_command(processes: Processes, namespace: str, tmp_path: Path) -> None:
    bag = tmp_path / "cli"
    topic = f"{namespace}/world_state"
    rec = subprocess.Popen([sys.executable, "-m", "mango.cli.main", "record", "-o", str(bag),
                            topic, "--duration", "30"], stderr=subprocess.PIPE, text=True)
    try:
        player = processes.start(
            "player", "mango.nodes.trace_player", "-r", f"__ns:={namespace}",
            "-p", f"trace_file:={TRACE}", "-p", f"topic:={topic}",
            "-p", "rate_scale:=20.0", "-p", "wait_for_subscribers:=1")
        assert player.wait(timeout=60) == 0
        time.sleep(0.5)
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=20)
    finally:
        if rec.poll() is None:
            rec.kill()
    assert rec.returncode == 0, err
    n = len(read_trace(TRACE))
    assert f"recorded {n} messages" in err
    assert BagReader(bag).topics() == {topic: ("mango_ros/msg/WorldState", n)}


def test_recording_every_topic_takes_action_feedback_and_status_too(
    processes: Processes, namespace: str, tmp_path: Path
) -> None:
    """`mango record` of all topics while an action runs: its feedback and status topics are
    recorded with their types (once an unknown type that stopped the recorder), and read."""
    from rclpy.action import ActionServer

    from mango.client import Robot
    from mango.client.session import spun_node
    from mango.control import MotionCommand
    from mango_ros.action import ExecuteMotion

    def execute(gh):  # a feedback every 50 ms for a second
        for k in range(20):
            gh.publish_feedback(ExecuteMotion.Feedback(command_index=k))
            time.sleep(0.05)
        gh.succeed()
        return ExecuteMotion.Result(status=0, message="done")

    bag = tmp_path / "all"
    with spun_node("server", namespace=namespace, threads=3) as node:
        ActionServer(node, ExecuteMotion, "execute_motion", execute_callback=execute)
        recorder = processes.start("recorder", "mango.nodes.bag_recorder",
                                   "-p", f"output:={bag}", "-p", "discovery_period:=0.05")
        feedback = f"{namespace}/execute_motion/_action/feedback"
        wait_for(lambda: f"recording {feedback}" in processes.log("recorder"), 30,
                 "the recorder subscribing to the action's feedback")
        with Robot.connect(namespace) as robot:
            out = robot.execute_motion([MotionCommand("wait", duration=0.1)], timeout=30)
        assert out.succeeded, out
        time.sleep(0.5)
        recorder.send_signal(signal.SIGINT)
        assert recorder.wait(timeout=10) == 0, processes.log("recorder")
    topics = BagReader(bag).topics()
    assert topics[feedback] == ("mango_ros/action/ExecuteMotion_FeedbackMessage", 20), topics
    status = f"{namespace}/execute_motion/_action/status"
    assert topics[status][0] == "action_msgs/msg/GoalStatusArray"
    decoded = [default_types().deserialize(m.data, m.msgtype) for m in BagReader(bag).messages()
               if m.topic == feedback]
    assert [m.feedback.command_index for m in decoded] == list(range(20))


def test_a_topic_of_a_type_unknown_here_is_skipped_and_the_rest_recorded(
    namespace: str, tmp_path: Path, monkeypatch
) -> None:
    """A type the recorder cannot describe (its package is not installed where the recorder
    runs) is skipped with a warning naming the topic; every other topic is still recorded.
    Once, a control_msgs FollowJointTrajectory server left on the graph stopped `mango record`
    of every topic with a traceback (CI, the README walk). Here the recorder's types are
    Kilted's standard set alone, so this package's TaskVerdict is that unknown type."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    from mango.bags.types import BagTypes
    from mango.client.session import spun_node
    from mango.nodes.bag_recorder import BagRecorder

    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "no_prefix"))
    standard_only = BagTypes()
    monkeypatch.undo()  # the middleware is found through the real prefix
    assert "mango_ros/msg/TaskVerdict" not in standard_only.store.fielddefs

    chatter, verdict = f"{namespace}/chatter", f"{namespace}/verdict"
    bag = tmp_path / "bag"
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    warnings: list[str] = []
    try:
        recorder = BagRecorder(output=str(bag), types=standard_only, context=ctx)
        recorder.get_logger().warning = warnings.append  # type: ignore[method-assign]
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(recorder)
        with spun_node("pub", namespace=namespace) as pub:
            say = pub.create_publisher(String, chatter, 10)
            judge = pub.create_publisher(TaskVerdict, verdict, 10)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (
                    chatter in recorder.writer.topics and warnings):
                say.publish(String(data="hello"))
                judge.publish(TaskVerdict())
                executor.spin_once(timeout_sec=0.05)
            for _ in range(20):  # a few more, now that both are known
                say.publish(String(data="hello"))
                judge.publish(TaskVerdict())
                executor.spin_once(timeout_sec=0.05)
        recorder.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    assert [w for w in warnings if verdict in w] == [
        f"not recording {verdict} [mango_ros/msg/TaskVerdict]: unknown message type "
        "'mango_ros/msg/TaskVerdict' (is its package installed?)"], warnings
    topics = BagReader(bag).topics()
    assert verdict not in topics
    assert topics[chatter][0] == "std_msgs/msg/String" and topics[chatter][1] > 0
