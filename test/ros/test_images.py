"""numpy <-> Image conversion."""

from __future__ import annotations

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image

from mango.errors import InputError
from mango.ros.images import camera_info, image_to_numpy, numpy_to_image


@pytest.mark.parametrize(
    ("encoding", "shape", "dtype"),
    [("rgb8", (4, 5, 3), np.uint8), ("mono8", (3, 7), np.uint8), ("32FC1", (6, 2), np.float32),
     ("16UC1", (2, 3), np.uint16), ("rgba8", (2, 2, 4), np.uint8)],
)
def test_round_trip(encoding: str, shape: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(0)
    a = (rng.random(shape) * 200).astype(dtype)
    msg = deserialize_message(serialize_message(numpy_to_image(a, encoding)), Image)
    assert msg.step == shape[1] * (shape[2] if len(shape) == 3 else 1) * a.itemsize
    np.testing.assert_array_equal(image_to_numpy(msg), a)


def test_padded_rows_and_big_endian() -> None:
    a = np.arange(12, dtype=">u2").reshape(3, 4)
    raw = np.zeros((3, 5), dtype=">u2")
    raw[:, :4] = a
    msg = Image(height=3, width=4, encoding="mono16", is_bigendian=1, step=10)
    msg.data = raw.tobytes()
    np.testing.assert_array_equal(image_to_numpy(msg), a)


def test_mismatch_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="does not fit"):
        numpy_to_image(np.zeros((2, 2, 3)), "mono8")
    with pytest.raises(InputError, match="unsupported"):
        numpy_to_image(np.zeros((2, 2)), "yuv422")
    short = Image(height=4, width=4, encoding="rgb8", step=12)
    short.data = bytes(10)
    with pytest.raises(InputError, match="too short"):
        image_to_numpy(short)


def test_camera_info_intrinsics() -> None:
    info = camera_info(640, 480, 500.0, 501.0, 320.0, 240.0)
    assert list(info.k) == [500.0, 0.0, 320.0, 0.0, 501.0, 240.0, 0.0, 0.0, 1.0]
    assert info.p[0] == 500.0 and info.p[5] == 501.0 and info.distortion_model == "plumb_bob"
