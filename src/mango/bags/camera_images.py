"""An episode's camera images, decoded as the frames ask for them, in one more pass over the
bag: an export holds a few images at a time, not the run's (a few minutes of two 224x224
cameras is most of a gigabyte)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import numpy as np

from mango.bags.reader import BagMessage, BagReader
from mango.bags.run_streams import IMAGE_TYPE, RunStreams, image_rgb
from mango.bags.types import BagTypes


class CameraImages:
    """Image `index` of a camera (counted as `read_run` counts them: the episode's messages on
    its topic, in file order), for indices that never go back."""

    def __init__(self, reader: BagReader, run: RunStreams, types: BagTypes) -> None:
        self._run = run
        self._types = types
        self._camera = {s.topic: c for c, s in run.cameras.items()}
        self._messages: Iterator[BagMessage] = (
            m for m in reader.messages(set(self._camera)) if m.log_time_ns >= run.first_log)
        self._read = dict.fromkeys(run.cameras, 0)
        # messages read while looking for another camera's image, until theirs asks
        self._pending: dict[str, deque[tuple[int, bytes]]] = {c: deque() for c in run.cameras}
        self._current: dict[str, tuple[int, np.ndarray | None]] = dict.fromkeys(
            run.cameras, (-1, None))

    def get(self, camera: str, index: int) -> np.ndarray:
        at, pixels = self._current[camera]
        if at == index and pixels is not None:
            return pixels
        pending = self._pending[camera]
        while True:
            while pending and pending[0][0] < index:
                pending.popleft()
            if pending and pending[0][0] == index:
                break
            m = next(self._messages, None)
            if m is None:
                raise self._run.error(f"image {index + 1} could not be read again (the bag "
                                      "changed while it was exported?)",
                                      self._run.cameras[camera].topic)
            c = self._camera[m.topic]
            self._pending[c].append((self._read[c], m.data))
            self._read[c] += 1
        topic = self._run.cameras[camera].topic
        pixels = image_rgb(self._types.deserialize(pending[0][1], IMAGE_TYPE), topic,
                           self._run.bag)
        self._current[camera] = (index, pixels)
        return pixels
