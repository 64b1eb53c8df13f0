"""Child-process probes for `mango doctor`.

They import rclpy, which may exit the process outright (e.g. an unknown
RMW_IMPLEMENTATION), so the doctor runs them as separate processes and reads one JSON line.

    python -m mango.nodes.doctor_probe import
    python -m mango.nodes.doctor_probe echo TOPIC_IN TOPIC_OUT TIMEOUT
    python -m mango.nodes.doctor_probe ping TOPIC_OUT TOPIC_IN TIMEOUT
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

# A record exercising every field of the spec's world state (§3).
PING_RECORD: dict[str, Any] = {
    "t": 12.345678901,
    "objects": {
        "alphabet_soup_1": {"position": [0.1, 0.2, 0.93], "orientation": [1.0, 0.0, 0.0, 0.0],
                            "size": [0.07, 0.07, 0.1], "kind": "object"},
        "basket_1_contain_region": {"position": [0.3, -0.1, 0.9], "size": [0.2, 0.2, 0.1],
                                    "kind": "region", "parent": "basket_1"},
    },
    "joints": {"microwave_1": {"q": -1.2, "q_open": -2.09, "q_closed": 0.0, "closed_frac": 0.1}},
    "devices": {"flat_stove_1": {"on": True}},
    "gripper": {"width": 0.04, "closed": True},
    "contacts": [["alphabet_soup_1", "robot_left_finger"]],
    "facts": {"grasped(alphabet_soup_1)": True},
}


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def probe_import() -> dict[str, Any]:
    import rclpy
    from rclpy.serialization import serialize_message

    import mango_ros.action as actions
    import mango_ros.msg as msgs
    import mango_ros.srv as srvs

    rclpy.init()
    try:
        from rclpy.utilities import get_rmw_implementation_identifier

        rmw = get_rmw_implementation_identifier()
    finally:
        rclpy.shutdown()
    types: dict[str, list[str]] = {}
    for label, mod in (("msg", msgs), ("srv", srvs), ("action", actions)):
        # Generated helpers (LoadOracle_Request, RunPolicy_Goal, ...) contain "_".
        names = sorted(n for n in dir(mod) if n[:1].isupper() and "_" not in n)
        types[label] = names
    # Serializing proves the C type support of a message loads, not just the Python class.
    serialize_message(msgs.WorldState())
    return {"ok": True, "rmw": rmw, "types": types}


def _node(name: str):
    import rclpy

    rclpy.init()
    return rclpy.create_node(name)


def probe_echo(topic_in: str, topic_out: str, timeout: float) -> dict[str, Any]:
    import rclpy

    from mango_ros.msg import WorldState

    node = _node("mango_doctor_echo")
    pub = node.create_publisher(WorldState, topic_out, 10)
    got: list[Any] = []
    node.create_subscription(WorldState, topic_in, lambda m: (got.append(m), pub.publish(m)), 10)
    _emit({"ready": True})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not got:
        rclpy.spin_once(node, timeout_sec=0.05)
    # Keep serving a moment so the pong is delivered before the publisher goes away.
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.shutdown()
    return {"ok": bool(got), "received": len(got)}


def probe_ping(topic_out: str, topic_in: str, timeout: float) -> dict[str, Any]:
    import rclpy

    from mango.ros.world_state_msg import msg_to_record, record_to_msg
    from mango_ros.msg import WorldState

    node = _node("mango_doctor_ping")
    pub = node.create_publisher(WorldState, topic_out, 10)
    got: list[Any] = []
    node.create_subscription(WorldState, topic_in, got.append, 10)
    msg = record_to_msg(PING_RECORD)
    start = time.monotonic()
    deadline = start + timeout
    sent_at = 0.0
    while time.monotonic() < deadline and not got:
        # Re-send until matched: discovery takes tens of milliseconds.
        if pub.get_subscription_count() > 0 and time.monotonic() - sent_at > 0.25:
            pub.publish(msg)
            sent_at = time.monotonic()
        rclpy.spin_once(node, timeout_sec=0.02)
    elapsed = time.monotonic() - start
    node.destroy_node()
    rclpy.shutdown()
    if not got:
        return {"ok": False, "error": f"no reply within {timeout:.0f} s", "elapsed": elapsed}
    back = msg_to_record(got[0])
    expected = json.loads(json.dumps(PING_RECORD))
    same = back == expected
    return {"ok": same, "elapsed": elapsed,
            "error": None if same else f"round trip changed the record: {back}"}


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else ""
    try:
        if kind == "import":
            result = probe_import()
        elif kind == "echo":
            result = probe_echo(argv[1], argv[2], float(argv[3]))
        elif kind == "ping":
            result = probe_ping(argv[1], argv[2], float(argv[3]))
        else:
            result = {"ok": False, "error": f"unknown probe {kind!r}"}
    except Exception as exc:  # report any failure as data: the doctor prints it
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    _emit(result)
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
