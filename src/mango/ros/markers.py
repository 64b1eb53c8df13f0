"""rviz markers for the oracle: each object an expression mentions, coloured by the state of
the step that concerns it now, with text labels for that step and the task verdict."""

from __future__ import annotations

from dataclasses import dataclass

from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from mango.oracle import StepTracker, WorldState, entities, parse_expression
from mango.oracle.tracker import Report
from mango.ros.world_state_msg import WORLD_FRAME, stamp_from_seconds

# Status -> RGBA. Regions are drawn translucent so what lies inside stays visible.
COLOURS: dict[str, tuple[float, float, float, float]] = {
    "pending": (0.6, 0.6, 0.6, 0.6),
    "enabled": (1.0, 0.8, 0.0, 0.8),
    "completed": (0.1, 0.8, 0.2, 0.8),
    "failed": (0.9, 0.1, 0.1, 0.9),
    "regression": (1.0, 0.45, 0.0, 0.9),
}
REGION_ALPHA = 0.25
DEFAULT_SIZE = (0.05, 0.05, 0.05)


@dataclass(frozen=True)
class EntityLabel:
    entity: str
    path: str
    action_id: str
    status: str  # a COLOURS key


def entity_labels(tracker: StepTracker, report: Report | None) -> list[EntityLabel]:
    """For each entity the oracle mentions, the step concerning it now: the first step in plan
    order that mentions it and is not completed (else its last step, completed)."""
    statuses = tracker.statuses
    regressed = {e.path for e in (report.events if report else ()) if e.kind == "regression"}
    failed = report.failed_step if report and report.verdict == "fail" else None
    chosen: dict[str, EntityLabel] = {}
    for entry in tracker.entries:
        status = statuses[entry.path]
        if entry.path == failed:
            status = "failed"
        elif entry.path in regressed:
            status = "regression"
        for mon in entry.action.monitoring:
            for ent in entities(parse_expression(mon.handle_as)):
                current = chosen.get(ent)
                if current is None or current.status in ("completed",):
                    chosen[ent] = EntityLabel(ent, entry.path, entry.action.action_id, status)
    return list(chosen.values())


def oracle_markers(state: WorldState, tracker: StepTracker | None,
                   report: Report | None, frame_id: str = WORLD_FRAME) -> MarkerArray:
    header = Header(frame_id=frame_id)
    header.stamp.sec, header.stamp.nanosec = stamp_from_seconds(state.t)
    markers = [Marker(header=header, action=Marker.DELETEALL)]
    if tracker is None:
        return MarkerArray(markers=markers)
    mid = 0
    for label in entity_labels(tracker, report):
        ent = state.objects.get(label.entity)
        if ent is None:
            continue  # joints and devices have no box
        r, g, b, a = COLOURS[label.status]
        if ent.kind == "region":
            a = REGION_ALPHA
        px, py, pz = ent.position
        w, x, y, z = ent.orientation or (1.0, 0.0, 0.0, 0.0)
        sx, sy, sz = ent.size or DEFAULT_SIZE
        mid += 1
        markers.append(Marker(
            header=header, ns="oracle_entities", id=mid, type=Marker.CUBE, action=Marker.ADD,
            pose=Pose(position=Point(x=px, y=py, z=pz), orientation=Quaternion(x=x, y=y, z=z, w=w)),
            scale=Vector3(x=max(sx, 1e-3), y=max(sy, 1e-3), z=max(sz, 1e-3)),
            color=ColorRGBA(r=r, g=g, b=b, a=a)))
        mid += 1
        markers.append(Marker(
            header=header, ns="oracle_labels", id=mid, type=Marker.TEXT_VIEW_FACING,
            action=Marker.ADD, pose=Pose(position=Point(x=px, y=py, z=pz + sz / 2 + 0.05)),
            scale=Vector3(z=0.03), color=ColorRGBA(r=r, g=g, b=b, a=1.0),
            text=f"{label.entity}\n{label.path} {label.action_id}: {label.status}"))
    verdict = report.verdict if report else "running"
    active = [p for p, s in tracker.statuses.items() if s == "enabled"]
    summary = f"{tracker.oracle.instruction}\nactive: {', '.join(active) or '-'} | {verdict}"
    if report and verdict == "fail" and report.failed_step:
        summary += f" at {report.failed_step}"
    r, g, b, _ = COLOURS["completed" if verdict == "pass" else
                         "failed" if verdict == "fail" else "enabled"]
    markers.append(Marker(
        header=header, ns="oracle_summary", id=0, type=Marker.TEXT_VIEW_FACING,
        action=Marker.ADD, pose=Pose(position=Point(x=0.0, y=0.0, z=1.6)),
        scale=Vector3(z=0.05), color=ColorRGBA(r=r, g=g, b=b, a=1.0), text=summary))
    return MarkerArray(markers=markers)
