"""`mango bag export --format lerobot` (issue #39): recorded runs, written in-process as our
recorder writes them, become a LeRobot dataset that lerobot itself loads offline and trains
on; what it holds is checked against the bag read independently (the `mcap` library and
rclpy's deserializer, not `mango.bags`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import av
import numpy as np
import pytest
from mcap.reader import make_reader
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Image, JointState
from support.run_bags import CAMERA_TOPICS, NS, ORACLE, RunSpec, grey, write_run_bag
from typer.testing import CliRunner

from mango.cli.main import app
from mango.torch_support import declare_torchvision_ops
from mango_ros.msg import TaskVerdict

FPS = 15
# the soup dropped before it is placed (step 1.2 fails); the sauce is lifted after (2.1)
FAULTED = RunSpec(place_at=None, drop_at=1.6, sauce_at=2.2)
runner = CliRunner()


def _mango(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def _dataset(root: Path):
    declare_torchvision_ops()
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(f"local/{root.name}", root=root, video_backend="pyav")


def _bag_episode(bag: Path) -> dict:
    """The last episode of a bag, read with the `mcap` library: header stamps (s) and
    decoded messages per topic, and the last task verdict's report."""
    stamps: dict[str, list[float]] = {}
    msgs: dict[str, list] = {}
    kinds = {**{t: Image for t in CAMERA_TOPICS.values()}, f"{NS}/joint_states": JointState,
             f"{NS}/joint_command": JointState, f"{NS}/oracle/task_verdict": TaskVerdict}
    with next(bag.glob("*.mcap")).open("rb") as fh:
        for _schema, channel, message in make_reader(fh).iter_messages(log_time_order=True):
            if channel.topic not in kinds:
                continue
            m = deserialize_message(message.data, kinds[channel.topic])
            t = m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
            if t >= 50.0:  # the episode before the reset
                continue
            stamps.setdefault(channel.topic, []).append(t)
            msgs.setdefault(channel.topic, []).append(m)
    report = json.loads(msgs[f"{NS}/oracle/task_verdict"][-1].report_json)
    return {"stamps": stamps, "msgs": msgs, "report": report}


def _latest(stamps: list[float], t: float) -> int:
    return max(i for i, s in enumerate(stamps) if s <= t + 1e-6)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("lerobot_export")
    ok, fault = root / "run_pass", root / "run_fault"
    write_run_bag(ok)
    write_run_bag(fault, FAULTED)
    oracle = root / "oracle.json"
    oracle.write_text(json.dumps(ORACLE))
    code, err = _mango("bag", "export", ok, fault, "--format", "lerobot", "-o",
                       root / "videos", "--fps", FPS)
    assert code == 0, err
    assert "wrote 2 episodes" in err
    code, err = _mango("bag", "export", ok, fault, "--format", "lerobot", "-o", root / "images",
                       "--images", "--oracle", oracle, "--cameras", "front,wrist")
    assert code == 0, err
    return {"root": root, "bags": [ok, fault], "videos": root / "videos",
            "images": root / "images"}


def test_the_dataset_is_what_the_bags_recorded(runs: dict) -> None:
    ds = _dataset(runs["videos"])
    assert ds.fps == FPS and ds.meta.total_episodes == 2
    assert ds.meta.info["codebase_version"] == "v3.0"
    for c in CAMERA_TOPICS:
        assert tuple(ds.meta.features[f"observation.images.{c}"]["shape"]) == (24, 32, 3)
        assert ds.meta.features[f"observation.images.{c}"]["dtype"] == "video"
    data = ds.hf_dataset.with_format(None)
    start = 0
    for e, bag in enumerate(runs["bags"]):
        rec = _bag_episode(bag)
        st = rec["stamps"]
        required = [*CAMERA_TOPICS.values(), f"{NS}/joint_states"]
        t0 = max(st[t][0] for t in required)
        n = int(np.floor((min(st[t][-1] for t in required) - t0) * FPS + 1e-9)) + 1
        ep = ds.meta.episodes[e]
        assert (ep["dataset_from_index"], ep["dataset_to_index"]) == (start, start + n)
        rows = data.select(range(start, start + n))
        assert rows["task"] if "task" in rows.column_names else True
        assert {ds.meta.tasks.index[i] for i in rows["task_index"]} == {ORACLE["instruction"]}
        report = rec["report"]
        assert all(s == (report["verdict"] == "pass") for s in rows["success"])
        js, jc = st[f"{NS}/joint_states"], st[f"{NS}/joint_command"]
        for k in range(n):
            t = t0 + k / FPS
            m = rec["msgs"][f"{NS}/joint_states"][_latest(js, t)]
            want = [*m.position[:7], m.position[7] + m.position[8]]
            np.testing.assert_allclose(rows["observation.state"][k], want, atol=1e-6)
            before = [i for i, s in enumerate(jc) if s < t + 1 / FPS - 1e-6]
            cmd = (rec["msgs"][f"{NS}/joint_command"][before[-1]].position if before
                   else want)
            np.testing.assert_allclose(rows["action"][k], cmd, atol=1e-6)
        # every completion is a label boundary, at the first frame at or after it, and
        # there are no others
        paths = rows["subtask.path"]
        changes = {k for k in range(1, n) if paths[k] != paths[k - 1]}
        completions = [s["completed_t"] for s in report["steps"] if s["completed_t"]]
        firsts = {next(k for k in range(n) if t0 + k / FPS >= c - 1e-6) for c in completions}
        assert changes == firsts
        if report["verdict"] == "pass":  # before each completion, that step is pursued
            for s in report["steps"]:
                k = next(k for k in range(n) if t0 + k / FPS >= s["completed_t"] - 1e-6)
                assert (paths[k - 1], rows["subtask.action"][k - 1]) == (s["path"],
                                                                         s["action_id"])
            assert rows["subtask.status"][-1] == "done" and paths[-1] == ""
        start += n
    assert ds.meta.total_frames == start == len(ds)


def test_videos_decode_to_the_recorded_images(runs: dict) -> None:
    ds = _dataset(runs["videos"])
    for c, topic in CAMERA_TOPICS.items():
        files = sorted((runs["videos"] / "videos" / f"observation.images.{c}").rglob("*.mp4"))
        frames = []
        for f in files:
            with av.open(str(f)) as video:
                frames += [fr.to_ndarray(format="rgb24") for fr in video.decode(video=0)]
        assert len(frames) == len(ds)
        k = 0
        for bag in runs["bags"]:
            st = _bag_episode(bag)["stamps"][topic]
            n = ds.meta.episodes[runs["bags"].index(bag)]["length"]
            for j in range(n):
                image = _latest(st, st[0] + j / FPS)
                assert frames[k].shape == (24, 32, 3)
                assert abs(float(frames[k].mean()) - grey(c, image)) < 4, (c, k)
                k += 1


def test_subtask_labels_follow_the_oracle_on_a_faulted_run(runs: dict) -> None:
    judged = _dataset(runs["images"]).hf_dataset.with_format(None)
    recorded = _dataset(runs["videos"]).hf_dataset.with_format(None)
    for col in ("subtask.path", "subtask.action", "subtask.status", "success"):
        assert judged[col] == recorded[col]  # judged here = recorded by the oracle node
    report = _bag_episode(runs["bags"][1])["report"]
    done = {s["path"]: s["completed_t"] for s in report["steps"]}
    assert report["verdict"] == "fail" and report["failed_step"] == "1.2"
    assert done == {"1.1": FAULTED.lift_at, "1.2": None, "2.1": FAULTED.sauce_at}
    rows = [r for r in judged if r["episode_index"] == 1]
    times = [r["timestamp"] for r in rows]  # from the episode's first frame, at t=0 here
    labels = [(r["subtask.path"], r["subtask.status"]) for r in rows]
    lifted = next(k for k, r in enumerate(labels) if r != labels[0])
    sauce = next(k for k in range(lifted, len(rows)) if labels[k] != labels[lifted])
    assert abs(times[lifted] - done["1.1"]) <= 1 / FPS + 1e-6
    assert abs(times[sauce] - done["2.1"]) <= 1 / FPS + 1e-6
    # lifting, then the failed step from the lift until the robot completed something else
    assert set(labels[:lifted]) == {("1.1", "in_progress")}
    assert set(labels[lifted:sauce]) == {(report["failed_step"], "failed")}
    assert set(labels[sauce:]) == {("", "incomplete")}
    assert not any(r["success"] for r in rows)


def test_a_lerobot_policy_trains_on_the_export(runs: dict, tmp_path: Path) -> None:
    declare_torchvision_ops()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from lerobot.configs.default import DatasetConfig, WandBConfig
    from lerobot.configs.train import TrainPipelineConfig
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.scripts.lerobot_train import train

    policy = ACTConfig(chunk_size=4, n_action_steps=4, pretrained_backbone_weights=None,
                       dim_model=32, n_heads=2, dim_feedforward=64, n_encoder_layers=1,
                       n_decoder_layers=1, n_vae_encoder_layers=1, latent_dim=8,
                       use_vae=False, device="cpu", push_to_hub=False)
    root = runs["images"]
    cfg = TrainPipelineConfig(
        dataset=DatasetConfig(repo_id=f"local/{root.name}", root=str(root),
                              video_backend="pyav"),
        policy=policy, output_dir=tmp_path / "train", steps=2, batch_size=2, num_workers=0,
        log_freq=1, save_checkpoint=True, save_freq=2, eval_freq=0,
        wandb=WandBConfig(enable=False))
    train(cfg)  # lerobot-train's own loop: dataset, sampler, processors, optimiser, steps
    saved = tmp_path / "train/checkpoints/last/pretrained_model"
    assert (saved / "model.safetensors").is_file()
    assert json.loads((saved / "config.json").read_text())["input_features"].keys() == {
        "observation.state", "observation.images.front", "observation.images.wrist"}


@pytest.mark.parametrize(("spec", "topic", "said"), [
    (RunSpec(gap=("front", 1.0, 1.8), pre_episode=False), CAMERA_TOPICS["front"],
     "has a gap: no message from t=1.000 s to t=1.800 s"),
    (RunSpec(stop_camera={"wrist": 2.0}, pre_episode=False), CAMERA_TOPICS["wrist"],
     "stops: no message from t=2.000 s to t=3.000 s"),
])
def test_a_gap_or_a_stopped_camera_is_refused_by_name(tmp_path: Path, spec: RunSpec,
                                                      topic: str, said: str) -> None:
    bag = tmp_path / "run"
    write_run_bag(bag, spec)
    code, err = _mango("bag", "export", bag, "--format", "lerobot", "-o", tmp_path / "ds")
    assert code == 2
    line, = err.strip().splitlines()
    assert line.startswith(f"error: {bag}, field '{topic}': {said}")
    assert not (tmp_path / "ds").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # nothing half-written
    code, err = _mango("bag", "export", bag, "--format", "lerobot", "-o", tmp_path / "ds",
                       "--max-gap", "1.5", "--images")
    assert code == 0, err  # a longer silence allowed on purpose


def test_missing_topics_and_verdicts_are_named(tmp_path: Path, runs: dict) -> None:
    bag = tmp_path / "run"
    write_run_bag(bag, RunSpec(verdict=False, pre_episode=False))
    code, err = _mango("bag", "export", bag, "--format", "lerobot", "-o", tmp_path / "ds")
    assert code == 2
    assert err.startswith(f"error: {bag}: no task verdict recorded in episode 1")
    assert "give --oracle" in err and len(err.strip().splitlines()) == 1
    code, err = _mango("bag", "export", runs["bags"][0], "--format", "lerobot",
                       "-o", tmp_path / "ds", "--cameras", "side")
    assert code == 2 and "no images of camera side in the bag (cameras there: front, wrist)" \
        in err
    code, err = _mango("bag", "export", tmp_path / "nope", "--format", "lerobot", "-o",
                       tmp_path / "ds")
    assert code == 2 and "no such bag" in err
    code, err = _mango("bag", "export", runs["bags"][0], "--format", "lerobot",
                       "-o", runs["videos"])
    assert code == 2 and "exists and is not empty" in err
    code, err = _mango("bag", "export", runs["bags"][0], "--format", "lerobot", "--episode",
                       "1", "-o", tmp_path / "ds")
    assert (code, err) == (2, "error: field '--episode': --episode does not apply to "
                              "--format lerobot\n")
    code, err = _mango("bag", "export", *runs["bags"], "-o", tmp_path / "t.jsonl")
    assert code == 2 and "--format trace exports one bag (2 given)" in err
