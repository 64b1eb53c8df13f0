"""How far `tabletop` gets on the sim's scenes: every described entity referred to by its
description, judged against the sim's segmentation (which entity a chosen cluster is).

A phrase counts as right when its best detection's mask is mostly (> 50 % of its labelled
pixels) the described entity. Used by the bench and by a test that keeps the figure honest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mango.perception.base import CameraPose, Intrinsics, RGBDFrame
from mango.perception.tabletop import TabletopBackend
from mango.sim.env import SimEnv


@dataclass
class GroundingTally:
    """Right / asked per scene, and each miss with what was chosen instead."""

    right: dict[str, int] = field(default_factory=dict)
    asked: dict[str, int] = field(default_factory=dict)
    # (scene, seed, phrase, what the best detection was)
    misses: list[tuple[str, int, str, str]] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        n = sum(self.asked.values())
        return sum(self.right.values()) / n if n else 0.0


def sim_frame(env: SimEnv, camera: str) -> tuple[RGBDFrame, np.ndarray]:
    """An `RGBDFrame` of a sim camera (no segmentation: tabletop must not see it) and the
    segmentation kept aside as ground truth."""
    rgb, depth, seg = env.render(camera)
    ci = env.camera_info(camera)
    pos, rot = env.camera_pose(camera)
    frame = RGBDFrame(camera=camera, rgb=rgb, depth=depth,
                      intrinsics=Intrinsics(ci.width, ci.height, ci.fx, ci.fy, ci.cx, ci.cy),
                      pose=CameraPose(pos, rot), stamp=env.last_render_time)
    assert seg is not None
    return frame, seg


def mask_owner(mask: np.ndarray | None, seg: np.ndarray, ids: Sequence[str]) -> str | None:
    """The entity most of a mask's labelled pixels belong to (None under 50 %)."""
    if mask is None:
        return None
    lab = seg[mask]
    lab = lab[lab >= 0]
    if len(lab) == 0:
        return None
    vals, counts = np.unique(lab, return_counts=True)
    k = int(np.argmax(counts))
    return ids[int(vals[k])] if counts[k] > 0.5 * len(lab) else None


def evaluate_grounding(scenes: Sequence[str | Path], seeds: Sequence[int],
                       camera: str = "front",
                       image_size: tuple[int, int] = (640, 480)) -> GroundingTally:
    """Refer to every described entity of each scene and seed by 'the <description>'."""
    tally = GroundingTally()
    for scene in scenes:
        env = SimEnv(scene, seed=seeds[0], cameras=(camera,), image_size=image_size)
        try:
            backend = TabletopBackend(env.scene.robot.base)
            name = env.scene.name
            described = [(e.id, e.description) for e in env.scene.entities if e.description]
            for seed in seeds:
                env.reset(seed)
                frame, seg = sim_frame(env, camera)
                phrases = [f"the {d}" for _, d in described]
                res = backend.detect(frame, phrases, max_results=1)
                for (eid, _), phrase in zip(described, phrases, strict=True):
                    dets = res.for_phrase(phrase)
                    got = mask_owner(dets[0].mask, seg, env.segmentation_ids) if dets else None
                    # a fixture's part (a drawer's region) is its fixture in segmentation
                    owner = env.scene.joint_owner(eid).id if _is_joint(env, eid) else eid
                    ok = got == owner
                    tally.asked[name] = tally.asked.get(name, 0) + 1
                    tally.right[name] = tally.right.get(name, 0) + int(ok)
                    if not ok:
                        tally.misses.append((name, seed, phrase, got or "nothing"))
        finally:
            env.close()
    return tally


def _is_joint(env: SimEnv, eid: str) -> bool:
    try:
        env.scene.entity(eid)
        return False
    except KeyError:
        return True
