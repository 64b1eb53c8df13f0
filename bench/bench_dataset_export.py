"""Export throughput of `mango bag export --format lerobot` (issue #39): a recorded 2-camera
224x224 run (cameras at 15 Hz, joints at 100 Hz, commands at 100 Hz, world states at 50 Hz,
the oracle node's verdict), written in-process as our recorder writes it, exported as a
LeRobot dataset at 15 fps: MP4 videos (h264, lerobot's encoder) and, for comparison, images in
the parquet files. Reported: frames per second of the whole export (reading the bag,
resampling, labelling, writing, encoding; lerobot's import, a few seconds once per process,
is timed apart). Figures go to out/bench/dataset_export.json.

Run: python bench/bench_dataset_export.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from report import headline, print_table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test"))  # the recorded-run writer the tests use


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the run")
    args = parser.parse_args()
    from support.run_bags import RunSpec, write_run_bag

    from mango.bags.lerobot_export import ExportOptions, export_lerobot
    from mango.cli.bag_progress import quiet_lerobot
    from mango.torch_support import declare_torchvision_ops

    declare_torchvision_ops()
    quiet_lerobot()
    start = time.perf_counter()
    import lerobot.datasets.lerobot_dataset  # noqa: F401 - once per process, not per export

    import_s = time.perf_counter() - start

    work = Path(tempfile.mkdtemp(prefix="bench_export_"))
    try:
        bag = work / "run"
        spec = RunSpec(duration=args.seconds, lift_at=args.seconds / 3,
                       place_at=2 * args.seconds / 3, camera_hz=15.0, joints_hz=100.0,
                       command_hz=100.0, state_hz=50.0, width=224, height=224,
                       pre_episode=False)
        write_run_bag(bag, spec)
        size = sum(f.stat().st_size for f in bag.iterdir()) / 1e6
        rows, figures = [], {}
        for name, options in (("videos (h264)", ExportOptions()),
                              ("images (parquet)", ExportOptions(videos=False))):
            start = time.perf_counter()
            [episode] = export_lerobot([bag], work / name.split()[0], options)
            wall = time.perf_counter() - start
            rate = episode.frames / wall
            figures[name] = {"frames": episode.frames, "wall_s": wall, "frames_per_s": rate}
            rows.append((name, str(episode.frames), f"{wall:.2f}", f"{rate:.0f}"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = REPO / "out/bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "dataset_export.json").write_text(json.dumps(
        {"seconds": args.seconds, "bag_mb": size, "lerobot_import_s": import_s, "cameras": 2,
         "size": [224, 224], "fps": 15, "exports": figures}, indent=2))
    print_table(f"LeRobot export of a {args.seconds:.0f} s 2-camera 224x224 run "
                f"({size:.0f} MB bag) at 15 fps", ("dataset", "frames", "wall (s)",
                                                   "frames/s"), rows)
    print(f"lerobot import (once per process, not counted above): {import_s:.1f} s")
    headline("Evaluation campaigns", f"LeRobot dataset export of a {args.seconds:.0f} s run, 2 "
             "cameras 224×224 at 15 fps (h264 videos / images in parquet)",
             f"{figures['videos (h264)']['frames_per_s']:.0f} / "
             f"{figures['images (parquet)']['frames_per_s']:.0f} frames/s")


if __name__ == "__main__":
    main()
