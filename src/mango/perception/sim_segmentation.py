"""`sim`: the simulator's own instance segmentation, read as a perception backend.

Privileged (ground truth, like VoLo's ground-truth tools): the pixels of an entity are known
exactly from the renderer's segmentation, so what this backend adds is the grounding of a
phrase to an entity — with the generator's grounder (`generation.offline.grounding`), so a
phrase means here what it means in an oracle — and the 3-D from depth that every backend
shares (`perception.geometry`). Its errors are the pipeline's, not a detector's.
"""

from __future__ import annotations

from collections.abc import Sequence

from mango.generation.models import SceneTask
from mango.generation.offline.grounding import PhraseGrounding, ground_phrase
from mango.perception.base import (
    Detection,
    DetectResult,
    PerceptionConfig,
    PerceptionError,
    RGBDFrame,
)
from mango.perception.geometry import back_project, mask_box, point_box, to_world
from mango.sim.scene import SceneSpec

MIN_POINTS = 20  # fewer depth points than this make no box worth reporting


class SimSegmentationBackend:
    """Phrases -> scene ids (the generator's grounder) -> segmented pixels -> 3-D boxes."""

    name = "sim"

    def __init__(self, name: str, task: SceneTask, labels: dict[str, str]) -> None:
        """`task`: the scene's objects as the grounder reads them; `labels`: a word or two
        for each entity (what a detection is called)."""
        self.name_of_scene, self.task, self.labels = name, task, labels
        # a phrase's grounding depends on the phrase and the scene only: worked out once
        self._grounded: dict[str, PhraseGrounding] = {}

    @classmethod
    def for_scene(cls, scene: SceneSpec) -> SimSegmentationBackend:
        """On an embedded sim scene."""
        labels = {e.id: e.description or e.id.replace("_", " ") for e in scene.entities}
        labels[scene.table.id] = scene.table.id.replace("_", " ")
        return cls(scene.name, SceneTask(**scene.task_objects()["task_objects"][0]),  # type: ignore[arg-type]
                   labels)

    @classmethod
    def for_task(cls, name: str, task: SceneTask) -> SimSegmentationBackend:
        """On a scene given by its objects alone (a LIBERO task's, imported from its BDDL)."""
        labels = {e: task.descriptions.get(e) or e.replace("_", " ") for e in task.entities()}
        return cls(name, task, labels)

    @classmethod
    def from_config(cls, cfg: PerceptionConfig) -> SimSegmentationBackend:
        if cfg.scene is None:
            raise PerceptionError("the 'sim' backend grounds phrases on a scene: give one")
        return cls.for_scene(cfg.scene)

    def detect(self, frame: RGBDFrame, phrases: Sequence[str],
               max_results: int = 1) -> DetectResult:
        if frame.segmentation is None:
            raise PerceptionError(f"camera '{frame.camera}' gives no segmentation: the 'sim' "
                                  "backend reads the simulator's and works in simulation only")
        problem = frame.problem()
        if problem is not None:
            return DetectResult((), tuple(phrases), (problem,))
        label_of = {ent: i for i, ent in enumerate(frame.segmentation_ids)}
        detections: list[Detection] = []
        unmatched: list[str] = []
        messages: list[str] = []
        for phrase in phrases:
            g = self._grounded.get(phrase)
            if g is None:
                g = self._grounded[phrase] = ground_phrase(phrase, self.task)
            if g.problem is not None:
                unmatched.append(phrase)
                messages.append(f"'{phrase}': {g.problem} in scene {self.name_of_scene}")
                continue
            found: list[Detection] = []
            for ent, score in g.matches:
                det, why = self._detection(frame, phrase, ent, score, label_of)
                if det is not None:
                    found.append(det)
                if why is not None:
                    messages.append(f"'{phrase}': {why}")
            found.sort(key=lambda d: -d.score)
            if max_results > 0:
                found = found[:max_results]
            if not found:
                unmatched.append(phrase)
            detections.extend(found)
        return DetectResult(tuple(detections), tuple(unmatched), tuple(messages))

    def _detection(self, frame: RGBDFrame, phrase: str, ent: str, score: float,
                   label_of: dict[str, int]) -> tuple[Detection | None, str | None]:
        """The detection of one grounded entity, or why there is none; a second value is a
        remark on a detection that is there but partial."""
        assert frame.segmentation is not None and frame.depth is not None
        assert frame.intrinsics is not None and frame.pose is not None
        if ent not in label_of:
            kind = self.task.kind_of(ent) or "entity"
            return None, f"{ent} is a {kind}, which has no pixels of its own"
        mask = frame.segmentation == label_of[ent]
        box = mask_box(mask)
        if box is None:
            return None, f"{ent} is not in view of camera '{frame.camera}'"
        points = back_project(frame.depth, frame.intrinsics, mask)
        if len(points) < MIN_POINTS:
            return None, (f"{ent} has {len(points)} pixels with depth in camera "
                          f"'{frame.camera}' (fewer than {MIN_POINTS})")
        pb = point_box(to_world(points, frame.pose))
        assert pb is not None
        h, w = mask.shape
        partial = None
        if box[0] == 0 or box[1] == 0 or box[2] == w or box[3] == h:
            partial = (f"{ent} touches the edge of camera '{frame.camera}': its box is the "
                       "visible part only")
        return Detection(phrase=phrase, entity_id=ent, label=self.labels.get(ent, ent),
                         score=score, box_2d=box, mask=mask, centroid=pb.centroid,
                         size=pb.size, yaw=pb.yaw, camera=frame.camera,
                         stamp=frame.stamp), partial

    def close(self) -> None:
        """Nothing to release."""
