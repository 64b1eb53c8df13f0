"""What every perception backend takes and gives: an RGB-D frame in, detections out.

The contract other backends are written against (`sim`, `tabletop`, `aruco`, `owlv2`,
`grounding_dino`); keep it small. A backend implements `PerceptionBackend.detect`; it never
raises for what a camera or a user may legitimately present (an unknown phrase, an empty depth
image, an object out of frame): those go into `DetectResult.unmatched` / `messages`. It raises
`PerceptionError` only for a misconfiguration (a missing weights folder, a frame without what
the backend needs, such as segmentation for `sim`).

Frames and units: images are row-major HxW with pixel centres at integer coordinates
(OpenCV/ROS); depth is metres along the optical axis, NaN where there is none; the camera pose
is the ROS optical frame (REP 103: z forward, x right, y down) in the world; every 3-D value
of a `Detection` is in the world frame, in metres.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from mango.sim.scene import SceneSpec


class PerceptionError(ValueError):
    """A backend cannot run as configured (what to fix is in the message); a ValueError, so a
    node that meets one at start-up ends with that one line."""


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole camera of one image size (sensor_msgs/CameraInfo K, distortion already
    removed: what `image_rect` and the sim's renders are)."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    @classmethod
    def from_k(cls, width: int, height: int, k: Sequence[float]) -> Intrinsics:
        """From a row-major 3x3 K (CameraInfo.k)."""
        if len(k) != 9:
            raise PerceptionError(f"K must have 9 values, got {len(k)}")
        if not (k[0] > 0 and k[4] > 0):
            raise PerceptionError(f"K has no focal length (fx={k[0]}, fy={k[4]}): "
                                  "the camera is not calibrated")
        return cls(int(width), int(height), float(k[0]), float(k[4]), float(k[2]), float(k[5]))

    @property
    def k(self) -> list[float]:
        return [self.fx, 0.0, self.cx, 0.0, self.fy, self.cy, 0.0, 0.0, 1.0]


@dataclass(frozen=True)
class CameraPose:
    """The camera's optical frame in the world: position (3,) and rotation (3x3, columns are
    the frame's axes in world coordinates)."""

    position: np.ndarray
    rotation: np.ndarray

    @classmethod
    def from_matrix(cls, t: np.ndarray) -> CameraPose:
        """From a 4x4 world_T_optical transform."""
        t = np.asarray(t, float)
        return cls(t[:3, 3].copy(), t[:3, :3].copy())

    def matrix(self) -> np.ndarray:
        t = np.eye(4)
        t[:3, :3], t[:3, 3] = self.rotation, self.position
        return t


@dataclass(frozen=True)
class RGBDFrame:
    """One synchronised RGB-D capture of one camera.

    `segmentation`/`segmentation_ids` are privileged: only a simulator has them (label per
    pixel, -1 = none; label i is entity `segmentation_ids[i]`). Backends that need them say so.
    """

    camera: str
    rgb: np.ndarray | None  # HxWx3 uint8
    depth: np.ndarray | None  # HxW float32 metres, NaN = no reading
    intrinsics: Intrinsics | None  # None: no CameraInfo received yet
    pose: CameraPose | None  # None: the camera's place in the world is unknown
    stamp: float = 0.0  # acquisition time of the images, seconds
    segmentation: np.ndarray | None = None
    segmentation_ids: tuple[str, ...] = ()

    def problem(self) -> str | None:
        """Why this frame can give no 3-D at all (the same for every phrase), or None."""
        if self.intrinsics is None:
            return f"camera '{self.camera}' has no CameraInfo yet"
        if self.pose is None:
            return f"camera '{self.camera}' has no pose in the world (no calibration / tf)"
        if self.depth is None:
            return f"camera '{self.camera}' has no depth image"
        if self.depth.shape != (self.intrinsics.height, self.intrinsics.width):
            return (f"camera '{self.camera}': depth is {self.depth.shape[1]}x"
                    f"{self.depth.shape[0]} but CameraInfo says {self.intrinsics.width}x"
                    f"{self.intrinsics.height}")
        if not np.isfinite(self.depth).any():
            return f"camera '{self.camera}': the depth image is empty (no valid reading)"
        return None

    def without_privileged(self) -> RGBDFrame:
        """The frame a real camera would give: no segmentation."""
        return replace(self, segmentation=None, segmentation_ids=())

    @property
    def shape(self) -> tuple[int, int] | None:
        """(height, width) of the images, from whichever image the frame has."""
        for img in (self.depth, self.rgb, self.segmentation):
            if img is not None:
                return int(img.shape[0]), int(img.shape[1])
        return None


@dataclass(frozen=True)
class Detection:
    """One object found for one phrase. 3-D values are world frame, metres; `size` is the
    extent of the axis-aligned world box around the object's visible points (centroid is that
    box's centre); `yaw` is the heading of the footprint's major axis in (-pi/2, pi/2]."""

    phrase: str
    entity_id: str | None  # the scene id when the backend knows it, else None
    label: str  # what the backend calls it ("akita black bowl", "bowl", "marker 7")
    score: float  # confidence in [0, 1]
    box_2d: tuple[int, int, int, int]  # x0, y0, x1, y1 pixels, x1/y1 exclusive
    mask: np.ndarray | None  # HxW bool, None when the backend gives boxes only
    centroid: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw: float
    camera: str
    stamp: float

    def to_json(self) -> dict[str, object]:
        """The fields of `mango perception detect --json` (commands.md §2)."""
        return {"phrase": self.phrase, "entity_id": self.entity_id, "label": self.label,
                "score": round(float(self.score), 4), "box_2d": list(self.box_2d),
                "centroid": [round(float(v), 4) for v in self.centroid],
                "size": [round(float(v), 4) for v in self.size],
                "yaw": round(float(self.yaw), 4), "camera": self.camera}


@dataclass(frozen=True)
class DetectResult:
    """Detections for the phrases asked (each phrase's best first), the phrases nothing was
    found for, and one human-readable message per problem (why a phrase went unmatched)."""

    detections: tuple[Detection, ...] = ()
    unmatched: tuple[str, ...] = ()
    messages: tuple[str, ...] = field(default_factory=tuple)

    def for_phrase(self, phrase: str) -> list[Detection]:
        return [d for d in self.detections if d.phrase == phrase]


# What one detection request may ask (the node's `~/detect` and `phrases` parameter, `mango
# perception detect`): a scene holds tens of objects and a noun phrase is a few words, so these
# bounds refuse only what no scene needs; past them a request is answered with the reason
# before any backend runs (10,000 phrases, or one of 700 KB, once held the node for minutes).
MAX_PHRASES = 100
MAX_PHRASE_CHARS = 200


def phrases_problem(phrases: Sequence[str]) -> str | None:
    """Why `phrases` cannot be one request (too many, one too long), or None."""
    if len(phrases) > MAX_PHRASES:
        return f"{len(phrases)} phrases in one request; at most {MAX_PHRASES}"
    for i, p in enumerate(phrases):
        if len(p) > MAX_PHRASE_CHARS:
            return (f"phrase {i + 1} is {len(p)} characters long ('{p[:40]}...'); a phrase "
                    f"has at most {MAX_PHRASE_CHARS}")
    return None


@dataclass(frozen=True)
class PerceptionConfig:
    """How to make a backend (`registry.make_backend`): the node's parameters and the CLI's
    flags end up here, and a backend's `from_config` reads what it needs."""

    backend: str = "sim"
    # the scene's entities and their descriptions: what phrases are grounded on (`sim`), or
    # the ids a detection may be matched to; None when the backend needs no scene
    scene: SceneSpec | None = None
    weights: Path | None = None  # local model folder (`owlv2`, `grounding_dino`)
    score_threshold: float = 0.1  # detections below are dropped
    options: Mapping[str, Any] = field(default_factory=dict)  # backend-specific extras


class PerceptionBackend(Protocol):
    """Finds the objects phrases describe in one RGB-D frame."""

    name: str

    def detect(self, frame: RGBDFrame, phrases: Sequence[str],
               max_results: int = 1) -> DetectResult:
        """At most `max_results` detections per phrase (0: no limit)."""
        ...

    def close(self) -> None:
        """Release models, threads, devices."""
        ...
