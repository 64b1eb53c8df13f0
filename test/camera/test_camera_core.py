"""Frame sources and calibration files, without ROS."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest

from mango.camera import FilesSource, Frame, FrameFitter, load_calibration, open_source
from mango.errors import InputError
from mango.imaging import letterbox, resize_with_pad

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


def test_calibration_file_and_letterboxing() -> None:
    cal = load_calibration(EXAMPLE)
    assert (cal.image_width, cal.image_height) == (640, 480)
    assert cal.k == [615.0, 0.0, 320.0, 0.0, 615.0, 240.0, 0.0, 0.0, 1.0]
    assert cal.d == [0.05, -0.1, 0.0, 0.0, 0.0] and cal.distortion_model == "plumb_bob"
    # same aspect: a plain rescale about pixel centres, u' = (u + 0.5) s - 0.5
    half = cal.letterboxed(320, 240)
    assert half.k == pytest.approx([307.5, 0, 159.75, 0, 307.5, 119.75, 0, 0, 1])
    # 640x480 into 224x224 the way openpi's client does it (openpi
    # packages/openpi-client/src/openpi_client/image_tools.py): 224x168, 28 rows above
    sq = cal.letterboxed(224, 224)
    s = 224 / 640
    assert (sq.image_width, sq.image_height) == (224, 224)
    assert sq.k == pytest.approx([615 * s, 0, 320.5 * s - 0.5, 0, 615 * s,
                                  240.5 * s - 0.5 + 28, 0, 0, 1])
    assert sq.p == pytest.approx([*sq.k[:3], 0, *sq.k[3:6], 0, 0, 0, 1, 0])
    assert sq.d == cal.d and sq.r == cal.r  # act on normalised coordinates: unchanged


def test_letterbox_geometry_matches_the_resized_pixels() -> None:
    box = letterbox(480, 640, 224, 224)
    assert (box.inner_width, box.inner_height, box.left, box.top) == (224, 168, 0, 28)
    assert letterbox(720, 1280, 224, 224).top == 49  # int((224 - 126) / 2)
    tall = letterbox(224, 224, 180, 320)
    assert (tall.inner_width, tall.left, tall.top) == (180, 70, 0)
    # a single bright source pixel lands where `point` says (nearest: exactly one pixel)
    img = np.zeros((12, 16), np.uint8)
    img[7, 3] = 255
    out = resize_with_pad(img, 40, 40, interpolation="nearest")  # 2.5x, 5 rows above
    b = letterbox(12, 16, 40, 40)
    u, v = b.point(3, 7)
    ys, xs = np.nonzero(out)
    assert abs(xs.mean() - u) <= 0.5 and abs(ys.mean() - v) <= 0.5
    # K maps like `point`: project the optical axis (the principal point)
    k = [50.0, 0, 20.0, 0, 50.0, 11.0, 0, 0, 1]
    k2 = b.camera_matrix(k)
    assert (k2[2], k2[5]) == pytest.approx(b.point(20.0, 11.0))
    assert b.camera_matrix([0.0] * 9) == [0.0] * 9  # uncalibrated stays uncalibrated


def test_frame_fitter_letterboxes_depth_with_nearest_and_keeps_calibration() -> None:
    cal = load_calibration(EXAMPLE)
    rgb = np.zeros((480, 640, 3), np.uint8)
    rgb[:, 320:] = 200
    depth = np.where(np.arange(640)[None, :] < 320, 1.0, 2.0).astype(np.float32)
    depth = np.repeat(depth, 480, axis=0)
    fitted = FrameFitter(224, 224, cal).fit(Frame(rgb, depth))
    assert fitted.rgb.shape == (224, 224, 3) and fitted.depth.shape == (224, 224)
    body = fitted.depth[28:196]
    assert set(np.unique(body).tolist()) == {1.0, 2.0}  # no blended 1.5 m surface
    assert np.isnan(fitted.depth[:28]).all() and np.isnan(fitted.depth[196:]).all()
    assert fitted.calibration == cal.letterboxed(224, 224)
    # bright RGB and far depth start at the same column
    assert int(np.argmax(fitted.rgb[100, :, 0] > 100)) == int(np.argmax(body[72] > 1.5))
    # frames of another aspect than the calibration's are published uncalibrated
    assert FrameFitter(0, 0, cal).fit(Frame(np.zeros((100, 100, 3), np.uint8))).calibration \
        is None
    assert FrameFitter(0, 0, cal).fit(Frame(np.zeros((240, 320, 3), np.uint8))).calibration \
        == cal.letterboxed(320, 240)
    with pytest.raises(InputError, match="aligned"):
        FrameFitter(0, 0).fit(Frame(rgb, depth[:100]))
    with pytest.raises(InputError, match="both width and height"):
        FrameFitter(224, 0)


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
