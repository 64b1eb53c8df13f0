"""RGB-D frames from LIBERO itself (`LiberoClient.render`) in the perception backends' form
(the scene a LIBERO task's phrases are grounded in is `bddl.libero_oracle.scene_task`).

LIBERO's cameras are named as robosuite names them; the stack's two roles map onto them
(`front` is LIBERO's `agentview`, what its policies see, `wrist` its `robot0_eye_in_hand`).
The frame is the privileged view, as `sim_frames.sim_frame` is for the embedded sim: the
camera's true pose (robosuite's extrinsics) and the entity of every pixel.
"""

from __future__ import annotations

from mango.perception.base import CameraPose, Intrinsics, RGBDFrame
from mango.sim.libero.client import LiberoFrame

CAMERAS = {"front": "agentview", "wrist": "robot0_eye_in_hand"}


def libero_camera(name: str) -> str:
    """LIBERO's name of a camera given by its role (`front`, `wrist`) or its own name."""
    return CAMERAS.get(name, name)


def libero_rgbd(frame: LiberoFrame, stamp: float = 0.0) -> RGBDFrame:
    """The frame with intrinsics and pose as the backends take them; pixel labels -1 = none."""
    h, w = frame.depth.shape
    k = frame.K
    seg = frame.segmentation.astype(int) - 1  # LIBERO's label 0 is "" (no entity)
    return RGBDFrame(camera=frame.camera, rgb=frame.rgb, depth=frame.depth,
                     intrinsics=Intrinsics(w, h, float(k[0, 0]), float(k[1, 1]),
                                           float(k[0, 2]), float(k[1, 2])),
                     pose=CameraPose.from_matrix(frame.camera_to_world), stamp=stamp,
                     segmentation=seg, segmentation_ids=tuple(frame.labels[1:]))

