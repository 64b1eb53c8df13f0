"""Frame sources behind one protocol, chosen by name: `files` (a folder of images or a video,
looping), `opencv` (a device index, a stream URL or a video file; `opencv-python-headless`, a
dependency), `realsense` (colour + aligned depth; optional `pyrealsense2`). Packages are
imported only when their source is opened (cv2 is heavy), with a clear error when missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mango.errors import InputError
from mango.imaging import to_rgb8

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".ppm")


@dataclass(frozen=True)
class Frame:
    rgb: np.ndarray  # HxWx3 uint8
    depth: np.ndarray | None = None  # HxW float32, metres
    stamp: float = 0.0  # wall time of capture


class FrameSource(Protocol):
    def read(self) -> Frame | None:
        """The next frame (None at the end of a non-looping source)."""
        ...

    def close(self) -> None: ...


class FilesSource:
    """A folder of images (sorted by name) or a video file, looped."""

    def __init__(self, path: str | Path, loop: bool = True) -> None:
        import imageio.v2 as imageio

        self._imageio = imageio
        self.path, self.loop = Path(path), loop
        if self.path.is_dir():
            self.files = sorted(p for p in self.path.iterdir()
                                if p.suffix.lower() in IMAGE_SUFFIXES)
            if not self.files:
                raise InputError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in the folder",
                                 file=str(self.path))
        elif self.path.is_file():
            self.files = []
        else:
            raise InputError("no such folder or video file", file=str(self.path))
        self._index = 0
        self._frames: Iterator[np.ndarray] | None = None

    def _next_video_frame(self) -> np.ndarray | None:
        for _ in range(2):
            if self._frames is None:
                try:
                    self._frames = iter(self._imageio.get_reader(str(self.path)))
                except (OSError, ValueError, RuntimeError) as exc:
                    raise InputError(f"cannot read video: {exc}", file=str(self.path)) from None
            frame = next(self._frames, None)
            if frame is not None:
                return frame
            self._frames = None
            if not self.loop:
                return None
        raise InputError("the video has no frames", file=str(self.path))

    def read(self) -> Frame | None:
        if not self.files:
            img = self._next_video_frame()
            return None if img is None else Frame(to_rgb8(img), stamp=time.time())
        if self._index >= len(self.files):
            if not self.loop:
                return None
            self._index = 0
        path = self.files[self._index]
        self._index += 1
        try:
            img = self._imageio.imread(str(path))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read image: {exc}", file=str(path)) from None
        return Frame(to_rgb8(img), stamp=time.time())

    def close(self) -> None:
        self._frames = None


class OpenCVSource:
    """A camera device index ("0"), a stream URL or a video file through OpenCV's VideoCapture
    (a file ends: `read` then returns None)."""

    def __init__(self, source: str, width: int = 0, height: int = 0) -> None:
        try:
            import cv2
        except ImportError:
            raise InputError("the opencv camera backend needs: pip install "
                             "opencv-python-headless", field="backend") from None
        self.cv2 = cv2
        self.cap = cv2.VideoCapture(int(source) if source.isdigit() else source)
        if not self.cap.isOpened():
            raise InputError(f"cannot open camera {source!r}", field="source")
        if width and height:
            self.cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
            self.cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)

    def read(self) -> Frame | None:
        ok, bgr = self.cap.read()
        if not ok:
            return None
        return Frame(np.ascontiguousarray(bgr[..., ::-1]), stamp=time.time())

    def close(self) -> None:
        self.cap.release()


class RealSenseSource:
    """An Intel RealSense: colour plus depth aligned to it, in metres."""

    def __init__(self, serial: str = "", width: int = 640, height: int = 480, fps: int = 30,
                 depth: bool = True) -> None:
        try:
            import pyrealsense2 as rs
        except ImportError:
            raise InputError("the realsense camera backend needs: pip install pyrealsense2",
                             field="backend") from None
        self.rs, self.depth = rs, depth
        self.pipeline = rs.pipeline()
        cfg = rs.config()
        if serial:
            cfg.enable_device(serial)
        cfg.enable_stream(rs.stream.color, width or 640, height or 480, rs.format.rgb8, fps)
        if depth:
            cfg.enable_stream(rs.stream.depth, width or 640, height or 480, rs.format.z16, fps)
        profile = self.pipeline.start(cfg)
        self.scale = profile.get_device().first_depth_sensor().get_depth_scale() if depth else 0
        self.align = rs.align(rs.stream.color)

    def read(self) -> Frame | None:
        frames = self.align.process(self.pipeline.wait_for_frames())
        color = frames.get_color_frame()
        if not color:
            return None
        rgb = np.asanyarray(color.get_data()).copy()
        depth = None
        if self.depth:
            d = frames.get_depth_frame()
            depth = np.asanyarray(d.get_data()).astype(np.float32) * self.scale if d else None
        return Frame(rgb, depth, time.time())

    def close(self) -> None:
        self.pipeline.stop()


SOURCES: dict[str, Callable[..., FrameSource]] = {
    "files": lambda source, loop=True, **_: FilesSource(source, loop),
    "opencv": lambda source, width=0, height=0, **_: OpenCVSource(source, width, height),
    "realsense": lambda source, width=640, height=480, fps=30, depth=True, **_: RealSenseSource(
        source, width, height, int(fps), depth),
}


def open_source(backend: str, source: str, **options: Any) -> FrameSource:
    """Open a frame source by backend name (`files`, `opencv`, `realsense`)."""
    factory = SOURCES.get(backend)
    if factory is None:
        raise InputError(f"unknown camera backend {backend!r} (known: {', '.join(SOURCES)})",
                         field="backend")
    return factory(source, **options)
