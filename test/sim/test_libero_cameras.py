"""LIBERO's cameras as robosuite renders them (`LiberoClient.render`): upright RGB, depth in
metres, the entity of every pixel, and the intrinsics and pose robosuite's own
`camera_utils` give (robosuite 1.4 `utils/camera_utils.py`, run in LIBERO's process). Checked
together on a task's init state: the pixels an object owns, lifted to 3-D with their depth and
the camera's K and pose, are centred where the world state puts that object (no background
pixel among them: robosuite's collision meshes hidden as its env hides them, the blended edges
of the multisampled ID colours dropped), and the object's position projected into the image
lands on a pixel it owns. Needs `.venv-libero`."""

from __future__ import annotations

import numpy as np
import pytest

from mango.errors import InputError
from mango.sim.libero import LiberoClient, parse_scene, world_state

pytestmark = [pytest.mark.libero, pytest.mark.slow]


@pytest.fixture(scope="module")
def client():
    with LiberoClient() as c:
        c.open(parse_scene("libero/libero_spatial/0"), 0)
        yield c


def test_pixels_depth_and_camera_agree_with_the_world_state(client: LiberoClient) -> None:
    frame = client.render("agentview", 160, 128)
    assert frame.rgb.shape == (128, 160, 3) and frame.rgb.dtype == np.uint8
    assert frame.depth.shape == frame.segmentation.shape == (128, 160)
    assert np.isfinite(frame.depth).all() and 0.1 < frame.depth.min() < frame.depth.max() < 10
    assert {"akita_black_bowl_1", "plate_1", "robot"} <= set(frame.labels)
    state = world_state(client.facts(), client.task.articulation, 0.0)
    K, pose = frame.K, frame.camera_to_world
    for name in ("akita_black_bowl_1", "plate_1", "glazed_rim_porcelain_ramekin_1"):
        v, u = np.nonzero(frame.segmentation == frame.labels.index(name))
        assert len(v) > 20, name
        z = frame.depth[v, u]
        cam = np.stack([(u + 0.5 - K[0, 2]) * z / K[0, 0], (v + 0.5 - K[1, 2]) * z / K[1, 1], z,
                        np.ones_like(z)])
        world = (pose @ cam)[:3]
        seen = (world.min(axis=1) + world.max(axis=1)) / 2  # the middle of what is seen
        truth = np.asarray(state.objects[name].position)
        assert np.linalg.norm(seen[:2] - truth[:2]) < 0.015, (name, seen, truth)
        # and the other way: the object's position, projected, is a pixel it owns
        p = np.linalg.inv(pose) @ np.append(truth, 1.0)
        col, row = (K @ p[:3])[:2] / p[2]
        assert frame.labels[frame.segmentation[int(row), int(col)]] == name, name


def test_the_wrist_camera_and_bad_requests(client: LiberoClient) -> None:
    wrist = client.render("robot0_eye_in_hand", 64, 64)
    assert wrist.rgb.shape == (64, 64, 3) and wrist.depth.min() > 0
    with pytest.raises(InputError) as err:
        client.render("frontview_nope", 64, 64)
    assert err.value.field == "camera" and "agentview" in err.value.message
    with pytest.raises(InputError) as err:
        client.render("agentview", 8, 64)
    assert err.value.field == "width"
