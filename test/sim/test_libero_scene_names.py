"""`libero/<suite>/<task>` scene names and `--seed K` init-state indices (commands spec §7),
and the one error a missing LIBERO runtime gives. No LIBERO process needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mango.errors import InputError
from mango.sim.libero import (
    LiberoClient,
    LiberoRuntimeError,
    LiberoScene,
    is_libero_scene,
    parse_init_state,
    parse_scene,
)


def test_index_and_stem() -> None:
    assert parse_scene("libero/libero_goal/3") == LiberoScene("libero_goal", 3)
    stem = "open_the_middle_drawer_of_the_cabinet"
    assert parse_scene(f"libero/libero_goal/{stem}") == LiberoScene("libero_goal", stem)
    assert parse_scene("libero/libero_90/0").name == "libero/libero_90/0"
    assert is_libero_scene("libero/libero_10/0") and not is_libero_scene("libero10_soup")


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("libero/libero_100/0", "unknown LIBERO suite 'libero_100'"),
        ("libero/libero_goal", "expected libero/SUITE/TASK"),
        ("libero/libero_goal/0/1", "expected libero/SUITE/TASK"),
        ("libero/libero_goal/-1", "neither an index nor a BDDL file stem"),
        ("libero/libero_goal/", "neither an index nor a BDDL file stem"),
    ],
)
def test_bad_scene_names(name: str, says: str) -> None:
    with pytest.raises(InputError, match=says) as err:
        parse_scene(name)
    assert err.value.field == "scene"


def test_init_state_index() -> None:
    assert parse_init_state("7") == 7
    with pytest.raises(InputError, match=">= 0"):
        parse_init_state(-1)
    with pytest.raises(InputError, match="must be an integer"):
        parse_init_state("first")


def test_missing_runtime_names_the_make_target(tmp_path: Path) -> None:
    with pytest.raises(LiberoRuntimeError, match="make libero-venv"):
        LiberoClient(venv=tmp_path / ".venv-libero")
