"""`mango policy run --attach` on a stack `mango bringup sim` left running: the task is judged
on that stack through the blocking client, the stack keeps running, and its recorder writes
where `--bag` said (printed at start)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.processes import read_until

from mango.bags import BagReader

SCENE = "libero10_book_caddy"  # the shortest expert run
NS = "/attach_test"
# What a person must never read: Python's None/True/False, or a float's long repr.
RAW = re.compile(r"\bNone\b|\bTrue\b|\bFalse\b|\d+\.\d{5,}")


def _mango(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mango.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_attach_judges_a_task_on_the_running_stack_and_its_bag_is_where_it_said(
        tmp_path: Path) -> None:
    bag = tmp_path / "bags" / "sim_run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mango.cli.main", "bringup", "sim", "--scene", SCENE,
         "--namespace", NS, "--bag", str(bag), "--set", "sim_node.camera_rate=0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        head = "".join(read_until(proc, "run a task on it:", timeout=60))
        assert f"bag: {bag}" in head  # said before any node output
        assert f"mango policy run --attach --namespace {NS}" in head

        run = _mango("policy", "run", "--attach", "--namespace", NS, "--json", "--exit-code",
                     timeout=180)
        assert run.returncode == 0, run.stderr[-3000:]
        report = json.loads(run.stdout)
        assert report["verdict"] == "pass", report["steps"]
        info = report["run"]
        assert info["attached"] and info["namespace"] == NS and info["scene"] == SCENE
        assert info["policy_status"] == "succeeded" and info["bag"] == str(bag)

        # The same stack again, as a person reads it: the verdict, no raw Python values.
        text = _mango("policy", "run", "--attach", "--namespace", NS, "--scene", SCENE,
                      timeout=180)
        assert text.returncode == 0, text.stderr[-3000:]
        assert "verdict: pass" in text.stdout and f"bag: {bag}" in text.stdout
        assert not RAW.search(text.stdout), text.stdout

        # The stack simulates book_caddy: its expert cannot do another scene's task.
        other = _mango("policy", "run", "--attach", "--namespace", NS, "--scene", "stove_moka")
        assert other.returncode == 2 and "plans scene libero10_book_caddy" in other.stderr
        assert proc.poll() is None  # still running after three clients came and went

        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out[-3000:]
    topics = BagReader(bag).topics()
    assert topics[f"{NS}/world_state"][1] > 1000
    assert topics[f"{NS}/oracle/task_verdict"][1] == 2  # one per attached run
    replay = _mango("replay", str(bag), "--oracle", info["oracle"], "--json")
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout)["verdict"] == "pass"  # the last episode, the second run


def test_attach_refuses_what_the_stack_chooses_and_a_missing_scene_is_bad_input() -> None:
    refused = _mango("policy", "run", "--attach", "--backend", "openpi", "--bag", "/tmp/x")
    assert refused.returncode == 2
    assert "--backend, --bag: an attached run uses the running stack's" in refused.stderr
    missing = _mango("policy", "run")
    assert missing.returncode == 2 and "give --scene (or --attach" in missing.stderr


@pytest.mark.slow
@pytest.mark.parallel  # a 15 s wait for a stack that never answers: no CPU, no timing
def test_attach_without_a_stack_says_how_to_start_one() -> None:
    proc = _mango("policy", "run", "--attach", "--namespace", "/nobody_here")
    assert proc.returncode == 1
    assert "no sim stack answers in namespace /nobody_here" in proc.stderr
    assert "mango bringup sim" in proc.stderr


def test_bringup_refuses_a_bag_folder_that_holds_a_bag(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "metadata.yaml").write_text("x\n")
    proc = _mango("bringup", "oracle", "--bag", str(tmp_path / "old"))
    assert proc.returncode == 2
    assert "exists and is not empty" in proc.stderr and str(tmp_path / "old") in proc.stderr
