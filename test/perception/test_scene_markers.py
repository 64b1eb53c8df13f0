"""The default marker map on the LIBERO-10 scenes, read the way a perception-only estimator
reads it: the rendered front (640x480) and wrist cameras, camera poses from the sim's
extrinsics and the measured joints, no segmentation. Every entity and moving part an oracle
of the scene names must be seen by at least one camera at the initial state, the entity
within 1 cm of the truth and the part's joint value within 0.02 (rad or m).

Measured figures are printed (`pytest -s`); README "Perception" quotes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import mujoco
import numpy as np
import pytest

from mango.geometry import quat_to_mat
from mango.oracle.expr import iter_atoms, parse_expression
from mango.oracle.world_state import WorldState
from mango.perception.aruco import ArucoBackend, MarkerPose
from mango.perception.sim_frames import estimated_frame, sim_extrinsics, sim_frame
from mango.sim.env import SimEnv
from mango.sim.markers import MarkerMap, auto_marker_map
from mango.sim.parts import joint_value, part_transform
from mango.sim.scene import (
    ARTICULATED,
    REPO_ROOT,
    CameraSpec,
    SceneSpec,
    as_scene,
    list_scenes,
)

LIBERO10 = [p.stem for p in list_scenes() if p.stem.startswith("libero10_")]
CAMERAS = ("front", "wrist")
# predicates that read an articulated entity's joint (oracle/predicates.py): its part must be
# seen
JOINT_PREDICATES = {"open", "close", "turnon", "turnoff"}

Need = tuple[str, str]  # (entity, part)


def _expressions(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("handle_as", "goal") and isinstance(v, str):
                yield v
            else:
                yield from _expressions(v)
    elif isinstance(node, list):
        for v in node:
            yield from _expressions(v)


def oracle_needs(scene: SceneSpec) -> set[Need]:
    """What the scene's oracle names: entities, regions' parent entities (and the part a
    region is on), and the moving part of each articulated entity whose joint a predicate
    reads."""
    assert scene.oracle is not None
    plan = json.loads((REPO_ROOT / scene.oracle).read_text())
    ids = {e.id: e for e in scene.entities}
    regions = {r.id: r for r in scene.regions}
    joints = {e.joint.id: e for e in scene.entities if e.joint is not None}
    need: set[Need] = set()
    for text in _expressions(plan):
        for atom in iter_atoms(parse_expression(text)):
            for a in atom.args:
                if a in ids:
                    need.add((a, "base"))
                if a in regions and regions[a].parent in ids:  # a region rides on its parent
                    need.add((regions[a].parent, "base"))
                    need.add((regions[a].parent, regions[a].part))
                if atom.predicate in JOINT_PREDICATES:
                    owner = joints.get(a) or ids.get(a)
                    if owner is not None and owner.shape in ARTICULATED:
                        need.add((owner.id, ARTICULATED[owner.shape]))
    return need


def _look(env: SimEnv, mm: MarkerMap) -> dict[str, list[MarkerPose]]:
    """Marker poses per camera, from estimated (perception-only) frames."""
    ex = sim_extrinsics(env)
    backend = ArucoBackend(mm, env.scene)
    q = env.joint_positions()
    return {cam: backend.poses(estimated_frame(env, cam, ex, q))[0] for cam in CAMERAS}


def _matrix(position: object, rotation: np.ndarray) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = rotation, np.asarray(position, float)
    return t


def _area(p: MarkerPose) -> float:
    """Pixels inside the marker's image: the biggest view of a marker is the surest."""
    x, y = p.corners[:, 0], p.corners[:, 1]
    return 0.5 * abs(float(x @ np.roll(y, 1) - y @ np.roll(x, 1)))


def _best(seen: dict[str, list[MarkerPose]], entity: str, part: str) -> MarkerPose | None:
    views = [p for ps in seen.values() for p in ps if (p.entity, p.part) == (entity, part)]
    return max(views, key=_area, default=None)


def _measured_joint(scene: SceneSpec, entity: str, part_pose: MarkerPose,
                    seen: dict[str, list[MarkerPose]]) -> float:
    """The joint value from a part marker and the entity pose from the biggest view of its
    base markers (nothing from the sim's truth)."""
    base = _best(seen, entity, "base")
    assert base is not None, f"{entity}: no base marker seen"
    rel = np.linalg.inv(_matrix(base.position, base.rotation)) @ _matrix(part_pose.position,
                                                                        part_pose.rotation)
    return joint_value(scene.entity(entity), rel)


def _check(scene: SceneSpec, ws: WorldState, seen: dict[str, list[MarkerPose]],
           need: set[Need]) -> dict[Need, tuple[list[str], float, float]]:
    """Per needed (entity, part): the cameras that saw it, the error that must hold (an
    entity: the worst view's position error, m; a part: the joint value from its biggest view,
    m or rad) and the worst of every view."""
    out: dict[Need, tuple[list[str], float, float]] = {}
    for entity, part in sorted(need):
        cams = [cam for cam, ps in seen.items()
                if any((p.entity, p.part) == (entity, part) for p in ps)]
        views = [p for ps in seen.values() for p in ps if (p.entity, p.part) == (entity, part)]
        if part == "base":
            errs = [float(np.linalg.norm(p.position - np.array(ws.objects[entity].position)))
                    for p in views]
            out[(entity, part)] = (cams, max(errs, default=0.0), max(errs, default=0.0))
            continue
        e = scene.entity(entity)
        assert e.joint is not None
        truth = ws.joints[e.joint.id].q
        errs = [abs(_measured_joint(scene, entity, p, seen) - truth) for p in views]
        best = _best(seen, entity, part)
        held = abs(_measured_joint(scene, entity, best, seen) - truth) if best else 0.0
        out[(entity, part)] = (cams, held, max(errs, default=0.0))
    return out


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", LIBERO10)
def test_oracle_entities_are_seen_and_placed(name: str, seed: int) -> None:
    scene = as_scene(name)
    mm = auto_marker_map(scene)
    need = oracle_needs(scene)
    marked = {(m.entity, m.part) for m in mm.markers}
    assert need <= marked, f"unmarked: {sorted(need - marked)}"
    with SimEnv(scene, seed=seed, cameras=CAMERAS, image_size=(640, 480), markers=mm) as env:
        seen = _look(env, mm)
        result = _check(scene, env.world_state(), seen, need)
    for (entity, part), (cams, held, worst) in result.items():
        unit, k = ("rad", 1.0) if part in ("door", "knob") else ("mm", 1000.0)
        print(f"{name} seed {seed}: {entity}/{part} seen by {'+'.join(cams) or 'none'}: "
              f"error {held * k:.3g} {unit} (worst view {worst * k:.3g})")
    for (entity, part), (cams, held, _) in result.items():
        assert cams, f"{entity}/{part}: no camera sees a marker"
        limit = 0.01 if part == "base" else 0.02
        assert held < limit, f"{entity}/{part}: error {held:.4f}"


def _joint_id(scene: SceneSpec, entity: str) -> str:
    e = scene.entity(entity)
    assert e.joint is not None
    return e.joint.id


@pytest.mark.parametrize(("name", "entity", "values", "hand"), [
    ("libero10_bowl_drawer", "white_cabinet_1", (-0.11,), None),  # half-open
    # shut, the drawer is out of the home view: the wrist sees it as the hand comes to it
    ("libero10_bowl_drawer", "white_cabinet_1", (0.0, -0.05), (-0.05, 0.14, 1.3)),
    ("libero10_mug_microwave", "microwave_1", (0.0, -0.8, -1.6), None),  # shut ... open
    ("libero10_two_moka_stove", "flat_stove_1", (0.3, 0.9, 1.5), None),  # the knob turned
])
def test_joint_values_read_back(name: str, entity: str, values: tuple[float, ...],
                                hand: tuple[float, float, float] | None) -> None:
    scene = as_scene(name)
    mm = auto_marker_map(scene)
    part = ARTICULATED[scene.entity(entity).shape]
    with SimEnv(scene, seed=0, cameras=CAMERAS, image_size=(640, 480), markers=mm) as env:
        if hand is not None:  # the arm moved: the wrist camera's pose follows from its joints
            _, down = env.hand_pose()
            env.data.qpos[env.built.arm_qpos] = env.ik_solver().require(
                hand, down, env.joint_positions())
        adr = env.built.joint_qpos[_joint_id(scene, entity)]
        for q in values:
            env.data.qpos[adr] = q
            mujoco.mj_forward(env.model, env.data)
            seen = _look(env, mm)
            parts = [p for ps in seen.values() for p in ps
                     if p.entity == entity and p.part == part]
            assert parts, f"{entity}/{part} at q = {q}: no camera sees a marker"
            best = _best(seen, entity, part)
            assert best is not None
            got = _measured_joint(scene, entity, best, seen)
            every = [_measured_joint(scene, entity, p, seen) for p in parts]
            print(f"{name}: {part} q = {q}: read {got:.4f} (marker {best.marker_id}; every "
                  f"view: {', '.join(f'{g:.4f}' for g in every)})")
            assert abs(got - q) < 0.02, (q, got)


def test_needs_follow_the_oracle() -> None:
    """The needs list is what the oracles name (so the visibility test checks what matters)."""
    assert oracle_needs(as_scene("libero10_bowl_drawer")) == {
        ("akita_black_bowl_1", "base"), ("white_cabinet_1", "base"),
        ("white_cabinet_1", "drawer")}
    assert oracle_needs(as_scene("libero10_two_moka_stove")) == {
        ("moka_pot_1", "base"), ("moka_pot_2", "base"), ("flat_stove_1", "base"),
        ("flat_stove_1", "knob")}
    # a region on the table needs no marker: the table is not an entity
    assert oracle_needs(as_scene("libero10_mug_pudding_plate")) == {
        ("porcelain_mug_1", "base"), ("plate_1", "base"), ("chocolate_pudding_1", "base")}


def test_entity_orientation_from_a_wall_marker() -> None:
    """A container's wall marker gives its full pose, not only its position."""
    scene = as_scene("libero10_soup_cheese_basket")
    mm = auto_marker_map(scene)
    with SimEnv(scene, seed=0, cameras=CAMERAS, image_size=(640, 480), markers=mm) as env:
        seen = _look(env, mm)
        truth = quat_to_mat(env.world_state().objects["basket_1"].orientation)
    walls = [p for p in seen["front"] if p.entity == "basket_1"
             and mm.by_id()[p.marker_id].rpy != (0.0, 0.0, 0.0)]
    assert walls
    for p in walls:
        angle = np.degrees(np.arccos(np.clip((np.trace(truth.T @ p.rotation) - 1) / 2, -1, 1)))
        assert angle < 3.0




@pytest.mark.parametrize("name", LIBERO10)
def test_every_marker_reads_back_head_on(name: str) -> None:
    """Each marker of the default map, seen by a camera put in front of its printed face,
    gives its entity's (part's) pose: the face points out, reads upright and sits where the
    map says, also for the markers the scene's own cameras do not see (the drawer front, the
    door's outer face)."""
    scene = as_scene(name)
    mm = auto_marker_map(scene)
    with SimEnv(scene, seed=0, cameras=(), markers=mm) as env:  # where each marker is
        ws = env.world_state()
    truth: dict[int, np.ndarray] = {}
    cams = []
    for m in mm.markers:
        o = ws.objects[m.entity]
        t = _matrix(o.position, quat_to_mat(o.orientation))
        if m.part != "base":
            e = scene.entity(m.entity)
            assert e.joint is not None
            t = t @ part_transform(e, ws.joints[e.joint.id].q)
        truth[m.id] = t
        face = t @ m.transform()
        # 0.25 m out along the face normal, a little off it (a view straight down is
        # degenerate for a look-at camera)
        pos = face[:3, 3] + 0.25 * face[:3, 2] + 0.03 * face[:3, 0]
        cams.append(CameraSpec(name=f"at_{m.id}", pos=tuple(pos), lookat=tuple(face[:3, 3]),
                               fovy=40.0))
    looking = scene.model_copy(update={"cameras": [*scene.cameras, *cams]})
    backend = ArucoBackend(mm, scene)
    with SimEnv(looking, seed=0, cameras=[c.name for c in cams], image_size=(320, 240),
                markers=mm) as env:
        for m, cam in zip(mm.markers, cams, strict=True):
            poses = [p for p in backend.poses(sim_frame(env, cam.name))[0]
                     if p.marker_id == m.id]
            assert poses, f"marker {m.id} ({m.entity}/{m.part}) not read head-on"
            t = truth[m.id]
            err = float(np.linalg.norm(poses[0].position - t[:3, 3]))
            ang = float(np.degrees(np.arccos(np.clip(
                (np.trace(t[:3, :3].T @ poses[0].rotation) - 1) / 2, -1, 1))))
            assert err < 0.005 and ang < 2.0, (m.id, m.entity, m.part, err, ang)
