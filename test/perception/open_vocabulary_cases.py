"""`owlv2` and `grounding_dino` on tiny randomly initialised models, run end to end on a real
sim frame: preprocess -> forward -> post-process -> boxes -> masks and world boxes from depth.

The models are built from transformers' config classes, saved with `save_pretrained` and
loaded back by path with `local_files_only` (transformers docs: "Models" / from_pretrained);
their tokenizers are made from vocabulary files written here (CLIP's byte-level BPE vocab +
merges for OWLv2, a WordPiece vocab.txt for Grounding DINO, which hard-codes [CLS]=101,
[SEP]=102, "."=1012, "?"=1029: huggingface/transformers src/transformers/models/grounding_dino/
modeling_grounding_dino.py, `generate_masks_with_special_tokens_and_transfer_map`). A random
model's answers mean nothing: the assertions are on shapes, frames and plumbing only.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.perception.base import PerceptionConfig, PerceptionError, RGBDFrame
from mango.perception.geometry import back_project, project, to_world
from mango.perception.registry import make_backend
from mango.perception.sim_frames import sim_frame
from mango.sim.env import SimEnv
from mango.torch_support import declare_torchvision_ops

# Not collected by the suite itself: transformers 5 breaks lerobot 0.4.4's import (see
# requirements/perception-transformers.txt), so `test_open_vocabulary.py` runs these cases in a
# process of their own with `make perception-deps`'s transformers on its path.

PHRASES = ["the black bowl", "a wine bottle", "the white cabinet"]


def _transformers() -> tuple[Any, Any]:
    """torch and transformers, imported as the backends import them (beside a CUDA-only
    torchvision, should one be installed)."""
    import torch

    declare_torchvision_ops()
    import transformers

    return torch, transformers


@pytest.fixture(scope="module")
def owlv2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch, tf = _transformers()
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    from transformers.models.owlv2.image_processing_pil_owlv2 import Owlv2ImageProcessorPil

    d = tmp_path_factory.mktemp("owlv2_tiny")
    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)  # the highest id: OWL pools text at argmax(ids)
    (d / "vocab.json").write_text(json.dumps(vocab))
    (d / "merges.txt").write_text("#version: 0.2\n")
    tok = tf.CLIPTokenizer(vocab_file=str(d / "vocab.json"), merges_file=str(d / "merges.txt"),
                        model_max_length=16)
    n = len(vocab)
    cfg = tf.Owlv2Config(
        text_config={"vocab_size": n, "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 2,
                     "max_position_embeddings": 16, "bos_token_id": n - 2,
                     "eos_token_id": n - 1, "pad_token_id": n - 1},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 64, "patch_size": 16},
        projection_dim=32)
    torch.manual_seed(0)
    tf.Owlv2ForObjectDetection(cfg).save_pretrained(d)
    tf.Owlv2Processor(image_processor=Owlv2ImageProcessorPil(size={"height": 64, "width": 64}),
                   tokenizer=tok).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def grounding_dino_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch, tf = _transformers()
    from transformers.models.grounding_dino.image_processing_pil_grounding_dino import (
        GroundingDinoImageProcessorPil,
    )

    d = tmp_path_factory.mktemp("grounding_dino_tiny")
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]",
                                                                   "[MASK]"]
    vocab += [f"[unused{i}]" for i in range(100, 100 + 1012 - len(vocab))] + ["."]
    vocab += [f"[unused{i}]" for i in range(200, 200 + 1029 - len(vocab))] + ["?"]
    vocab += sorted({w for p in PHRASES for w in p.split()})
    assert vocab.index("[CLS]") == 101 and vocab.index(".") == 1012 and vocab.index("?") == 1029
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = tf.BertTokenizer(str(d / "vocab.txt"), model_max_length=32)
    cfg = tf.GroundingDinoConfig(
        backbone_config=tf.SwinConfig(image_size=64, patch_size=4, embed_dim=16,
                                   depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=4,
                                   out_indices=[2, 3, 4]),
        text_config=tf.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64,
                               max_position_embeddings=64),
        num_queries=20, encoder_layers=1, decoder_layers=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, encoder_attention_heads=2, decoder_attention_heads=2, d_model=32,
        num_feature_levels=3, max_text_len=32)
    torch.manual_seed(0)
    tf.GroundingDinoForObjectDetection(cfg).save_pretrained(d)
    tf.GroundingDinoProcessor(
        image_processor=GroundingDinoImageProcessorPil(
            size={"shortest_edge": 64, "longest_edge": 96}),
        tokenizer=tok).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def frame() -> RGBDFrame:
    with SimEnv("libero10_bowl_drawer", 0, cameras=("front",), image_size=(320, 240)) as env:
        env.reset(0)
        return sim_frame(env, "front").without_privileged()


def _folders(request: pytest.FixtureRequest, backend: str) -> Path:
    return request.getfixturevalue(f"{backend}_dir")


@pytest.mark.parametrize("backend", ["owlv2", "grounding_dino"])
def test_boxes_become_masks_and_world_boxes(request: pytest.FixtureRequest, frame: RGBDFrame,
                                            backend: str) -> None:
    be = make_backend(PerceptionConfig(backend=backend, weights=_folders(request, backend),
                                       score_threshold=0.0))
    res = be.detect(frame, PHRASES, max_results=2)
    assert res.detections, res.messages
    assert set(res.unmatched) | {d.phrase for d in res.detections} == set(PHRASES)
    for p in PHRASES:
        assert len(res.for_phrase(p)) <= 2
    assert frame.intrinsics is not None and frame.pose is not None and frame.depth is not None
    for d in res.detections:
        x0, y0, x1, y1 = d.box_2d
        assert 0 <= x0 < x1 <= 320 and 0 <= y0 < y1 <= 240
        assert d.entity_id is None and d.label == d.phrase and d.camera == "front"
        assert d.mask is not None and d.mask.shape == (240, 320) and d.mask.any()
        assert d.mask.sum() == d.mask[y0:y1, x0:x1].sum()  # the mask lies in its box
        assert np.isfinite(frame.depth[d.mask]).all()
        pts = to_world(back_project(frame.depth, frame.intrinsics, d.mask), frame.pose)
        # the world box holds its points (2 % trimmed at each end of each axis) ...
        lo = np.subtract(d.centroid, np.divide(d.size, 2)) - 1e-6
        hi = np.add(d.centroid, np.divide(d.size, 2)) + 1e-6
        inside = ((pts >= lo) & (pts <= hi)).all(axis=1).mean()
        assert inside > 0.85
        # ... and they project back into the 2-D box: pixels -> world -> pixels
        uv, _ = project(pts, frame.pose, frame.intrinsics)
        assert (uv[:, 0] >= x0 - 0.5).all() and (uv[:, 0] <= x1 - 0.5).all()
        assert (uv[:, 1] >= y0 - 0.5).all() and (uv[:, 1] <= y1 - 0.5).all()
        assert -np.pi / 2 < d.yaw <= np.pi / 2


@pytest.mark.parametrize("backend", ["owlv2", "grounding_dino"])
def test_thresholds_and_frames_without_colour(request: pytest.FixtureRequest,
                                              frame: RGBDFrame, backend: str) -> None:
    be = make_backend(PerceptionConfig(backend=backend, weights=_folders(request, backend),
                                       score_threshold=1.01))
    res = be.detect(frame, PHRASES[:1])
    assert res.unmatched == (PHRASES[0],) and "no box scores 1.01 or more" in res.messages[0]
    res = be.detect(dataclasses.replace(frame, rgb=None), PHRASES[:1])
    assert res.unmatched == (PHRASES[0],) and "has no colour image" in res.messages[0]


def test_weights_come_from_a_local_folder_only(tmp_path: Path) -> None:
    with pytest.raises(PerceptionError, match="needs a local model folder"):
        make_backend(PerceptionConfig(backend="owlv2"))
    missing = tmp_path / "no_such_model"
    says = re.escape(f"model folder {missing} for 'owlv2' does not exist")
    with pytest.raises(PerceptionError, match=says):
        make_backend(PerceptionConfig(backend="owlv2", weights=missing))
    with pytest.raises(PerceptionError, match=r"has no config\.json"):
        make_backend(PerceptionConfig(backend="grounding_dino", weights=tmp_path))


def test_cli_runs_a_local_model(owlv2_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["perception", "detect", "--scene", "bowl_drawer", "--backend",
                              "owlv2", "--weights", str(owlv2_dir), "--width", "160",
                              "--height", "120", "the black bowl", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["backend"] == "owlv2" and {"detections", "unmatched"} <= set(out)
    res = runner.invoke(app, ["perception", "detect", "--scene", "bowl_drawer", "--backend",
                              "owlv2", "--weights", str(tmp_path / "gone"), "x", "--json"])
    assert res.exit_code == 2 and "gone for 'owlv2' does not exist" in res.stderr


# ------------------------------------------------------------------ through perception_node


@pytest.fixture
def ros_env(tmp_path: Path):
    """An rclpy node spun here, node processes that are always stopped, a fresh namespace."""
    import uuid

    from support.ros import Processes

    from mango.client.session import spun_node

    procs = Processes(tmp_path)
    with spun_node("cases", threads=1) as node:
        try:
            yield node, procs, f"/t{uuid.uuid4().hex[:8]}"
        finally:
            procs.stop_all()


def _node_detect(node: Any, ns: str, name: str, phrases: list[str]) -> Any:
    from support.ros import call_service

    from mango_ros.srv import Detect

    return call_service(node, Detect, f"{ns}/{name}/detect",
                        Detect.Request(phrases=phrases, camera="front", max_results=2),
                        timeout=60)


def _start_perception(procs: Any, ns: str, backend: str, weights: Path) -> str:
    name = f"perception_{backend}"
    procs.start(name, "mango.nodes.perception_node", "-r", f"__ns:={ns}", "-r",
                f"__node:={name}", "-p", f"backend:={backend}", "-p", f"weights:={weights}",
                "-p", "score_threshold:=0.0", "-p", "cameras:=['front']")
    return name


def test_the_node_serves_both_models_on_the_sim(request: pytest.FixtureRequest,
                                                ros_env: Any) -> None:
    from support.ros import wait_for

    from mango.ros.detection_msg import detection_from_msg

    node, procs, ns = ros_env
    procs.start("sim", "mango.nodes.sim_node", "-r", f"__ns:={ns}", "-p",
                "scene:=libero10_bowl_drawer", "-p", "camera_rate:=2.0", "-p",
                "cameras:=['front']", "-p", "image_width:=160", "-p", "image_height:=120")
    for backend in ("owlv2", "grounding_dino"):
        name = _start_perception(procs, ns, backend, _folders(request, backend))
        reply = wait_for(lambda n=name: (r := _node_detect(node, ns, n, PHRASES)).success and r,
                         timeout=180, what=f"{name} answered from sim frames")
        # a random model's best boxes may sit on the sky, which has no depth (+Inf): then the
        # phrase is unmatched with that reason; every phrase is one or the other
        assert {d.phrase for d in reply.detections} | set(reply.unmatched) == set(PHRASES)
        assert len(reply.reasons) == len(reply.unmatched) and all(reply.reasons)
        for msg in reply.detections:
            det = detection_from_msg(msg, (120, 160))
            x0, y0, x1, y1 = det.box_2d
            assert 0 <= x0 < x1 <= 160 and 0 <= y0 < y1 <= 120
            assert msg.header.frame_id == "world" and det.entity_id is None
            # a point of the scene seen from the front camera: on or above the floor, in
            # front of the camera (world frame, metres)
            assert all(np.isfinite(det.centroid)) and det.centroid[2] > -0.1
        assert "Traceback" not in procs.log(name)


@pytest.mark.parametrize("backend", ["owlv2", "grounding_dino"])
def test_the_node_answers_bad_frames_with_reasons(request: pytest.FixtureRequest,
                                                  ros_env: Any, backend: str) -> None:
    from support.fake_camera import FakeCamera, flat_table
    from support.ros import wait_for

    node, procs, ns = ros_env
    name = _start_perception(procs, ns, backend, _folders(request, backend))
    cam = FakeCamera(node, ns)
    rgb, depth = flat_table(160, 120)

    def says(text: str, send: Any) -> Any:
        send()
        r = _node_detect(node, ns, name, PHRASES[:1])
        return r if text in r.message or any(text in w for w in r.reasons) else None

    r = wait_for(lambda: says("has no CameraInfo yet", lambda: cam.send(rgb, depth, info=False)),
                 timeout=180, what="'no CameraInfo'")
    assert not r.success and r.unmatched == PHRASES[:1]
    cam.place()
    r = wait_for(lambda: says("the depth image is empty",
                              lambda: cam.send(rgb, np.full_like(depth, np.nan))),
                 timeout=30, what="'empty depth'")
    assert not r.success
    # a flat table 1 m below a downward camera: every box lands on it (z = 0)
    r = wait_for(lambda: (cam.send(rgb, depth),
                          x := _node_detect(node, ns, name, PHRASES[:1]))[1].success and x,
                 timeout=30, what="an answer on the flat table")
    assert r.detections, r.reasons  # a score threshold of 0 keeps every box
    for msg in r.detections:
        assert abs(msg.centroid.z) < 0.01, msg.centroid
    assert "Traceback" not in procs.log(name)
