"""Pure-numpy image helpers shared by cameras, policies and nodes."""

from __future__ import annotations

import numpy as np

from mango.imaging import resize_with_pad, to_rgb8


def test_resize_with_pad_keeps_aspect() -> None:
    img = np.full((100, 200, 3), 200, np.uint8)
    out = resize_with_pad(img, 50, 50)
    assert out.shape == (50, 50, 3)
    assert out[:12].max() == 0 and out[37:].max() == 0  # 25 rows of image, centred
    assert out[12:37].min() == 200


def test_resize_with_pad_keeps_grey_images_grey() -> None:
    img = np.full((40, 20), 90, np.uint8)
    out = resize_with_pad(img, 20, 20)
    assert out.shape == (20, 20) and out.dtype == np.uint8
    assert out[:, :5].max() == 0 and out[:, 15:].max() == 0  # 10 columns of image, centred
    assert out[:, 5:15].min() == 90


def test_to_rgb8_converts_grey_alpha_and_wide_types() -> None:
    grey = to_rgb8(np.array([[0, 300]], np.int32))
    assert grey.dtype == np.uint8 and grey.shape == (1, 2, 3)
    assert grey[0, 1].tolist() == [255, 255, 255]
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[..., 0] = 7
    rgb = to_rgb8(rgba)
    assert rgb.shape == (2, 2, 3) and rgb.flags.c_contiguous and rgb[0, 0].tolist() == [7, 0, 0]
