"""A seed is an integer in 0..2**32-1 wherever it comes from (`mango.sim.seeds`): the command
line's `--seed`, a campaign's `seeds`, a scene reset; anything else is an `InputError` naming
the field, before numpy sees it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mango.errors import InputError
from mango.sim.env import SimEnv
from mango.sim.seeds import MAX_SEED_COUNT, SEED_MAX, check_seed, check_seed_range

TINY = Path(__file__).resolve().parents[1] / "data" / "sim" / "tiny_basket.yaml"


@given(st.integers(min_value=0, max_value=SEED_MAX))
def test_every_seed_is_taken_as_it_is(seed: int) -> None:
    assert check_seed(seed) == seed and check_seed(np.uint32(seed)) == seed


@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=SEED_MAX + 1),
                 st.floats(), st.booleans(), st.text(max_size=5), st.none()))
def test_anything_else_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(InputError) as err:
        check_seed(value, field="--seed")
    assert err.value.field == "--seed" and f"0..{SEED_MAX}" in err.value.message


@given(st.integers(min_value=-3, max_value=SEED_MAX + 3),
       st.integers(min_value=-3, max_value=MAX_SEED_COUNT + 3))
def test_a_range_is_taken_when_every_seed_in_it_is_one(start: int, count: int) -> None:
    if start >= 0 and 1 <= count <= MAX_SEED_COUNT and start + count - 1 <= SEED_MAX:
        assert check_seed_range(start, count) == range(start, start + count)
    else:
        with pytest.raises(InputError):
            check_seed_range(start, count)


def test_a_scene_refuses_a_seed_numpy_would_choke_on() -> None:
    with pytest.raises(InputError) as err:
        SimEnv(TINY, seed=-1, cameras=())
    assert err.value.field == "seed"
    env = SimEnv(TINY, seed=SEED_MAX, cameras=())
    try:
        with pytest.raises(InputError):
            env.reset(2**64)
        env.reset(3)  # still usable after the refusal
    finally:
        env.close()
