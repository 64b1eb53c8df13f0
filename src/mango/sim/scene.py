"""Scene files (`config/scenes/*.yaml`): what a tabletop task contains and how it starts.

A scene names its entities with LIBERO's ids so that oracles written for LIBERO apply
unchanged; the physics model is built from it in `mango.sim.build`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mango.errors import InputError, from_validation_error
from mango.sim.libero.scene_names import is_libero_scene
from mango.yaml_files import read_yaml_mapping

MAX_EXTENT_M = 10.0
"""The longest side of an entity, a region or the table: a tabletop's things are under a metre
(the shipped scenes' longest is 0.34 m); a box of 1e20 m built and then ran for minutes."""
MAX_ENTITIES = 200
"""The most entities (and regions) a scene may have: LIBERO's scenes have under 20; 10,000
took 23 s to load, and every step, render and world state grows with them."""

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Unit = Annotated[float, Field(ge=0, le=1)]
Extent = Annotated[float, Field(gt=0, le=MAX_EXTENT_M, allow_inf_nan=False)]
Vec2 = tuple[Finite, Finite]
Vec3 = tuple[Finite, Finite, Finite]
Size3 = tuple[Extent, Extent, Extent]
Rgba = tuple[Unit, Unit, Unit, Unit]

FR3_JOINTS: tuple[str, ...] = tuple(f"fr3_joint{i}" for i in range(1, 8))
# franka_ros2's "ready" pose (gripper down in front of the base); `config/robots/fr3.yaml`
# has the same `home`, so sim and robot start from one joint configuration.
FR3_READY: tuple[float, ...] = (0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2,
                                math.pi / 4)

Shape = Literal[
    "box",  # a solid box (food boxes, books)
    "cylinder",  # a solid cylinder (cans, pots)
    "mug",  # a cylinder with a handle
    "bowl",  # an open container, footprint size[0] x size[1]
    "basket",  # an open container with thin walls
    "plate",  # a dish: a thin round base and a low rim (`mango.sim.parts.plate_well`)
    "caddy",  # an open container split into a front and a back compartment
    "shelf",  # a frame open to -x with a board splitting it into a bottom and a top layer
    "drawer_cabinet",  # a cabinet whose bottom drawer slides (part "drawer")
    "microwave",  # a box with a cavity open to -x and a hinged door (part "door")
    "stove",  # a flat stove with a burner and a knob turning about z (part "knob")
]
ARTICULATED: dict[str, str] = {"drawer_cabinet": "drawer", "microwave": "door", "stove": "knob"}

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYWORDS = {"and", "or", "not", "true", "false"}

REPO_ROOT = Path(__file__).resolve().parents[3]
SCENES_DIR = REPO_ROOT / "config" / "scenes"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JointSpec(_Strict):
    """An articulation with LIBERO's thresholds (openness u = (q-q_closed)/(q_open-q_closed))."""

    id: str
    q_open: Finite
    q_closed: Finite
    q_init: Finite
    range: Vec2

    @model_validator(mode="after")
    def _check(self) -> JointSpec:
        if self.q_open == self.q_closed:
            raise ValueError("q_open and q_closed must differ")
        lo, hi = self.range
        if not lo < hi:
            raise ValueError("range must be [low, high] with low < high")
        if not lo <= self.q_init <= hi:
            raise ValueError(f"q_init {self.q_init} lies outside range [{lo}, {hi}]")
        return self


class DeviceSpec(_Strict):
    """A device that is `on` once its joint passes `on_threshold` (e.g. a stove knob)."""

    on_threshold: Finite

    def is_on(self, q: float) -> bool:
        """On once the joint passes the threshold: the sim's and the estimator's one rule."""
        return q >= self.on_threshold


class EntitySpec(_Strict):
    id: str
    kind: Literal["object", "fixture", "device"] = "object"
    shape: Shape
    size: Size3  # full extents of the bounding box
    mass: Positive = 0.15
    color: Rgba = (0.6, 0.6, 0.6, 1.0)
    position: Vec2  # xy of the box centre on the table
    yaw: Finite = 0.0  # degrees about z
    jitter: Vec2 = (0.0, 0.0)  # uniform +/- noise on x, y per seed
    yaw_jitter: Finite = 0.0  # uniform +/- degrees per seed
    joint: JointSpec | None = None
    device: DeviceSpec | None = None
    description: str | None = None  # how people call it ("white mug")
    # starts resting on (or in) this entity or region instead of the table: `position` is
    # then its xy offset from the support's centre (LIBERO's `:init` On/In an object or site)
    on: str | None = None
    # a drawer cabinet's levels (1: a bottom drawer under a closed front) and which one
    # slides (0 = bottom); the other levels are closed fronts
    drawers: Annotated[int, Field(ge=1, le=4)] = 1
    drawer: Annotated[int, Field(ge=0)] = 0

    @model_validator(mode="after")
    def _check(self) -> EntitySpec:
        if not _NAME.match(self.id):
            raise ValueError(f"id '{self.id}' is not a valid name")
        needs_joint = self.shape in ARTICULATED
        if needs_joint and self.joint is None:
            raise ValueError(f"shape '{self.shape}' needs a 'joint'")
        if not needs_joint and self.joint is not None:
            raise ValueError(f"shape '{self.shape}' has no joint")
        if self.device is not None and self.shape != "stove":
            raise ValueError("only a stove can be a device")
        if self.kind == "device" and self.device is None:
            raise ValueError("kind 'device' needs a 'device' entry")
        if (self.drawers, self.drawer) != (1, 0) and self.shape != "drawer_cabinet":
            raise ValueError("'drawers'/'drawer' are for a drawer_cabinet")
        if self.drawer >= self.drawers:
            raise ValueError(f"drawer {self.drawer} does not exist ({self.drawers} levels)")
        if self.on is not None and not self.movable:
            raise ValueError(f"'on': only a movable object starts on another entity ({self.id})")
        return self

    @property
    def movable(self) -> bool:
        return self.kind == "object" and self.shape not in ARTICULATED


class RegionSpec(_Strict):
    """A named box attached to a parent entity (or to one of its moving parts)."""

    id: str
    parent: str
    part: Literal["base", "drawer", "door", "knob"] = "base"
    offset: Vec3 = (0.0, 0.0, 0.0)  # centre, in the parent part's frame
    size: Size3


class TableSpec(_Strict):
    id: str = "main_table"
    size: tuple[Extent, Extent] = (1.0, 1.2)
    height: Positive = 0.9  # z of the top surface
    color: Rgba = (0.72, 0.6, 0.45, 1.0)


class RobotSpec(_Strict):
    base: Vec3 = (-0.56, 0.0, 0.9)
    joint_names: tuple[str, ...] = FR3_JOINTS
    home: tuple[Finite, ...] = FR3_READY

    @model_validator(mode="after")
    def _check(self) -> RobotSpec:
        if len(self.joint_names) != 7 or len(set(self.joint_names)) != 7:
            raise ValueError("joint_names must list 7 distinct names")
        if len(self.home) != 7:
            raise ValueError("home must have 7 joint values")
        return self


class SkillSpec(_Strict):
    """One step of the scripted expert's plan."""

    # open: pull a drawer open by its handle; push: slide an object along the table into
    # a target region with closed fingers (a plate too wide to grasp)
    skill: Literal["pick_place", "close", "turn_on", "open", "push"]
    obj: str | None = None  # pick_place: the object
    target: str | None = None  # pick_place: a region or an object to put it in/on
    relation: Literal["in", "on"] = "in"
    offset: Vec2 = (0.0, 0.0)  # pick_place: release point offset in the target's frame
    grasp: Literal["top", "side"] = "top"  # side: approach along +x (into a cavity)
    joint: str | None = None  # close, open: the joint id (or fixture id)
    device: str | None = None  # turn_on: the device id

    @model_validator(mode="after")
    def _check(self) -> SkillSpec:
        need = {"pick_place": ("obj", "target"), "close": ("joint",), "turn_on": ("device",),
                "open": ("joint",), "push": ("obj", "target")}
        for name in need[self.skill]:
            if getattr(self, name) is None:
                raise ValueError(f"skill '{self.skill}' needs '{name}'")
        return self


class CameraSpec(_Strict):
    name: str
    pos: Vec3
    lookat: Vec3
    fovy: Annotated[float, Field(gt=0, lt=180)] = 45.0  # degrees, as MuJoCo takes it


class SceneSpec(_Strict):
    name: str
    task_index: int | None = None
    instruction: str
    goal: str  # the benchmark's symbolic end state (spec §1 expression)
    oracle: str | None = None  # fine-grained oracle file, relative to the repository root
    table: TableSpec = TableSpec()
    robot: RobotSpec = RobotSpec()
    entities: list[EntitySpec] = Field(..., max_length=MAX_ENTITIES)
    regions: list[RegionSpec] = Field(default_factory=list, max_length=MAX_ENTITIES)
    expert: list[SkillSpec]
    cameras: list[CameraSpec] = Field(
        default_factory=lambda: [
            CameraSpec(name="front", pos=(0.75, 0.0, 1.55), lookat=(-0.05, 0.0, 0.9), fovy=50.0)
        ]
    )
    horizon: Positive = 60.0  # seconds an expert run may take
    # The LIBERO BDDL problem class the scene comes from (`LIBERO_Kitchen_Tabletop_Manipulation`,
    # …): where a LIBERO-trained policy's world frame puts the robot base (policy presets).
    libero_problem: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SceneSpec:
        ids: list[str] = [self.table.id]
        ids += [e.id for e in self.entities]
        ids += [r.id for r in self.regions]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"duplicate ids: {', '.join(sorted(dup))}")
        by_id = {e.id: e for e in self.entities}
        joint_ids = {e.joint.id: e for e in self.entities if e.joint is not None}
        for r in self.regions:
            if r.parent not in by_id and r.parent != self.table.id:
                raise ValueError(f"region '{r.id}': unknown parent '{r.parent}'")
            if r.part != "base":
                parent = by_id.get(r.parent)
                if parent is None or ARTICULATED.get(parent.shape) != r.part:
                    raise ValueError(f"region '{r.id}': parent '{r.parent}' has no part '{r.part}'")
        known = set(ids) | set(joint_ids)
        region_parent = {r.id: r.parent for r in self.regions}
        for e in self.entities:
            seen = [e.id]
            ref = e.on
            while ref is not None:
                if ref not in by_id and ref not in region_parent:
                    raise ValueError(f"entity '{e.id}': 'on' names unknown '{ref}'")
                owner = region_parent.get(ref, ref)
                if owner in seen:
                    raise ValueError(f"entity '{e.id}': 'on' goes round in a circle "
                                     f"({' -> '.join([*seen, owner])})")
                seen.append(owner)
                ref = by_id[owner].on if owner in by_id else None
        for i, s in enumerate(self.expert):
            for name in ("obj", "target", "joint", "device"):
                ref = getattr(s, name)
                if ref is not None and ref not in known:
                    raise ValueError(f"expert[{i}].{name}: unknown id '{ref}'")
            if s.obj is not None and not by_id[s.obj].movable:
                raise ValueError(f"expert[{i}].obj: '{s.obj}' is not a movable object")
        for name in _goal_args(self.goal):
            if name not in known:
                raise ValueError(f"goal: unknown entity '{name}'")
        return self

    def entity(self, entity_id: str) -> EntitySpec:
        for e in self.entities:
            if e.id == entity_id:
                return e
        raise KeyError(entity_id)

    def region(self, region_id: str) -> RegionSpec:
        for r in self.regions:
            if r.id == region_id:
                return r
        raise KeyError(region_id)

    def placement_order(self) -> list[EntitySpec]:
        """Entities so that every support comes before what starts on it."""
        region_parent = {r.id: r.parent for r in self.regions}
        done: dict[str, EntitySpec] = {}
        pending = list(self.entities)
        while pending:
            rest = []
            for e in pending:
                owner = region_parent.get(e.on, e.on) if e.on is not None else None
                if owner is None or owner in done or owner == self.table.id:
                    done[e.id] = e
                else:
                    rest.append(e)
            if len(rest) == len(pending):  # unreachable after validation (no cycles)
                raise ValueError("entities' 'on' supports form a cycle")
            pending = rest
        return list(done.values())

    def joint_owner(self, joint_or_fixture: str) -> EntitySpec:
        """The articulated entity a joint id (or the fixture id itself) belongs to."""
        for e in self.entities:
            if e.joint is not None and joint_or_fixture in (e.id, e.joint.id):
                return e
        raise KeyError(joint_or_fixture)

    def task_objects(self) -> dict[str, object]:
        """The spec §4 scene-objects form (grounding input for `mango generate oracle`)."""
        kinds: dict[str, str] = {self.table.id: "surface"}
        descriptions: dict[str, str] = {}
        for e in self.entities:
            kinds[e.id] = e.kind
            if e.description:
                descriptions[e.id] = e.description
            if e.joint is not None and e.joint.id != e.id:
                kinds.setdefault(e.joint.id, "joint")
        for r in self.regions:
            kinds[r.id] = "region"
        movable = [e.id for e in self.entities if e.movable]
        return {"task_objects": [{
            "id": self.instruction,
            "objects": movable,
            "states": list(kinds),
            "descriptions": descriptions,
            "kinds": kinds,
        }]}

    @property
    def slug(self) -> str:
        return self.name.removeprefix("libero10_")


def _goal_args(goal: str) -> list[str]:
    """Entity names used as arguments in a goal expression (names directly inside parens)."""
    out: list[str] = []
    for m in re.finditer(r"\(([^()]*)\)", goal):
        for arg in m.group(1).split(","):
            arg = arg.strip()
            if arg and arg.lower() not in _KEYWORDS and _NAME.match(arg):
                out.append(arg)
    return out


def load_scene(path: str | Path) -> SceneSpec:
    """Read and validate a scene file, raising `InputError` that names the field."""
    p = Path(path)
    data = read_yaml_mapping(p, "scene")
    try:
        return SceneSpec.model_validate(data)
    except ValidationError as exc:
        raise _named_error(exc, data, str(p)) from None


def _named_error(exc: ValidationError, data: dict, file: str) -> InputError:
    """Like `from_validation_error`, but list indices of entities become their ids."""
    err = from_validation_error(exc, file=file)
    loc = exc.errors()[0]["loc"]
    named = {"entities": "entity", "regions": "region", "expert": "skill"}
    if len(loc) >= 2 and loc[0] in named and isinstance(loc[1], int):
        items = data.get(loc[0])
        if isinstance(items, list) and loc[1] < len(items) and isinstance(items[loc[1]], dict):
            ident = items[loc[1]].get("id")
            if ident:
                err.message = f"({named[str(loc[0])]} '{ident}') {err.message}"
    return err


def list_scenes(directory: Path = SCENES_DIR) -> list[Path]:
    """The scene files shipped with the project, sorted by name."""
    return sorted(directory.glob("*.yaml"))


def scenes_task_objects(paths: list[Path] | None = None) -> dict[str, object]:
    """One spec §4 scene-objects file for several scenes (default: every shipped one), an entry
    per scene: the `--scenes` input of `mango generate all` for the shipped tasks."""
    entries: list[object] = []
    for path in list_scenes() if paths is None else paths:
        entries.extend(load_scene(path).task_objects()["task_objects"])  # type: ignore[arg-type]
    return {"task_objects": entries}


def is_scene_reference(text: str) -> bool:
    """Whether a `--scene` value means a sim scene: a YAML path, or a shipped scene's name that
    is not also an existing file."""
    p = Path(text)
    if p.suffix in (".yaml", ".yml"):
        return True
    if p.exists() or p.suffix:
        return False
    return any((SCENES_DIR / c).exists() for c in (f"{text}.yaml", f"libero10_{text}.yaml"))


def resolve_scene(name_or_path: str) -> Path:
    """A scene given by path, by file stem (`libero10_stove_moka`) or by slug (`stove_moka`)."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.exists():
            raise InputError("scene file not found", file=str(p))
        return p
    for cand in (f"{name_or_path}.yaml", f"libero10_{name_or_path}.yaml"):
        if (SCENES_DIR / cand).exists():
            return SCENES_DIR / cand
    if is_libero_scene(name_or_path):
        raise InputError(f"'{name_or_path}' is LIBERO itself, which runs in its own process: "
                         "`mango sim run --scene libero/SUITE/TASK` and campaigns take it; "
                         "this command drives the embedded sim (LIBERO here is not built yet)")
    known = ", ".join(s.stem for s in list_scenes())
    raise InputError(f"unknown scene '{name_or_path}' (known: {known})")


def as_scene(scene: SceneSpec | str | Path) -> SceneSpec:
    """A scene given as a model, a shipped scene name or a path to a scene file."""
    if isinstance(scene, SceneSpec):
        return scene
    return load_scene(resolve_scene(str(scene)))
