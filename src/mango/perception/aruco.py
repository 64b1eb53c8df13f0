"""`aruco`: 6-DoF entity poses from fiducial markers (OpenCV `cv2.aruco`).

The marker map (`mango.sim.markers`, one format for the sim and a lab) says which id sits
where on which entity. Per marker: `ArucoDetector` corners -> `solvePnP(SOLVEPNP_IPPE_SQUARE)`
(OpenCV's marker frame: corners top-left, top-right, bottom-right, bottom-left at (+-s/2,
+-s/2, 0)). When the frame has depth over the marker, the pose is refined with it: the marker
plane fitted to the back-projected pixels inside the square fixes the distance along the
ray, where a small marker's PnP is weakest, and the tilt; the corner rays cut with that plane
give the in-plane rotation. The entity pose is world_T_marker . inv(entity_T_marker).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from mango.geometry import mat_to_quat, quat_yaw
from mango.perception.base import (
    CameraPose,
    Detection,
    DetectResult,
    Intrinsics,
    PerceptionConfig,
    PerceptionError,
    RGBDFrame,
)
from mango.sim.markers import MarkerMap, MarkerSpec, cv_dictionary, load_marker_map
from mango.sim.scene import SceneSpec


@dataclass(frozen=True)
class MarkerPose:
    """One detected marker and the pose of the entity it is fixed to (world frame)."""

    marker_id: int
    entity: str
    part: str
    position: np.ndarray  # entity (part) origin, metres
    rotation: np.ndarray  # world_R_entity
    corners: np.ndarray  # 4x2 pixels, OpenCV order
    refined: bool  # depth refined the pose

    @property
    def quaternion(self) -> np.ndarray:
        return mat_to_quat(self.rotation)

    @property
    def yaw(self) -> float:
        return quat_yaw(self.quaternion)


def detect_markers(gray: np.ndarray, detector: cv2.aruco.ArucoDetector
                   ) -> list[tuple[int, np.ndarray]]:
    """(id, 4x2 corners) of every marker found in a grey image."""
    corners, ids, _ = detector.detectMarkers(gray)
    if ids is None:
        return []
    return [(int(i), c.reshape(4, 2).astype(np.float64))
            for i, c in zip(ids.ravel(), corners, strict=True)]


def marker_pose_camera(corners: np.ndarray, size: float, intr: Intrinsics,
                       depth: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """camera_R_marker, camera_t_marker (optical frame) and whether depth refined them."""
    half = size / 2
    obj = np.array([[-half, half, 0], [half, half, 0], [half, -half, 0], [-half, -half, 0]],
                   np.float64)
    k = np.array(intr.k, np.float64).reshape(3, 3)
    ok, rvec, tvec = cv2.solvePnP(obj, corners, k, None, flags=cv2.SOLVEPNP_IPPE_SQUARE)
    if not ok:
        return None
    rot = cv2.Rodrigues(rvec)[0]
    t = tvec.ravel()
    if depth is not None:
        refined = _refine_with_depth(corners, intr, depth)
        if refined is not None:
            return refined[0], refined[1], True
    return rot, t, False


def _refine_with_depth(corners: np.ndarray, intr: Intrinsics,
                       depth: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    h, w = depth.shape
    centre = corners.mean(axis=0)
    # the inner half of the square: clear of the edge pixels that mix in the background
    inner = (centre + 0.5 * (corners - centre)).astype(np.int32)
    mask = np.zeros((h, w), np.uint8)
    cv2.fillConvexPoly(mask, inner, 1)
    v, u = np.nonzero(mask)
    z = depth[v, u]
    good = np.isfinite(z) & (z > 0)
    if np.count_nonzero(good) < 12:
        return None
    u, v, z = u[good], v[good], z[good].astype(np.float64)
    pts = np.stack([(u - intr.cx) * z / intr.fx, (v - intr.cy) * z / intr.fy, z], axis=1)
    c = pts.mean(axis=0)
    _, sv, vt = np.linalg.svd(pts - c, full_matrices=False)
    if sv[2] > 0.3 * sv[1]:
        return None  # not a plane: the marker is bent or partly occluded
    n = vt[2]
    if n @ c > 0:
        n = -n  # the marker's z points out of its face, toward the camera that sees it

    def cut(px: np.ndarray) -> np.ndarray:
        ray = np.array([(px[0] - intr.cx) / intr.fx, (px[1] - intr.cy) / intr.fy, 1.0])
        return ray * (n @ c) / (n @ ray)

    p = np.array([cut(q) for q in corners])  # TL, TR, BR, BL in 3-D
    x = (p[1] - p[0]) + (p[2] - p[3])
    y = (p[0] - p[3]) + (p[1] - p[2])
    x -= (x @ n) * n
    x /= np.linalg.norm(x)
    y = np.cross(n, x)
    rot = np.column_stack([x, y, n])
    return rot, p.mean(axis=0)


class ArucoBackend:
    """Markers -> entity poses; phrases are entity ids, 'marker N', or scene descriptions."""

    name = "aruco"

    def __init__(self, markers: MarkerMap, scene: SceneSpec | None = None,
                 use_depth: bool = True) -> None:
        self.markers = markers
        self.by_id: dict[int, MarkerSpec] = markers.by_id()
        self.scene = scene
        self.use_depth = use_depth
        params = cv2.aruco.DetectorParameters()
        # corner refinement: sub-pixel corners matter for small markers
        params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
        self.detector = cv2.aruco.ArucoDetector(cv_dictionary(markers.dictionary), params)

    @classmethod
    def from_config(cls, cfg: PerceptionConfig) -> ArucoBackend:
        path = cfg.options.get("markers")
        if path is None:
            raise PerceptionError("the aruco backend needs options.markers: the marker map "
                                  "YAML (marker ids -> entities, sizes, offsets)")
        mm = path if isinstance(path, MarkerMap) else load_marker_map(Path(str(path)))
        if cfg.scene is not None:
            mm.check_scene(cfg.scene, file=None if isinstance(path, MarkerMap) else str(path))
        return cls(mm, cfg.scene, bool(cfg.options.get("use_depth", True)))

    def poses(self, frame: RGBDFrame) -> tuple[list[MarkerPose], list[str]]:
        """Entity poses of every mapped marker in the frame, and what got in the way."""
        if frame.rgb is None:
            return [], [f"camera '{frame.camera}': the frame has no RGB image"]
        if frame.intrinsics is None:
            return [], [f"camera '{frame.camera}': no camera info received yet"]
        if frame.pose is None:
            return [], [f"camera '{frame.camera}': its pose in the world is unknown"]
        gray = cv2.cvtColor(np.ascontiguousarray(frame.rgb, np.uint8), cv2.COLOR_RGB2GRAY)
        depth = frame.depth if self.use_depth else None
        if depth is not None and depth.shape != gray.shape:
            depth = None
        out: list[MarkerPose] = []
        notes: list[str] = []
        for mid, corners in detect_markers(gray, self.detector):
            spec = self.by_id.get(mid)
            if spec is None:
                notes.append(f"marker {mid} is not in the marker map (ignored)")
                continue
            est = marker_pose_camera(corners, spec.size, frame.intrinsics, depth)
            if est is None:
                notes.append(f"marker {mid}: no pose (solvePnP failed)")
                continue
            out.append(_entity_pose(spec, est, frame.pose, corners))
        return out, notes

    def detect(self, frame: RGBDFrame, phrases: Sequence[str],
               max_results: int = 1) -> DetectResult:
        poses, notes = self.poses(frame)
        by_entity: dict[str, MarkerPose] = {}
        for p in poses:
            by_entity.setdefault(p.entity, p)  # one pose per entity: the first marker seen
        dets: list[Detection] = []
        unmatched: list[str] = []
        messages: list[str] = list(notes) if not poses else []
        for phrase in phrases:
            target = self._entity_of(phrase)
            if target is None:
                unmatched.append(phrase)
                messages.append(f"'{phrase}': names no marked entity (an entity id, "
                                "'marker N' or a scene description)")
                continue
            pose = by_entity.get(target)
            if pose is None:
                unmatched.append(phrase)
                messages.append(f"'{phrase}': the marker on '{target}' is not in view")
                continue
            dets.append(self._detection(phrase, pose, frame))
        return DetectResult(tuple(dets), tuple(unmatched), tuple(messages))

    def _entity_of(self, phrase: str) -> str | None:
        text = phrase.strip().lower()
        m = re.fullmatch(r"marker\s*#?(\d+)", text)
        if m:
            spec = self.by_id.get(int(m.group(1)))
            return spec.entity if spec else None
        marked = {s.entity for s in self.markers.markers}
        if text in marked:
            return text
        text = re.sub(r"^(the|a|an)\s+", "", text)
        if self.scene is not None:
            for e in self.scene.entities:
                if e.id in marked and e.description and e.description.lower() == text:
                    return e.id
        return None

    def _detection(self, phrase: str, pose: MarkerPose, frame: RGBDFrame) -> Detection:
        size = (0.0, 0.0, 0.0)
        if self.scene is not None:
            try:
                sx, sy, sz = self.scene.entity(pose.entity).size
                # the axis-aligned world box of the entity's box turned by its pose
                half = np.abs(pose.rotation) @ np.array([sx, sy, sz]) / 2
                size = (float(2 * half[0]), float(2 * half[1]), float(2 * half[2]))
            except KeyError:
                pass
        x0, y0 = np.floor(pose.corners.min(axis=0)).astype(int)
        x1, y1 = np.ceil(pose.corners.max(axis=0)).astype(int) + 1
        return Detection(
            phrase=phrase, entity_id=pose.entity, label=f"marker {pose.marker_id}", score=1.0,
            box_2d=(int(x0), int(y0), int(x1), int(y1)), mask=None,
            centroid=(float(pose.position[0]), float(pose.position[1]),
                      float(pose.position[2])),
            size=size, yaw=_half_turn(pose.yaw + (np.pi / 2 if self._long_y(pose.entity) else 0)),
            camera=frame.camera, stamp=frame.stamp,
        )

    def _long_y(self, entity: str) -> bool:
        """The entity's box is longer along its y than its x (its major axis is y)."""
        if self.scene is None:
            return False
        try:
            sx, sy, _ = self.scene.entity(entity).size
        except KeyError:
            return False
        return sy > sx

    def close(self) -> None:
        pass


def _entity_pose(spec: MarkerSpec, est: tuple[np.ndarray, np.ndarray, bool], cam: CameraPose,
                 corners: np.ndarray) -> MarkerPose:
    rot_c, t_c, refined = est
    world_r_marker = cam.rotation @ rot_c
    world_t_marker = cam.position + cam.rotation @ t_c
    world_r_entity = world_r_marker @ spec.rotation().T
    world_t_entity = world_t_marker - world_r_entity @ np.asarray(spec.position, float)
    return MarkerPose(spec.id, spec.entity, spec.part, world_t_entity, world_r_entity,
                      corners, refined)


def _half_turn(yaw: float) -> float:
    """A footprint heading in (-pi/2, pi/2] (a box's major axis has no direction)."""
    a = (yaw + np.pi / 2) % np.pi - np.pi / 2
    return float(np.pi / 2 if a == -np.pi / 2 else a)
