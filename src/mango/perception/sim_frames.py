"""RGB-D frames straight from a `SimEnv` (the CLI, the bench and the tests; the node gets the
same from sim_node's topics)."""

from __future__ import annotations

import numpy as np

from mango.perception.base import CameraPose, Intrinsics, RGBDFrame
from mango.sim.env import SimEnv


def sim_frame(env: SimEnv, camera: str, *, rgb: bool = True) -> RGBDFrame:
    """Render one camera: images, intrinsics, the optical frame's pose and the segmentation."""
    image, depth, seg = env.render(camera, rgb=rgb, depth=True, seg=True)
    info = env.camera_info(camera)
    pos, rot = env.camera_pose(camera)
    assert depth is not None
    depth = np.where(depth < env.model.vis.map.zfar * env.model.stat.extent * 0.99, depth,
                     np.nan).astype(np.float32)  # the far plane is "nothing there"
    return RGBDFrame(camera=camera, rgb=image, depth=depth,
                     intrinsics=Intrinsics(info.width, info.height, info.fx, info.fy,
                                           info.cx, info.cy),
                     pose=CameraPose(pos, rot), stamp=env.last_render_time,
                     segmentation=seg, segmentation_ids=tuple(env.segmentation_ids))
