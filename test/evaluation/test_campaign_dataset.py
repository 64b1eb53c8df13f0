"""`mango campaign run … --dataset DIR` (issue #39): a campaign's stack episodes as one LeRobot
dataset, failed ones included and marked. The stored episodes and their bags are written
in-process here as a `runner: ros` campaign leaves them (bringing stacks up is
test_ros_runner's); the dataset is read back with lerobot itself."""

from __future__ import annotations

from pathlib import Path

from support.run_bags import RunSpec, write_run_bag
from typer.testing import CliRunner

from mango.bags.lerobot_export import ExportOptions
from mango.cli.main import app
from mango.evaluation.dataset import export_campaign
from mango.evaluation.runner import STORE_FILE
from mango.evaluation.store import Store
from mango.torch_support import declare_torchvision_ops

CAMPAIGN = """name: data
systems: [{name: vla, kind: policy}]
tasks: [libero10_stove_moka]
seeds: {start: 0, count: 1}
faults: [none]
"""


def _result(episode: str, error: str | None = None) -> dict:
    return {"episode": episode, "system": "vla", "task": "libero10_stove_moka", "seed": 0,
            "fault": None, "error": error, "runner": "ros"}


def test_stored_episodes_become_one_dataset_failures_marked(tmp_path: Path) -> None:
    out = tmp_path / "campaign"
    write_run_bag(out / "episodes" / "ep1" / "bag")
    write_run_bag(out / "episodes" / "ep2" / "bag", RunSpec(place_at=None, drop_at=1.6))
    with Store(out / STORE_FILE) as store:
        for r in (_result("ep2"), _result("ep1"), _result("ep3", "RuntimeError: no stack")):
            store.add(r)
    made = export_campaign(out, tmp_path / "dataset", ExportOptions(videos=False))
    assert [(e.bag.parent.name, e.success) for e in made.episodes] == [("ep1", True),
                                                                      ("ep2", False)]
    assert made.left_out == {"ep3": "it could not run (RuntimeError: no stack)"}
    declare_torchvision_ops()
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("local/dataset", root=tmp_path / "dataset")
    rows = ds.hf_dataset.with_format(None)
    by_episode = {e: {s for s, i in zip(rows["success"], rows["episode_index"], strict=True)
                      if i == e} for e in (0, 1)}
    assert by_episode == {0: {True}, 1: {False}}
    assert "failed" in set(rows["subtask.status"])


def test_a_dataset_needs_stack_episodes(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(CAMPAIGN)
    result = CliRunner().invoke(app, ["campaign", "run", str(campaign), "-o",
                                      str(tmp_path / "out"), "--dataset", str(tmp_path / "ds")])
    assert result.exit_code == 2
    line, = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {campaign}, field '--dataset': a dataset is made of the "
                           "episodes' recorded bags: set `runner: ros`")
    assert not (tmp_path / "ds").exists() and not (tmp_path / "out" / "episodes").exists()
