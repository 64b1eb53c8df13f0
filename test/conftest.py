"""Suite-wide set-up: each test run gets its own ROS domain and the loopback DDS profile."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _isolate_ros() -> None:
    # Distinct domains keep parallel runs (and other developers' runs) invisible to each other.
    # Fast DDS maps domain d to ports 7400 + 250 d; ids up to 232 are valid.
    if "MANGO_TEST_DOMAIN_ID" not in os.environ:
        os.environ["MANGO_TEST_DOMAIN_ID"] = str(random.SystemRandom().randint(1, 200))
    os.environ["ROS_DOMAIN_ID"] = os.environ["MANGO_TEST_DOMAIN_ID"]
    os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = str(REPO / "config/dds/fastdds_local_shm.xml")
    os.environ.pop("ROS_AUTOMATIC_DISCOVERY_RANGE", None)
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("HOME", "/tmp")
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        os.environ.setdefault("AMENT_PREFIX_PATH", venv)


_isolate_ros()


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session", autouse=True)
def _ros_log_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["ROS_LOG_DIR"] = str(tmp_path_factory.mktemp("ros_log"))
