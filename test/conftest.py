"""Suite-wide set-up: each test run gets its own ROS domain and the loopback DDS profile."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _isolate_ros() -> None:
    # Distinct domains keep parallel runs (and other developers' runs) invisible to each other.
    # Fast DDS maps domain d to ports 7400 + 250 d; ids up to 232 are valid.
    if "MANGO_TEST_DOMAIN_ID" not in os.environ:
        os.environ["MANGO_TEST_DOMAIN_ID"] = str(random.SystemRandom().randint(1, 200))
    domain = int(os.environ["MANGO_TEST_DOMAIN_ID"])
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw<k>" under pytest-xdist
    if worker.startswith("gw"):  # the workers inherit the controller's id: one domain each
        domain = (domain - 1 + 101 * int(worker[2:])) % 200 + 1
    os.environ["ROS_DOMAIN_ID"] = str(domain)
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


@pytest.fixture(autouse=True)
def _scheduling_kept() -> Iterator[None]:
    """A test leaves this process's scheduling as it found it: libfranka once made the test
    thread real-time (SCHED_FIFO 99, as root), and every stack the suite started after it spun
    at that priority and starved the machine (a CI run's demo test stuck for 18 minutes)."""
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    yield
    after = os.sched_getscheduler(0), os.sched_getparam(0)
    if after != before:
        os.sched_setscheduler(0, *before)
        pytest.fail(f"the test changed this process's scheduling to {after} (was {before})")


# Tests that bring up ROS stacks or clusters run on a quiet machine (`make test` runs them after
# the rest, which runs on every core): real-time sims, DDS discovery and control deadlines are
# what a second busy process on two cores upsets. A module is serial when its text brings one
# up (SERIAL_MARKS) or it says so (`pytestmark = pytest.mark.serial`: a stack started through
# the command line); message conversions, interface files and parameter checks run on every
# core wherever they live, and so does a test marked `parallel` in a serial module.
SERIAL_MARKS = ("spun_node", "rclpy.init", "create_node", "support.ros", "Processes(",
                "mango.client", "mango.bringup", "mango bringup", "ros_runner", "import ray")


def _serial(path: Path, seen: dict[Path, bool]) -> bool:
    if path not in seen:
        text = path.read_text(encoding="utf-8", errors="replace")
        seen[path] = any(mark in text for mark in SERIAL_MARKS)
    return seen[path]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seen: dict[Path, bool] = {}
    for item in items:
        if item.get_closest_marker("serial") is None and item.get_closest_marker(
                "parallel") is None and _serial(Path(item.path), seen):
            item.add_marker(pytest.mark.serial)
    # modules with slow tests first, so that parallel workers do not end on one long tail
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test that started nodes shows their logs: what they were doing when a wait
    in CI ran out is the first thing to know."""
    outcome = yield
    report = outcome.get_result()
    ros = sys.modules.get("support.ros")
    if ros is None:
        return
    if report.failed:
        logs = ros.Processes.failure_logs()
        if logs:
            report.sections.append(("node logs", logs))
    if report.when == "teardown":
        ros.Processes.forget_stopped()
