"""Mid-level motion commands between the core (`mango.control.MotionCommand`) and
`mango_ros/MotionCommand`: one table of kinds for the client that sends `ExecuteMotion` and
the control node that executes it."""

from __future__ import annotations

from geometry_msgs.msg import Vector3

from mango.control.motion import MotionCommand
from mango.control.validation import GoalRejected
from mango_ros.msg import MotionCommand as MotionCommandMsg

KIND_OF_TYPE: dict[int, str] = {
    MotionCommandMsg.MOVE: "move", MotionCommandMsg.ROTATE: "rotate",
    MotionCommandMsg.GRIPPER_OPEN: "gripper_open", MotionCommandMsg.GRIPPER_CLOSE: "gripper_close",
    MotionCommandMsg.GRIPPER_WIDTH: "gripper_width", MotionCommandMsg.WAIT: "wait",
    MotionCommandMsg.HOME: "home",
}
TYPE_OF_KIND: dict[str, int] = {kind: t for t, kind in KIND_OF_TYPE.items()}


def command_from_msg(index: int, msg: MotionCommandMsg) -> MotionCommand:
    """The core command for a message; an unknown type rejects the goal."""
    kind = KIND_OF_TYPE.get(msg.type)
    if kind is None:
        raise GoalRejected(f"command {index}: unknown type {msg.type}")
    return MotionCommand(
        kind=kind,  # type: ignore[arg-type]
        direction=(msg.direction.x, msg.direction.y, msg.direction.z),
        distance_mm=msg.distance_mm, axis=(msg.axis.x, msg.axis.y, msg.axis.z),
        angle_deg=msg.angle_deg, width=msg.width, duration=msg.duration)


def command_to_msg(cmd: MotionCommand) -> MotionCommandMsg:
    """The message for a core command (the fields its kind does not use travel as given)."""
    if cmd.kind not in TYPE_OF_KIND:
        raise ValueError(f"unknown motion kind {cmd.kind!r} (known: {', '.join(TYPE_OF_KIND)})")
    dx, dy, dz = (float(v) for v in cmd.direction)
    ax, ay, az = (float(v) for v in cmd.axis)
    return MotionCommandMsg(
        type=TYPE_OF_KIND[cmd.kind], direction=Vector3(x=dx, y=dy, z=dz),
        distance_mm=float(cmd.distance_mm), axis=Vector3(x=ax, y=ay, z=az),
        angle_deg=float(cmd.angle_deg), width=float(cmd.width), duration=float(cmd.duration))
