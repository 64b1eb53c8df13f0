"""Frames put together from images that arrive one by one: never two instants mixed."""

from __future__ import annotations

from mango.perception.frames import FrameAssembler


def test_newest_complete_capture_wins() -> None:
    a = FrameAssembler(keep=3)
    assert a.latest(("depth",)) is None
    a.add("rgb", 1.0, "rgb1")
    a.add("depth", 1.0, "d1")
    a.add("segmentation", 1.0, "s1")
    a.add("rgb", 2.0, "rgb2")
    a.add("depth", 2.0, "d2")  # its segmentation is still on the way
    assert a.latest(("depth", "segmentation")) == (1.0, {"rgb": "rgb1", "depth": "d1",
                                                         "segmentation": "s1"})
    assert a.latest(("depth",)) == (2.0, {"rgb": "rgb2", "depth": "d2"})
    a.add("segmentation", 2.0, "s2")
    assert a.latest(("depth", "segmentation"))[0] == 2.0  # type: ignore[index]
    for t in (3.0, 4.0, 5.0):
        a.add("depth", t, f"d{t}")
    assert a.latest(("depth", "segmentation")) is None  # capture 2's depth has been dropped
    assert a.has("rgb") and a.latest(()) is None


def test_a_restarted_clock_drops_the_captures_from_before_it() -> None:
    """sim_node restarts its time on a scene reset: the frames of the world before it would
    stay 'newest' by stamp for `keep` captures, and a grasp would go where things were."""
    a = FrameAssembler(keep=4)
    for t in (30.0, 30.2):
        a.add("rgb", t, f"old{t}")
        a.add("depth", t, f"old{t}")
    a.add("rgb", 0.1, "new")  # the first image after the reset
    assert a.latest(("depth",)) is None  # the old depth is gone, the new one not yet here
    a.add("depth", 0.1, "new-depth")
    assert a.latest(("depth",)) == (0.1, {"rgb": "new", "depth": "new-depth"})


def test_the_capture_a_detection_was_made_on_is_found_by_its_stamp() -> None:
    """A detection names its image by stamp (to the nanosecond in a message): its mask goes
    with that capture's depth, not with a newer one's."""
    a = FrameAssembler(keep=3)
    for t in (1.1, 1.2, 1.3):
        a.add("depth", t, f"d{t}")
    assert a.latest(("depth",), 1.2 + 4e-10) == (1.2, {"depth": "d1.2"})
    assert a.latest(("depth",), 1.0) is None  # dropped already (or never taken)
