"""Core transforms (`mango.control.robot_state.FrameTransform`) as `tf2_msgs/TFMessage`.

Quaternions are [w, x, y, z] in the core and (x, y, z, w) fields in `geometry_msgs`.
"""

from __future__ import annotations

from collections.abc import Iterable

from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from tf2_msgs.msg import TFMessage

from mango.control.robot_state import FrameTransform


def transform_stamped(t: FrameTransform, stamp: Time, prefix: str = "") -> TransformStamped:
    msg = TransformStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = prefix + t.parent
    msg.child_frame_id = prefix + t.child
    tr, q = msg.transform.translation, msg.transform.rotation
    tr.x, tr.y, tr.z = t.translation
    q.w, q.x, q.y, q.z = t.rotation
    return msg


def tf_message(transforms: Iterable[FrameTransform], stamp: Time, prefix: str = "") -> TFMessage:
    return TFMessage(transforms=[transform_stamped(t, stamp, prefix) for t in transforms])
