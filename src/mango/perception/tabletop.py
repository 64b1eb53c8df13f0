"""`tabletop`: the classical tabletop backend (no learned weights; real RGB-D or sim renders).

Segmentation in `tabletop_pipeline`, phrases in `tabletop_grounding`; this module adapts both
to the `PerceptionBackend` protocol. It knows no entity ids (`entity_id` stays None): it
sees geometry and colour, not a scene file. Spatial words are in the robot's base frame:
the scene's `robot.base` when a scene is given, else `options["base_frame"]` = [x, y, z,
yaw_deg] in the world, else the world frame itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mango.perception.base import (
    Detection,
    DetectResult,
    PerceptionConfig,
    PerceptionError,
    RGBDFrame,
)
from mango.perception.tabletop_grounding import cluster_label, ground_phrase
from mango.perception.tabletop_pipeline import TabletopConfig, TabletopScene, segment_tabletop


class TabletopBackend:
    """Table plane + clusters + colour/shape/size/place words."""

    name = "tabletop"

    def __init__(self, base_position: Sequence[float] = (0.0, 0.0, 0.0), base_yaw: float = 0.0,
                 config: TabletopConfig | None = None, score_threshold: float = 0.1) -> None:
        self.base_position = np.asarray(base_position, float)
        self.base_yaw = float(base_yaw)
        self.config = config or TabletopConfig()
        self.score_threshold = score_threshold
        self.last_scene: TabletopScene | None = None  # the latest segmentation, for markers

    @classmethod
    def from_config(cls, cfg: PerceptionConfig) -> TabletopBackend:
        base: Sequence[float] = (0.0, 0.0, 0.0)
        yaw = 0.0
        if "base_frame" in cfg.options:
            bf = list(cfg.options["base_frame"])
            if len(bf) != 4 or not all(math.isfinite(float(v)) for v in bf):
                raise PerceptionError("options.base_frame must be [x, y, z, yaw_deg] "
                                      f"(finite numbers), got {bf!r}")
            base, yaw = bf[:3], math.radians(float(bf[3]))
        elif cfg.scene is not None:
            base = cfg.scene.robot.base
        return cls(base, yaw, score_threshold=cfg.score_threshold)

    def segment(self, frame: RGBDFrame) -> tuple[TabletopScene | None, str]:
        """The frame's table and clusters, or None and why the frame cannot be used."""
        if frame.rgb is None or frame.depth is None:
            return None, f"camera '{frame.camera}': the frame needs both RGB and depth"
        if frame.intrinsics is None:
            return None, f"camera '{frame.camera}': no camera info received yet"
        if frame.pose is None:
            return None, f"camera '{frame.camera}': its pose in the world is unknown"
        if frame.rgb.shape[:2] != frame.depth.shape:
            return None, (f"camera '{frame.camera}': RGB {frame.rgb.shape[:2]} and depth "
                          f"{frame.depth.shape} differ in size")
        sc = segment_tabletop(frame.rgb, frame.depth, frame.intrinsics, frame.pose.position,
                              frame.pose.rotation, self.config)
        self.last_scene = sc
        return sc, sc.message

    def detect(self, frame: RGBDFrame, phrases: Sequence[str],
               max_results: int = 1) -> DetectResult:
        sc, why = self.segment(frame)
        if sc is None or not sc.clusters:
            msg = f"camera '{frame.camera}': {why}" if sc is not None else why
            return DetectResult((), tuple(phrases), (msg,))
        dets: list[Detection] = []
        unmatched: list[str] = []
        messages: list[str] = []
        for phrase in phrases:
            found, msg = ground_phrase(phrase, sc.clusters, self.base_position, self.base_yaw)
            found = [g for g in found if g.score >= self.score_threshold]
            if max_results > 0:
                found = found[:max_results]
            if not found:
                unmatched.append(phrase)
                messages.append(msg or f"'{phrase}': no cluster scores above "
                                        f"{self.score_threshold}")
                continue
            for g in found:
                c = g.cluster
                dets.append(Detection(
                    phrase=phrase, entity_id=None, label=cluster_label(c), score=g.score,
                    box_2d=c.box_2d, mask=c.mask,
                    centroid=(float(c.centroid[0]), float(c.centroid[1]),
                              float(c.centroid[2])),
                    size=c.size, yaw=c.yaw, camera=frame.camera, stamp=frame.stamp,
                ))
        return DetectResult(tuple(dets), tuple(unmatched), tuple(messages))

    def close(self) -> None:
        self.last_scene = None
