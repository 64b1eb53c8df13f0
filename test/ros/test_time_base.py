"""One time base in the sim stack: every stamped message it publishes is stamped from the
simulator's clock, checked on a recorded bag.

Two checks. Same clock, exactly: joint states, world states and joint commands carry ticks of
the sim clock (values `/clock` had), step verdicts and markers the stamp of a world state they
judged, and an image, its depth and its CameraInfo one stamp. Current: each message's stamp
and the sim clock when the recorder received it (the last `/clock` before it in the bag)
differ by less than one control period of the sim (one 15 Hz action); a wall-clock stamp is
~1.7e9 s off. Step verdicts are latched (history re-sent to a late joiner) and skip this one;
so do camera frames, stamped at acquisition (the physics state drawn), which precedes their
publication by the render time: with software GL on a loaded 2-core machine that was 0.8 s of
wall time. They must lie within the run's sim clock instead.
The sim runs at a tenth of real time: the check is about the time base, and a 2-core
machine under load delays delivery (rendering, executors) by 0.25 s of wall time or more
(measured: 0.06 s of sim time at a quarter of real time, load average 10).
`use_sim_time` is rclpy's standard parameter (the node clock follows `/clock`: ros2/rclpy
`rclpy/rclpy/time_source.py`).
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from pathlib import Path

from rclpy.serialization import deserialize_message

from mango.bags import BagReader
from mango.client.robot import Robot
from mango.client.session import StackSession
from mango.control import MotionCommand
from mango.ros.introspection import message_class
from mango.sim.env import SimEnv
from mango.stack import CLOCK_TOPIC, load_stack

PERIOD = 1.0 / SimEnv.control_hz  # one action of the sim: 1/15 s
CAMERA_TOPICS = [f"/camera/{c}/{t}" for c in ("front", "wrist")
                 for t in ("image_raw", "depth", "camera_info")]


def _stamp(msg: object) -> float:
    s = msg.header.stamp  # type: ignore[attr-defined]
    return s.sec + s.nanosec * 1e-9


def test_every_stamp_in_a_sim_bag_comes_from_the_sim_clock(tmp_path: Path,
                                                           namespace: str) -> None:
    stack = load_stack("sim")
    # the vla_node publishes (its diagnostics) only while a policy runs, none here; the
    # orchestrator's decisions and events are unstamped std_msgs/String lines (their times are
    # in the JSON), published only while a task runs
    nodes = {n.name: n for n in stack.nodes if n.name not in ("vla_node", "orchestrator_node")}
    nodes["sim_node"].parameters.update(camera_rate=5.0, image_width=48, image_height=48,
                                        real_time_factor=0.1)
    rec = nodes["bag_recorder"].parameters
    bag = tmp_path / "bag"
    rec["output"] = str(bag)
    topics = [*(t for t in rec["topics"]
                if not t.startswith(("/orchestrator_node/", "/vla_node/"))),
              "/oracle/markers", *CAMERA_TOPICS]  # type: ignore[misc]
    rec["topics"] = topics  # `in_namespace` moves them with the stack
    stack = stack.model_copy(update={"nodes": list(nodes.values())}).in_namespace(namespace)
    assert all(n.parameters["use_sim_time"] is (n.name not in ("sim_node", "bag_recorder"))
               for n in stack.nodes)

    with StackSession(stack) as session:
        node = session.node
        assert node is not None
        robot = Robot(node, namespace, watch=session.bringup.check)
        robot.wait_for_servers("execute_motion", timeout=90)
        wanted = {f"{namespace}{t}" for t in ("/joint_command", "/world_state",
                                              "/camera/wrist/depth", CLOCK_TOPIC)}
        session.wait(lambda: all("bag_recorder" in {i.node_name for i in
                                                    node.get_subscriptions_info_by_topic(t)}
                                 for t in wanted), 60, "the recorder on the stack's topics")
        out = robot.execute_motion([MotionCommand("move", direction=(0, 0, -1), distance_mm=30),
                                    MotionCommand("move", direction=(0, 0, 1), distance_mm=30)],
                                   timeout=60)
        assert out.succeeded, out.message
        assert robot.finish_oracle().success  # the task verdict, stamped too
        time.sleep(0.5)

    clock_log: list[int] = []
    clock_value: list[float] = []
    stamps: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for m in BagReader(bag).messages():
        msg = deserialize_message(m.data, message_class(m.msgtype))
        topic = m.topic.removeprefix(namespace)
        if topic == CLOCK_TOPIC:
            clock_log.append(m.log_time_ns)
            clock_value.append(msg.clock.sec + msg.clock.nanosec * 1e-9)
        elif topic == "/oracle/markers":
            stamps[topic] += [(m.log_time_ns, _stamp(mk)) for mk in msg.markers]
        else:
            stamps[topic].append((m.log_time_ns, _stamp(msg)))
    assert sorted(stamps) == sorted(t for t in topics if t != CLOCK_TOPIC)
    assert len(clock_value) > 30 and clock_value == sorted(clock_value)

    ticks = {round(v, 6) for v in clock_value}  # world states carry t to the microsecond
    for topic in ("/joint_states", "/world_state", "/joint_command"):
        # stamped from a clock value the recording holds: the recorder's /clock subscription
        # can match after the control node's took a value it then stamped a command with
        late = {round(s, 6) for log_ns, s in stamps[topic]
                if log_ns > clock_log[0] and s >= clock_value[0]}
        assert late and late <= ticks, (topic, sorted(late - ticks)[:5], len(late - ticks))
    ws = {round(s, 6) for _, s in stamps["/world_state"]}
    for topic in ("/oracle/step_verdicts", "/oracle/markers", "/oracle/task_verdict"):
        judged = {round(s, 6) for _, s in stamps[topic]}
        judged = {s for s in judged if s >= min(ws)}  # not of states from before the recording
        assert judged and judged <= ws, f"{topic} stamps that are no world state's"

    worst: dict[str, float] = {}
    for topic, rows in stamps.items():
        if topic == "/oracle/step_verdicts":
            continue
        if topic in CAMERA_TOPICS:
            assert all(clock_value[0] - PERIOD <= s <= clock_value[-1] for _, s in rows), topic
            continue
        errors = []
        for log_ns, stamp in rows:
            i = bisect.bisect_right(clock_log, log_ns) - 1
            if i < 0:
                continue  # received before the first recorded clock
            errors.append(stamp - clock_value[i])
        assert errors, topic
        worst[topic] = max(errors, key=abs)
    bad = {t: round(e, 4) for t, e in worst.items() if abs(e) >= PERIOD}
    assert not bad, f"stamps off the sim clock by a control period or more: {bad}"
    print("largest |stamp - sim clock at receipt| per topic (s):",
          {t: round(e, 4) for t, e in sorted(worst.items())})

    # matching times: one physics step, one stamp; one frame, one stamp
    js = {round(s, 6) for _, s in stamps["/joint_states"]}
    assert len(ws & js) >= 0.9 * len(ws)
    for cam in ("front", "wrist"):
        images = {s for _, s in stamps[f"/camera/{cam}/image_raw"]}
        depths = {s for _, s in stamps[f"/camera/{cam}/depth"]}
        infos = {s for _, s in stamps[f"/camera/{cam}/camera_info"]}
        # (the last frame's depth or info may be cut off by the shutdown)
        assert len(images) >= 3 and len(images - depths) <= 1 and len(images - infos) <= 1
