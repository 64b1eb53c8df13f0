"""Recorded runs as a LeRobot dataset (`mango bag export --format lerobot`), written with
lerobot's own `LeRobotDataset.create` / `add_frame` / `save_episode` (lerobot 0.4.4: format
v3.0, parquet + one MP4 per camera + `meta/`), so the files are what lerobot writes itself.

Each bag is one episode (its last, as `mango replay` judges it), resampled by
`bags.frames`; beside images, `observation.state` and `action`, every frame carries the
oracle's subtask (`bags.subtasks`: `subtask.path`, `subtask.action`, `subtask.status`)
and the episode's `success` (a bool column: lerobot 0.4.4 cannot store a per-frame integer
of its own under numpy 2). The verdict is the one recorded in the bag
(the oracle node's last `TaskVerdict`), or, given an oracle, the bag's world states judged
with it (`bags.judge.judge_bag`, what `mango replay` runs). The dataset is written beside its
destination and moved there when complete: a bad bag leaves nothing half-written.

Reading it back: lerobot 0.4.4 decodes videos with torchcodec, else with
`torchvision.io.VideoReader`, which torchvision 0.28 (the one for torch 2.13) no longer
has, and the only torchcodec wheel for torch 2.13 is a CUDA build; `videos=False` stores the
frames as images inside the parquet files instead, which lerobot reads (and trains on)
without a video decoder.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mango.bags.camera_images import CameraImages
from mango.bags.frames import FramePlan, plan_frames
from mango.bags.judge import judge_bag
from mango.bags.reader import BagReader
from mango.bags.run_streams import RunStreams, read_run
from mango.bags.subtasks import SubtaskLabels, label_frames
from mango.bags.types import BagTypes, default_types
from mango.errors import InputError

ROBOT_TYPE = "franka_fr3"
# threads writing the frames lerobot encodes as PNG files first (its `image_writer_threads`)
IMAGE_WRITER_THREADS = 4
VIDEO_CODECS = ("h264", "hevc", "libsvtav1")  # the software encoders lerobot accepts


@dataclass(frozen=True)
class ExportOptions:
    """How bags become a dataset."""

    fps: int = 15
    cameras: list[str] | None = None  # default: every camera of the first bag
    oracle: Path | None = None  # judge the world states with it (default: recorded verdict)
    functions: Path | None = None  # the oracle's function library (default: the built-in)
    max_gap: float | None = None  # s a stream may be silent (default: per stream)
    videos: bool = True  # MP4 per camera; False: images in the parquet files
    vcodec: str = "h264"
    repo_id: str | None = None  # default: local/<folder name>


@dataclass(frozen=True)
class EpisodeSummary:
    """What one bag became."""

    bag: Path
    frames: int
    success: bool
    failed_step: str | None
    verdict_from: str  # "recorded" or the oracle file


class ExportProgress(Protocol):
    """What a long export reports (the CLI draws a bar)."""

    def reading(self, bag: Path) -> None: ...

    def episode(self, bag: Path, frames: int) -> None: ...

    def frame(self) -> None: ...

    def encoding(self, bag: Path) -> None: ...


def _lerobot_dataset_class() -> Any:
    from mango.torch_support import declare_torchvision_ops

    declare_torchvision_ops()
    try:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
    except ImportError as exc:
        raise InputError(f"the lerobot export needs lerobot 0.4.4 and torch (`make setup` "
                         f"installs them; {exc.name or 'lerobot'} is not installed)",
                         field="--format") from None
    return LeRobotDataset


@dataclass
class _Episode:
    run: RunStreams
    plan: FramePlan
    labels: SubtaskLabels
    instruction: str
    verdict_from: str
    failed_step: str | None


def _episode(reader: BagReader, options: ExportOptions, cameras: list[str] | None,
             types: BagTypes) -> _Episode:
    """A bag read, resampled and labelled."""
    run = read_run(reader, cameras, types)
    plan = plan_frames(run, options.fps, options.max_gap, types)
    if options.oracle is not None:
        from mango.oracle import FunctionLibrary, StepTracker

        if run.world_state is None:
            raise run.error("no WorldState topic to judge with --oracle")
        library = (FunctionLibrary.load(options.functions) if options.functions
                   else FunctionLibrary.default())
        tracker = StepTracker(options.oracle, library)
        report = judge_bag(reader, tracker, run.world_state)
        instruction, source = tracker.oracle.instruction, str(options.oracle)
    else:
        if run.verdict is None:
            raise run.error(f"no task verdict recorded in episode {run.episode} (no "
                            "mango_ros/msg/TaskVerdict message): give --oracle to judge the "
                            "bag's world states")
        if run.verdict.verdict == "running":
            raise run.error("the last task verdict recorded is 'running' (the oracle never "
                            "finished this episode): give --oracle to judge its world states")
        report, instruction, source = run.verdict, run.instruction, "recorded"
    if not instruction.strip():
        raise run.error("the task has no instruction (the oracle's `instruction` is empty)")
    return _Episode(run, plan, label_frames(report, plan.times), instruction, source,
                    report.failed_step)


def _features(first: _Episode, shapes: dict[str, tuple[int, int, int]], videos: bool
              ) -> dict[str, dict[str, Any]]:
    names = [*first.plan.joint_names, "gripper"]
    image = "video" if videos else "image"
    features: dict[str, dict[str, Any]] = {
        f"observation.images.{c}": {"dtype": image, "shape": shape,
                                    "names": ["height", "width", "channels"]}
        for c, shape in shapes.items()}
    features["observation.state"] = {"dtype": "float32", "shape": (len(names),), "names": names}
    features["action"] = {"dtype": "float32", "shape": (len(names),), "names": names}
    for key in ("subtask.path", "subtask.action", "subtask.status"):
        features[key] = {"dtype": "string", "shape": (1,), "names": None}
    features["success"] = {"dtype": "bool", "shape": (1,), "names": None}
    return features


def _write_episode(dataset: Any, ep: _Episode, images: CameraImages,
                   shapes: dict[str, tuple[int, int, int]], names: tuple[str, ...],
                   progress: ExportProgress | None) -> None:
    run, plan, labels = ep.run, ep.plan, ep.labels
    if plan.joint_names != names:
        raise run.error(f"the arm joints ({', '.join(plan.joint_names)}) differ from the "
                        f"first bag's ({', '.join(names)}): one dataset, one robot",
                        run.joint_states.topic)
    for k in range(len(plan)):
        frame: dict[str, Any] = {}
        for c, shape in shapes.items():
            pixels = images.get(c, int(plan.images[c][k]))
            if pixels.shape != shape:
                raise run.error(f"image {plan.images[c][k] + 1} is {pixels.shape[1]}x"
                                f"{pixels.shape[0]}, not {shape[1]}x{shape[0]} as the "
                                "dataset's first image of this camera",
                                run.cameras[c].topic)
            frame[f"observation.images.{c}"] = pixels
        frame["observation.state"] = plan.state[k]
        frame["action"] = plan.action[k]
        frame["subtask.path"] = labels.path[k]
        frame["subtask.action"] = labels.action[k]
        frame["subtask.status"] = labels.status[k]
        frame["success"] = np.array([labels.success])
        frame["task"] = ep.instruction
        dataset.add_frame(frame)
        if progress is not None:
            progress.frame()
    if progress is not None:
        progress.encoding(run.bag)
    dataset.save_episode()


def export_lerobot(bags: Sequence[Path], out: Path, options: ExportOptions,
                   progress: ExportProgress | None = None) -> list[EpisodeSummary]:
    """Write `bags` (one episode each, in order) as a new LeRobot dataset at `out`."""
    if options.vcodec not in VIDEO_CODECS:
        raise InputError(f"unknown video codec {options.vcodec!r} (one of "
                         f"{', '.join(VIDEO_CODECS)})", field="--vcodec")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError("the dataset folder exists and is not empty: choose a new one "
                         "(episodes are not appended to an existing dataset)", file=str(out))
    dataset_class = _lerobot_dataset_class()
    types = default_types()
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    summaries: list[EpisodeSummary] = []
    try:
        dataset = None
        shapes: dict[str, tuple[int, int, int]] = {}
        names: tuple[str, ...] = ()
        cameras = options.cameras
        for bag in bags:
            if progress is not None:
                progress.reading(bag)
            reader = BagReader(bag)  # one reader: what it finds in the file is said once
            ep = _episode(reader, options, cameras, types)
            images = CameraImages(reader, ep.run, types)
            if dataset is None:
                cameras = list(ep.run.cameras)
                for c in cameras:
                    first = images.get(c, int(ep.plan.images[c][0]))
                    shapes[c] = (int(first.shape[0]), int(first.shape[1]), 3)
                names = ep.plan.joint_names
                dataset = dataset_class.create(
                    options.repo_id or f"local/{out.name}", options.fps,
                    _features(ep, shapes, options.videos), root=partial / out.name,
                    robot_type=ROBOT_TYPE, use_videos=options.videos,
                    video_backend="pyav", vcodec=options.vcodec,
                    image_writer_threads=IMAGE_WRITER_THREADS if options.videos else 0)
            if progress is not None:
                progress.episode(bag, len(ep.plan))
            _write_episode(dataset, ep, images, shapes, names, progress)
            summaries.append(EpisodeSummary(bag, len(ep.plan), ep.labels.success,
                                            ep.failed_step, ep.verdict_from))
        if dataset is None:
            raise InputError("no bag to export", field="BAG")
        dataset.finalize()
        if out.exists():  # an empty folder made for it
            out.rmdir()
        (partial / out.name).rename(out)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return summaries
