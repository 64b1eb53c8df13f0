"""`mango demo --record-views` (`make demo VIEWS=1`) writes a bag with everything the rviz and
Foxglove layouts show: every topic the two files name (parsed from them), a TF tree joining
every URDF link and camera frame to the layouts' fixed frame, and the robot description."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.layouts import fixed_frames, layout_topics

from mango.bags import BagReader
from mango.bags.types import default_types

# serial: a real-time sim stack through `mango demo`
pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

REPO = Path(__file__).resolve().parents[2]
SCENE = "libero10_book_caddy"  # the shortest expert run


@pytest.fixture(scope="module")
def views_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("views") / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "mango.cli.main", "demo", "--scene", SCENE, "--record-views",
         "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads((out / "report.json").read_text())["run"]
    assert run["namespace"] == ""  # the layouts' topic names, unprefixed
    return out / "bag"


def test_every_topic_the_layouts_show_is_in_the_bag(views_bag: Path) -> None:
    topics = BagReader(views_bag).topics()
    wanted = layout_topics()
    assert {"/oracle/markers", "/robot_description", "/camera/front/image_raw"} <= wanted
    missing = sorted(t for t in wanted if topics.get(t, ("", 0))[1] == 0)
    assert not missing, f"shown by the layouts but not recorded: {missing}"
    assert topics["/tf"][0] == "tf2_msgs/msg/TFMessage"
    assert topics["/robot_description"][0] == "std_msgs/msg/String"


def test_the_tf_tree_joins_every_link_and_camera_to_the_fixed_frame(views_bag: Path) -> None:
    types = default_types()
    parent: dict[str, str] = {}
    description = ""
    image_frames: set[str] = set()
    for m in BagReader(views_bag).messages({"/tf", "/tf_static", "/robot_description",
                                            "/camera/front/image_raw",
                                            "/camera/wrist/image_raw"}):
        msg = types.deserialize(m.data, m.msgtype)
        if m.topic == "/robot_description":
            description = msg.data
        elif m.topic.startswith("/camera"):
            image_frames.add(msg.header.frame_id)
        else:
            for t in msg.transforms:
                # one parent per frame, as tf2 requires
                assert parent.setdefault(t.child_frame_id, t.header.frame_id) == \
                    t.header.frame_id, t.child_frame_id
    root = ET.fromstring(description)
    links = {e.get("name") for e in root.findall("link")}
    assert {"fr3_link0", "fr3_link7", "fr3_hand", "fr3_leftfinger"} <= links
    for mesh in root.iter("mesh"):
        assert Path(mesh.get("filename").removeprefix("file://")).is_file()
    assert image_frames == {"front_camera", "wrist_camera"}
    (fixed,) = fixed_frames()
    for frame in links | image_frames:
        seen, f = [frame], frame
        while f in parent:
            f = parent[f]
            assert f not in seen, f"TF cycle through {f}"
            seen.append(f)
        assert f == fixed, f"{frame} is not joined to {fixed}: its chain ends at {f}"


@pytest.mark.parametrize(("extra", "match"), [
    ([], "needs a bag"),
    (["--bag", "BAG", "--namespace", "/robot2"], "root namespace"),
])
def test_record_views_refuses_what_the_layouts_could_not_show(tmp_path: Path, extra: list[str],
                                                              match: str) -> None:
    args = [a.replace("BAG", str(tmp_path / "b")) for a in extra]
    proc = subprocess.run(
        [sys.executable, "-m", "mango.cli.main", "policy", "run", "--scene", SCENE,
         "--record-views", *args], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert match in proc.stderr and "views" in proc.stderr
    assert not (tmp_path / "b").exists()


def test_a_recorded_run_exports_as_a_lerobot_dataset(views_bag: Path, tmp_path: Path) -> None:
    """Issue #39 on a real stack's bag: the dataset lerobot loads has the run's two cameras at
    the sim's size, and its subtask labels change at the oracle node's completion times."""
    from mango.bags.run_streams import read_run
    from mango.torch_support import declare_torchvision_ops

    out = tmp_path / "dataset"
    # --max-gap: the sim renders its cameras when it can, and a loaded 2-core machine leaves
    # stretches of over half a second between images (the export refuses those by default)
    proc = subprocess.run(
        [sys.executable, "-m", "mango.cli.main", "bag", "export", str(views_bag), "--format",
         "lerobot", "--images", "--max-gap", "2", "-o", str(out)], capture_output=True,
        text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    declare_torchvision_ops()
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("local/dataset", root=out)
    rows = ds.hf_dataset.with_format(None)
    assert ds.meta.total_episodes == 1 and len(ds) > 15
    assert {k: tuple(ds.meta.features[f"observation.images.{k}"]["shape"])
            for k in ("front", "wrist")} == {"front": (224, 224, 3), "wrist": (224, 224, 3)}
    run = read_run(views_bag)
    report = run.verdict
    assert report is not None
    assert set(rows["success"]) == {report.verdict == "pass"}
    start = max(s.stamps[0] for s in [*run.cameras.values(), run.joint_states])
    times = [start + t for t in rows["timestamp"]]
    paths = rows["subtask.path"]
    changes = [times[k] for k in range(1, len(paths)) if paths[k] != paths[k - 1]]
    completions = sorted(s.completed_t for s in report.steps
                         if s.completed_t is not None and s.completed_t > start)
    assert len(changes) == len(completions)
    for seen, done in zip(changes, completions, strict=True):
        assert done - 1e-6 <= seen < done + 1 / ds.fps


def test_the_policys_diagnostics_are_in_the_bag(views_bag: Path) -> None:
    """#38: every chunk's inference time, queue depth, idle time and clipping (vla_node's
    `~/diagnostics`) is recorded with the run, numbered from the first chunk."""
    types = default_types()
    rows = [{kv.key: kv.value for kv in types.deserialize(m.data, m.msgtype).status[0].values}
            for m in BagReader(views_bag).messages({"/vla_node/diagnostics"})]
    assert rows, "no /vla_node/diagnostics in the bag"
    assert [int(r["chunk"]) for r in rows] == list(range(1, len(rows) + 1))
    for r in rows:
        assert float(r["inference_time"]) >= 0 and int(r["queue_depth"]) > 0, r
        assert {"idle", "clipped", "clip_warning", "late"} <= set(r), r
