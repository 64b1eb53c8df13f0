"""A state's freshness is when it reached the process (the middleware's reception stamp), not
when a busy executor got round to its callback."""

from __future__ import annotations

import time

import pytest

from mango.nodes.common import arrival


def test_arrival_is_the_reception_stamp_on_the_monotonic_clock() -> None:
    m0, w0 = time.monotonic(), time.time()
    t = arrival({"received_timestamp": int((w0 - 0.5) * 1e9)})  # came half a second before
    # however long the call took (a loaded machine), both clocks ran alike meanwhile
    assert t == pytest.approx(m0 - 0.5, abs=0.01)


def test_no_reception_stamp_is_no_arrival_time() -> None:
    assert arrival({"received_timestamp": 0}) is None
    assert arrival({}) is None


def test_a_stamp_from_the_future_is_now() -> None:  # clocks a hair apart: never ahead of now
    assert arrival({"received_timestamp": time.time_ns() + 10**9}) <= time.monotonic()
