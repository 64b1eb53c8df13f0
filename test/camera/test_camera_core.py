"""Frame sources and calibration files, without ROS."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest

from mango.camera import FilesSource, load_calibration, open_source
from mango.errors import InputError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config" / "cameras" / "example_640x480.yaml"


def _frames(n: int, h: int = 48, w: int = 64) -> list[np.ndarray]:
    return [np.full((h, w, 3), 40 * (k + 1), np.uint8) for k in range(n)]


def test_folder_of_images_loops_in_name_order(tmp_path: Path) -> None:
    for k, img in enumerate(_frames(3)):
        imageio.imwrite(tmp_path / f"frame_{k:03d}.png", img)
    (tmp_path / "notes.txt").write_text("not an image")
    src = open_source("files", str(tmp_path))
    values = [int(src.read().rgb[0, 0, 0]) for _ in range(7)]
    assert values == [40, 80, 120, 40, 80, 120, 40]
    once = FilesSource(tmp_path, loop=False)
    assert [once.read() is None for _ in range(4)] == [False, False, False, True]


def test_video_file_loops(tmp_path: Path) -> None:
    video = tmp_path / "clip.gif"
    imageio.mimwrite(video, _frames(2), duration=50, loop=0)
    src = open_source("files", str(video))
    frames = [src.read() for _ in range(5)]
    assert all(f is not None and f.rgb.shape == (48, 64, 3) for f in frames)
    means = [float(f.rgb.mean()) for f in frames]
    assert means[0] == pytest.approx(means[2], abs=2) and means[1] == pytest.approx(means[3],
                                                                                    abs=2)
    assert abs(means[0] - means[1]) > 20


def test_missing_sources_and_backends_are_clear(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such folder or video"):
        open_source("files", str(tmp_path / "nope"))
    with pytest.raises(InputError, match="no images"):
        open_source("files", str(tmp_path))
    with pytest.raises(InputError, match="known: files, opencv, realsense"):
        open_source("webcam9000", "0")


def test_optional_realsense_backend_says_what_to_install() -> None:
    try:
        import pyrealsense2  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip(reason="pyrealsense2 is installed here; this checks the message without it")
    with pytest.raises(InputError, match="pip install pyrealsense2"):
        open_source("realsense", "0")


def _write_mp4(path: Path, colours: list[tuple[int, int, int]], h: int = 48,
               w: int = 64) -> None:
    """An mp4 (MPEG-4 part 2) written by OpenCV itself: frame k is `colours[k]` (RGB) with a
    white square that moves 4 px right per frame."""
    import cv2

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10.0, (w, h))
    assert writer.isOpened()
    for k, rgb in enumerate(colours):
        frame = np.zeros((h, w, 3), np.uint8)
        frame[:] = rgb[::-1]  # OpenCV writes BGR
        frame[8:24, 4 + 4 * k:20 + 4 * k] = 255
        writer.write(frame)
    writer.release()


def test_opencv_source_reads_a_video_file_in_rgb(tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    colours = [(200, 0, 0), (0, 200, 0), (0, 0, 200), (200, 200, 0), (0, 200, 200)]
    _write_mp4(video, colours)
    src = open_source("opencv", str(video))
    try:
        frames = []
        while (f := src.read()) is not None:
            frames.append(f)
            assert len(frames) <= len(colours), "the video did not end"
    finally:
        src.close()
    assert len(frames) == len(colours)
    for k, (f, rgb) in enumerate(zip(frames, colours, strict=True)):
        assert f.rgb.shape == (48, 64, 3) and f.rgb.dtype == np.uint8 and f.rgb.flags.c_contiguous
        assert f.depth is None and f.stamp > 0
        # red stays red: the source turns OpenCV's BGR into RGB (lossy codec: a few levels off)
        assert np.abs(f.rgb[40, 40].astype(int) - rgb).max() <= 12, (k, f.rgb[40, 40])
        cols = np.nonzero(f.rgb[16].min(axis=1) > 230)[0]
        assert abs(int(cols.mean()) - (11 + 4 * k)) <= 1, (k, cols)


def test_opencv_source_that_cannot_open_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "junk.mp4").write_bytes(b"not a video")
    with pytest.raises(InputError, match="cannot open camera"):
        open_source("opencv", str(tmp_path / "junk.mp4"))


def test_calibration_file_and_scaling() -> None:
    cal = load_calibration(EXAMPLE)
    assert (cal.image_width, cal.image_height) == (640, 480)
    assert cal.k == [615.0, 0.0, 320.0, 0.0, 615.0, 240.0, 0.0, 0.0, 1.0]
    assert cal.d == [0.05, -0.1, 0.0, 0.0, 0.0] and cal.distortion_model == "plumb_bob"
    half = cal.scaled(320, 240)
    assert half.k[0] == pytest.approx(307.5) and half.k[5] == pytest.approx(120.0)
    assert half.p[2] == pytest.approx(160.0)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("image_width: 640\nimage_height: 480\n", "camera_matrix"),
        ("image_width: 640\nimage_height: 480\ncamera_matrix: {rows: 3, cols: 3, data: [1, 2]}\n",
         "camera_matrix"),
        ("image_width: -1\nimage_height: 480\n"
         "camera_matrix: {rows: 3, cols: 3, data: [1, 0, 0, 0, 1, 0, 0, 0, 1]}\n", "image_width"),
    ],
)
def test_bad_calibration_names_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "cal.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_calibration(path)
    assert err.value.file == str(path) and (err.value.field or "").startswith(field)


def test_bad_calibration_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    path.write_text("image_width: 640\ncamera_matrix: [unclosed\n")
    with pytest.raises(InputError) as err:
        load_calibration(path)
    assert err.value.line is not None
