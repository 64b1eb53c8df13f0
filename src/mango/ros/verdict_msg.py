"""Tracker events and reports <-> `StepVerdict` / `TaskVerdict` messages."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from std_msgs.msg import Header

from mango.oracle.tracker import Report
from mango.ros.world_state_msg import WORLD_FRAME, stamp_from_seconds
from mango_ros.msg import OracleEvent, StepVerdict, TaskVerdict


def _header(t: float | None, frame_id: str = WORLD_FRAME) -> Header:
    h = Header(frame_id=frame_id)
    if t is not None:
        h.stamp.sec, h.stamp.nanosec = stamp_from_seconds(t)
    return h


_STAMP = struct.Struct("<iI")
_U32 = struct.Struct("<I")
_F64 = struct.Struct("<d")


def step_verdict_cdr(t: float | None, path: str, action_id: str, status: str,
                     event: str = "", completed_t: float | None = None,
                     detail: str = "") -> bytes:
    """A `StepVerdict` serialized (little-endian CDR, field order of msg/StepVerdict.msg),
    ready for `publish`: the oracle node publishes on the hot path, and building the Python
    message and converting it costs ten times more. A test checks it against rclpy."""
    sec, nsec = stamp_from_seconds(t) if t is not None else (0, 0)
    out = bytearray(b"\x00\x01\x00\x00")  # encapsulation: CDR, little-endian
    out += _STAMP.pack(sec, nsec)
    for text in (WORLD_FRAME, path, action_id, status, event):
        _put_string(out, text)
    out += bytes(-(len(out) - 4) % 8)
    out += _F64.pack(math.nan if completed_t is None else completed_t)
    _put_string(out, detail)
    return bytes(out)


def _put_string(out: bytearray, text: str) -> None:
    out += bytes(-(len(out) - 4) % 4)  # alignment counts from after the encapsulation
    raw = text.encode()
    out += _U32.pack(len(raw) + 1)
    out += raw
    out += b"\x00"


def plain_step_verdict(t: float | None, path: str, action_id: str, status: str,
                       completed_t: float | None = None, detail: str = "") -> StepVerdict:
    """A status message not caused by an event (plan announced, step left incomplete)."""
    return StepVerdict(
        header=_header(t), path=path, action_id=action_id, status=status, event="",
        completed_t=math.nan if completed_t is None else completed_t, detail=detail)


def task_verdict(report: Report, instruction: str) -> TaskVerdict:
    """The `TaskVerdict` of a report; `report_json` is exactly `mango oracle check --json`."""
    data = report.to_json()
    return TaskVerdict(
        header=_header(report.t_end),
        instruction=instruction,
        verdict=report.verdict,
        failed_step=report.failed_step or "",
        steps=[
            plain_step_verdict(s.completed_t if s.completed_t is not None else report.t_end,
                               s.path, s.action_id, s.status, s.completed_t)
            for s in report.steps
        ],
        events=[OracleEvent(t=e.t, kind=e.kind, path=e.path, detail=e.detail)
                for e in report.events],
        report_json=json.dumps(data),
    )


def report_from_task_verdict(msg: TaskVerdict) -> dict[str, Any]:
    """The spec §6 report a `TaskVerdict` carries."""
    return json.loads(msg.report_json)
