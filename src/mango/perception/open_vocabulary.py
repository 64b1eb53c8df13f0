"""`owlv2` and `grounding_dino`: open-vocabulary detectors from `transformers`, on CPU torch.

Weights come from a local folder only (`PerceptionConfig.weights`: what `save_pretrained`
writes, e.g. a copy of google/owlv2-base-patch16-ensemble or IDEA-Research/grounding-dino-
tiny); nothing is downloaded (`local_files_only`). Boxes become masks and world boxes with the
frame's depth (`perception.boxes`). The PIL image processors are used (they need scipy, not
torchvision, whose only build for this torch is a CUDA one). VoLo (App. H.2) found such
detectors fail on MuJoCo renders, hence `sim` as the simulation default.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mango.perception.base import (
    Detection,
    DetectResult,
    PerceptionConfig,
    PerceptionError,
    RGBDFrame,
)
from mango.perception.boxes import box_detection
from mango.torch_support import declare_torchvision_ops


def weights_folder(cfg: PerceptionConfig, backend: str) -> Path:
    """The model folder, checked: it exists and holds a saved model."""
    if cfg.weights is None:
        raise PerceptionError(f"the '{backend}' backend needs a local model folder (--weights "
                              "DIR / the node's 'weights' parameter); nothing is downloaded")
    path = Path(cfg.weights).expanduser()
    if not path.is_dir():
        raise PerceptionError(f"model folder {path} for '{backend}' does not exist")
    if not (path / "config.json").is_file():
        raise PerceptionError(f"model folder {path} for '{backend}' has no config.json (not a "
                              "folder written by save_pretrained)")
    return path


_log = logging.getLogger(__name__)


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise PerceptionError(f"the transformers backends need torch and transformers "
                              f"(requirements/python.txt): {exc}") from exc
    declare_torchvision_ops()
    return torch


class _Detector(abc.ABC):
    """What both detectors share: checks, box -> 3-D, the answer per phrase."""

    name = ""

    def __init__(self, score_threshold: float) -> None:
        self.score_threshold = score_threshold

    @abc.abstractmethod
    def _boxes(self, rgb: np.ndarray, phrases: Sequence[str]
               ) -> list[list[tuple[list[float], float]]]:
        """Per phrase: (x0, y0, x1, y1 in pixels of `rgb`, score), best first (each
        detector's model)."""

    def detect(self, frame: RGBDFrame, phrases: Sequence[str],
               max_results: int = 1) -> DetectResult:
        problem = frame.problem()
        if problem is None and frame.rgb is None:
            problem = f"camera '{frame.camera}' has no colour image"
        if problem is not None:
            return DetectResult((), tuple(phrases), (problem,))
        assert frame.rgb is not None
        per_phrase = self._boxes(np.ascontiguousarray(frame.rgb[..., :3]), phrases)
        detections: list[Detection] = []
        unmatched: list[str] = []
        messages: list[str] = []
        for phrase, boxes in zip(phrases, per_phrase, strict=True):
            found: list[Detection] = []
            for box, score in boxes:
                if score < self.score_threshold:
                    continue
                det, why = box_detection(frame, box, phrase=phrase, label=phrase, score=score)
                if why:
                    messages.append(f"'{phrase}': a box scoring {score:.2f}: {why}")
                if det is not None:
                    found.append(det)
                if max_results > 0 and len(found) >= max_results:
                    break
            if not found:
                unmatched.append(phrase)
                if not boxes:
                    messages.append(f"'{phrase}': the detector gives no box for it in camera "
                                    f"'{frame.camera}'")
                elif boxes[0][1] < self.score_threshold:
                    messages.append(f"'{phrase}': no box scores {self.score_threshold} or more "
                                    f"in camera '{frame.camera}' (best {boxes[0][1]:.2f})")
            detections.extend(found)
        return DetectResult(tuple(detections), tuple(unmatched), tuple(messages))

    def close(self) -> None:  # noqa: B027 - nothing to release: the model goes with the backend
        """The model is freed with the backend."""


class Owlv2Backend(_Detector):
    """OWLv2: every phrase in one forward pass (text queries), boxes per query."""

    name = "owlv2"

    def __init__(self, folder: Path, score_threshold: float = 0.1) -> None:
        super().__init__(score_threshold)
        self._torch = _torch()
        from transformers import AutoTokenizer, Owlv2ForObjectDetection, Owlv2Processor
        from transformers.models.owlv2.image_processing_pil_owlv2 import Owlv2ImageProcessorPil

        self.processor = Owlv2Processor(
            image_processor=Owlv2ImageProcessorPil.from_pretrained(folder, local_files_only=True),
            tokenizer=AutoTokenizer.from_pretrained(folder, local_files_only=True))
        self.model = Owlv2ForObjectDetection.from_pretrained(folder, local_files_only=True)
        self.model.eval()

    @classmethod
    def from_config(cls, cfg: PerceptionConfig) -> Owlv2Backend:
        return cls(weights_folder(cfg, "owlv2"), cfg.score_threshold)

    def _boxes(self, rgb: np.ndarray, phrases: Sequence[str]
               ) -> list[list[tuple[list[float], float]]]:
        torch = self._torch
        inputs = self.processor(text=[list(phrases)], images=rgb, return_tensors="pt",
                                padding="max_length", truncation=True)
        with torch.no_grad():
            outputs = self.model(**inputs)
        # target (H, W): OWLv2 pads to a square, the post-processing undoes it for that size;
        # threshold -1 keeps every box (a score can underflow to 0), `detect` thresholds
        res = self.processor.image_processor.post_process_object_detection(
            outputs, threshold=-1.0, target_sizes=[rgb.shape[:2]])[0]
        out: list[list[tuple[list[float], float]]] = [[] for _ in phrases]
        for box, score, label in zip(res["boxes"].tolist(), res["scores"].tolist(),
                                     res["labels"].tolist(), strict=True):
            out[int(label)].append((box, float(score)))
        return [sorted(b, key=lambda bs: -bs[1]) for b in out]


class GroundingDinoBackend(_Detector):
    """Grounding DINO: one forward pass per phrase (prompt "phrase."), so each box answers
    exactly one phrase."""

    name = "grounding_dino"

    def __init__(self, folder: Path, score_threshold: float = 0.1) -> None:
        super().__init__(score_threshold)
        self._torch = _torch()
        from transformers import (
            AutoTokenizer,
            GroundingDinoForObjectDetection,
            GroundingDinoProcessor,
        )
        from transformers.models.grounding_dino.image_processing_pil_grounding_dino import (
            GroundingDinoImageProcessorPil,
        )

        self.processor = GroundingDinoProcessor(
            image_processor=GroundingDinoImageProcessorPil.from_pretrained(
                folder, local_files_only=True),
            tokenizer=AutoTokenizer.from_pretrained(folder, local_files_only=True))
        self.model = GroundingDinoForObjectDetection.from_pretrained(folder,
                                                                     local_files_only=True)
        self.model.eval()

    @classmethod
    def from_config(cls, cfg: PerceptionConfig) -> GroundingDinoBackend:
        return cls(weights_folder(cfg, "grounding_dino"), cfg.score_threshold)

    def _boxes(self, rgb: np.ndarray, phrases: Sequence[str]
               ) -> list[list[tuple[list[float], float]]]:
        torch = self._torch
        out = []
        for phrase in phrases:
            prompt = phrase.strip().lower().rstrip(".") + "."
            inputs = self.processor(images=rgb, text=prompt, return_tensors="pt")
            with torch.no_grad():
                outputs = self.model(**inputs)
            res = self.processor.post_process_grounded_object_detection(
                outputs, inputs["input_ids"], threshold=-1.0, text_threshold=0.0,
                target_sizes=[rgb.shape[:2]], text_labels=[[phrase]])[0]
            boxes = [(b, float(s)) for b, s in zip(res["boxes"].tolist(), res["scores"].tolist(),
                                                   strict=True)]
            out.append(sorted(boxes, key=lambda bs: -bs[1]))
        return out
