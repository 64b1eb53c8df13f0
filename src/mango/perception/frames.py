"""Putting RGB-D frames together from separately arriving images (a node's callbacks).

Colour, depth and segmentation of one capture carry the same stamp (sim_node stamps all three
with the render's time; a RealSense aligned-depth pair likewise), but arrive one by one: the
frame given out is the newest stamp for which every required image has arrived, so a Detect
between two images of a capture never mixes instants. A clock that restarts (a sim reset)
drops the captures from before it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

KINDS = ("rgb", "depth", "segmentation")


class FrameAssembler:
    """The last few images (arrays or messages, converted when used) of each kind of one
    camera, by stamp."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._images: dict[str, OrderedDict[float, Any]] = {k: OrderedDict()
                                                                   for k in KINDS}

    def add(self, kind: str, stamp: float, image: Any) -> None:
        store = self._images[kind]
        if store and stamp < next(reversed(store)):
            # one kind's images come in order: an older stamp means the clock restarted (a
            # sim reset); the captures from before it are of another world, never "newest"
            for other in self._images.values():
                for t in [t for t in other if t > stamp]:
                    del other[t]
        store[stamp] = image
        while len(store) > self.keep:
            store.popitem(last=False)

    def has(self, kind: str) -> bool:
        return bool(self._images[kind])

    def latest(self, required: tuple[str, ...], stamp: float | None = None
               ) -> tuple[float, dict[str, Any]] | None:
        """(stamp, images) of the newest capture that has every `required` kind (others
        added when they have that stamp), or of the one taken at `stamp`; None if there is
        none."""
        if not required:
            return None
        stamps = set(self._images[required[0]])
        for k in required[1:]:
            stamps &= set(self._images[k])
        if stamp is not None:  # a stamp that went through a message: to the microsecond
            stamps = {t for t in stamps if abs(t - stamp) < 1e-6}
        if not stamps:
            return None
        t = max(stamps)
        return t, {k: s[t] for k, s in self._images.items() if t in s}
