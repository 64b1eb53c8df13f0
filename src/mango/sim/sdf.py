"""A scene as a Gazebo (gz-sim) world: SDFormat 1.9 written from the compiled MuJoCo model.

The world is read off the model `mango.sim.build` compiles for the scene, in the state
`SimEnv.reset(seed)` leaves it (entities placed for the seed, joints at `q_init`, settled), so
Gazebo and the embedded simulator start from the same geometry and the same poses: one
geometry code path, no second reading of the scene file. The robot is left out (a Gazebo
bringup spawns franka_description's FR3 at `robot.base`), and so are regions (they are
oracle geometry, not bodies).

- movable objects: a model with one link per body, free;
- articulated fixtures (drawer, door, knob): a model whose base link is fixed to `world` and
  whose moving part is a second link on a prismatic/revolute joint. SDFormat 1.9 has no
  initial joint position, so a joint's zero is the scene's `q_init` and its limits are
  shifted by it (Gazebo position = q - q_init);
- the table and other fixtures: static models; the floor a ground plane;
- the scene cameras: static models carrying a `camera` sensor on `/camera/<name>/image_raw`
  (and `camera_info`), the topics the ROS stacks use once ros_gz_bridge carries them.

The world's system plugins are gz-sim's: physics, user commands, scene broadcaster (as in
gazebosim/gz-sim examples/worlds/empty.sdf) and sensors with ogre2 (examples/worlds/
camera_sensor.sdf), which the camera sensors need.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import mujoco
import numpy as np

from mango.errors import InputError
from mango.geometry import quat_conjugate, quat_multiply, quat_to_mat
from mango.sim.scene import ARTICULATED, SceneSpec

SDF_VERSION = "1.9"
SYSTEM_PLUGINS: tuple[tuple[str, str], ...] = (
    ("gz-sim-physics-system", "gz::sim::systems::Physics"),
    ("gz-sim-user-commands-system", "gz::sim::systems::UserCommands"),
    ("gz-sim-scene-broadcaster-system", "gz::sim::systems::SceneBroadcaster"),
    ("gz-sim-sensors-system", "gz::sim::systems::Sensors"),
)
# MuJoCo cameras look along -z with +y up; a Gazebo camera looks along +x with +z up: the
# Gazebo camera axes (x, y, z) are MuJoCo's (-z, -x, +y): the columns of this matrix.
_GZ_FROM_MJ_CAMERA = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])


def quat_to_rpy(q: Sequence[float]) -> tuple[float, float, float]:
    """SDFormat's pose angles (roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)) of a
    `[w, x, y, z]` quaternion."""
    m = quat_to_mat(q)
    return _mat_to_rpy(m)


def _mat_to_rpy(m: np.ndarray) -> tuple[float, float, float]:
    pitch = math.asin(max(-1.0, min(1.0, -float(m[2, 0]))))
    if abs(m[2, 0]) < 1 - 1e-9:
        roll = math.atan2(float(m[2, 1]), float(m[2, 2]))
        yaw = math.atan2(float(m[1, 0]), float(m[0, 0]))
    else:  # gimbal lock: yaw carries the whole turn about z
        roll = 0.0
        yaw = math.atan2(-float(m[0, 1]), float(m[1, 1]))
    return roll, pitch, yaw


def _num(x: float) -> str:
    v = round(float(x), 9)
    return "0" if v == 0 else f"{v:.9g}"


def _nums(xs: Sequence[float]) -> str:
    return " ".join(_num(x) for x in xs)


def _pose(parent: ET.Element, pos: Sequence[float], quat: Sequence[float] | None = None,
          rpy: Sequence[float] | None = None) -> None:
    angles = rpy if rpy is not None else quat_to_rpy(quat if quat is not None else (1, 0, 0, 0))
    _text(parent, "pose", _nums([*pos, *angles]))


def _text(parent: ET.Element, tag: str, value: str, **attrib: str) -> ET.Element:
    el = ET.SubElement(parent, tag, attrib)
    el.text = value
    return el


def _relative(pos_a: np.ndarray, quat_a: np.ndarray, pos_b: np.ndarray,
              quat_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pose of frame b in frame a (both given in the world)."""
    inv = quat_conjugate(quat_a)
    return quat_to_mat(inv) @ (pos_b - pos_a), quat_multiply(inv, quat_b)


def _rgba(rgba: Sequence[float]) -> str:
    return _nums(rgba)


class _WorldWriter:
    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, scene: SceneSpec,
                 entity_body: dict[str, int], geom_owner: list[str | None],
                 image_size: tuple[int, int], camera_rate: float) -> None:
        self.m, self.d, self.scene = model, data, scene
        self.entity_body = entity_body
        self.geom_owner = geom_owner
        self.image_size = image_size
        self.camera_rate = camera_rate

    def write(self) -> ET.Element:
        m, sc = self.m, self.scene
        root = ET.Element("sdf", version=SDF_VERSION)
        world = ET.SubElement(root, "world", name=sc.name)
        physics = ET.SubElement(world, "physics", name="mujoco_step", type="ignored")
        _text(physics, "max_step_size", _num(m.opt.timestep))
        _text(physics, "real_time_factor", "1")
        for filename, name in SYSTEM_PLUGINS:
            plugin = ET.SubElement(world, "plugin", filename=filename, name=name)
            if name.endswith("Sensors"):
                _text(plugin, "render_engine", "ogre2")
        _text(world, "gravity", _nums(m.opt.gravity))
        self._lights(world)
        self._ground(world)
        movable = {e.id for e in sc.entities if e.movable}
        articulated = {e.id for e in sc.entities if e.shape in ARTICULATED}
        for entity_id, body in self.entity_body.items():
            kind = ("free" if entity_id in movable else
                    "fixed" if entity_id in articulated else "static")
            self._model(world, entity_id, body, kind)
        self._cameras(world)
        return root

    def _lights(self, world: ET.Element) -> None:
        m = self.m
        for i in range(m.nlight):
            if int(m.light_type[i]) != int(mujoco.mjtLightType.mjLIGHT_DIRECTIONAL):
                continue
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_LIGHT, i) or f"light_{i}"
            light = ET.SubElement(world, "light", name=name, type="directional")
            _pose(light, m.light_pos[i])
            _text(light, "cast_shadows", "true" if m.light_castshadow[i] else "false")
            _text(light, "diffuse", _rgba([*m.light_diffuse[i], 1.0]))
            _text(light, "specular", _rgba([*m.light_specular[i], 1.0]))
            _text(light, "direction", _nums(m.light_dir[i]))

    def _ground(self, world: ET.Element) -> None:
        m = self.m
        for g in range(m.ngeom):
            if m.geom_bodyid[g] != 0 or m.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE:
                continue
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or "ground"
            model = ET.SubElement(world, "model", name=name)
            _text(model, "static", "true")
            link = ET.SubElement(model, "link", name="link")
            self._geom(link, g, "geom")

    def _model(self, world: ET.Element, entity_id: str, root: int, kind: str) -> None:
        m, d = self.m, self.d
        model = ET.SubElement(world, "model", name=entity_id)
        root_pos, root_quat = d.xpos[root].copy(), d.xquat[root].copy()
        _pose(model, root_pos, root_quat)
        if kind == "static":
            _text(model, "static", "true")
        bodies = [b for b in range(1, m.nbody) if m.body_rootid[b] == root]
        links: dict[int, str] = {}
        for b in bodies:
            name = "base" if b == root else (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)
                                             or f"body_{b}").removeprefix(f"{entity_id}__")
            links[b] = name
            link = ET.SubElement(model, "link", name=name)
            pos, quat = _relative(root_pos, root_quat, d.xpos[b], d.xquat[b])
            _pose(link, pos, quat)
            if kind != "static":
                self._inertial(link, b)
            for g in range(m.ngeom):
                if m.geom_bodyid[g] == b:
                    self._geom(link, g, f"g{g}")
        if kind == "fixed":
            joint = ET.SubElement(model, "joint", name="fixed_to_world", type="fixed")
            _text(joint, "parent", "world")
            _text(joint, "child", "base")
        for b in bodies:
            for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
                if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                    continue  # a free body: its model is not fixed to anything
                self._joint(model, j, links[int(m.body_parentid[b])], links[b])

    def _joint(self, model: ET.Element, j: int, parent: str, child: str) -> None:
        m, d = self.m, self.d
        jtype = mujoco.mjtJoint(int(m.jnt_type[j]))
        kinds = {mujoco.mjtJoint.mjJNT_SLIDE: "prismatic", mujoco.mjtJoint.mjJNT_HINGE: "revolute"}
        if jtype not in kinds:
            raise InputError(f"joint type {jtype.name} of {model.get('name')} has no SDF export")
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint_{j}"
        joint = ET.SubElement(model, "joint", name=name, type=kinds[jtype])
        _pose(joint, m.jnt_pos[j])
        _text(joint, "parent", parent)
        _text(joint, "child", child)
        axis = ET.SubElement(joint, "axis")
        _text(axis, "xyz", _nums(m.jnt_axis[j]))
        dynamics = ET.SubElement(axis, "dynamics")
        _text(dynamics, "damping", _num(m.dof_damping[m.jnt_dofadr[j]]))
        _text(dynamics, "friction", _num(m.dof_frictionloss[m.jnt_dofadr[j]]))
        # the link poses are the initial state: Gazebo's zero is q_init
        q0 = float(d.qpos[m.jnt_qposadr[j]])
        limit = ET.SubElement(axis, "limit")
        _text(limit, "lower", _num(m.jnt_range[j][0] - q0))
        _text(limit, "upper", _num(m.jnt_range[j][1] - q0))

    def _inertial(self, link: ET.Element, b: int) -> None:
        m = self.m
        inertial = ET.SubElement(link, "inertial")
        _pose(inertial, m.body_ipos[b], m.body_iquat[b])
        _text(inertial, "mass", _num(m.body_mass[b]))
        inertia = ET.SubElement(inertial, "inertia")
        for tag, value in zip(("ixx", "iyy", "izz"), m.body_inertia[b], strict=True):
            _text(inertia, tag, _num(value))
        for tag in ("ixy", "ixz", "iyz"):
            _text(inertia, tag, "0")

    def _geom(self, link: ET.Element, g: int, name: str) -> None:
        m = self.m
        collides = bool(m.geom_contype[g] or m.geom_conaffinity[g])
        elements = [("visual", f"{name}_visual")]
        if collides:
            elements.append(("collision", f"{name}_collision"))
        for tag, el_name in elements:
            el = ET.SubElement(link, tag, name=el_name)
            _pose(el, m.geom_pos[g], m.geom_quat[g])
            self._shape(ET.SubElement(el, "geometry"), g)
            if tag == "visual":
                rgba = m.geom_rgba[g]
                material = ET.SubElement(el, "material")
                _text(material, "ambient", _rgba(rgba))
                _text(material, "diffuse", _rgba(rgba))
                if rgba[3] < 1:
                    _text(el, "transparency", _num(1 - rgba[3]))
            else:
                mu = _num(m.geom_friction[g][0])
                ode = ET.SubElement(ET.SubElement(ET.SubElement(el, "surface"), "friction"),
                                    "ode")
                _text(ode, "mu", mu)
                _text(ode, "mu2", mu)

    def _shape(self, geometry: ET.Element, g: int) -> None:
        m = self.m
        t, size = mujoco.mjtGeom(int(m.geom_type[g])), m.geom_size[g]
        if t == mujoco.mjtGeom.mjGEOM_BOX:
            _text(ET.SubElement(geometry, "box"), "size", _nums(2 * size))
        elif t == mujoco.mjtGeom.mjGEOM_CYLINDER:
            cyl = ET.SubElement(geometry, "cylinder")
            _text(cyl, "radius", _num(size[0]))
            _text(cyl, "length", _num(2 * size[1]))
        elif t == mujoco.mjtGeom.mjGEOM_SPHERE:
            _text(ET.SubElement(geometry, "sphere"), "radius", _num(size[0]))
        elif t == mujoco.mjtGeom.mjGEOM_PLANE:
            plane = ET.SubElement(geometry, "plane")
            _text(plane, "normal", "0 0 1")
            _text(plane, "size", _nums(2 * size[:2]))
        else:
            owner = self.geom_owner[g] or "?"
            raise InputError(f"geom {g} of '{owner}' has MuJoCo type {t.name}, which has no SDF "
                             "export (box, cylinder, sphere, plane)")

    def _cameras(self, world: ET.Element) -> None:
        m, d = self.m, self.d
        width, height = self.image_size
        for c in range(m.ncam):
            if m.cam_bodyid[c] != 0:
                continue  # on a robot link: the spawned robot carries its own cameras
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_CAMERA, c) or f"camera_{c}"
            model = ET.SubElement(world, "model", name=f"{name}_camera")
            rot = d.cam_xmat[c].reshape(3, 3) @ _GZ_FROM_MJ_CAMERA
            _pose(model, d.cam_xpos[c], rpy=_mat_to_rpy(rot))
            _text(model, "static", "true")
            link = ET.SubElement(model, "link", name="link")
            sensor = ET.SubElement(link, "sensor", name=name, type="camera")
            camera = ET.SubElement(sensor, "camera")
            fovy = math.radians(float(m.cam_fovy[c]))
            hfov = 2 * math.atan(math.tan(fovy / 2) * width / height)
            _text(camera, "camera_info_topic", f"/camera/{name}/camera_info")
            _text(camera, "horizontal_fov", _num(hfov))
            image = ET.SubElement(camera, "image")
            _text(image, "width", str(width))
            _text(image, "height", str(height))
            clip = ET.SubElement(camera, "clip")
            _text(clip, "near", "0.01")
            _text(clip, "far", "10")
            _text(sensor, "always_on", "true")
            _text(sensor, "update_rate", _num(self.camera_rate))
            _text(sensor, "topic", f"/camera/{name}/image_raw")


def scene_world(scene: SceneSpec, seed: int = 0, *, image_size: tuple[int, int] = (224, 224),
                camera_rate: float = 10.0) -> ET.Element:
    """The `<sdf>` element of the scene's world in its initial state for `seed`."""
    from mango.sim.env import SimEnv

    with SimEnv(scene, seed, cameras=()) as env:
        b = env.built
        return _WorldWriter(env.model, env.data, env.scene, b.entity_body, b.geom_owner,
                            image_size, camera_rate).write()


def scene_world_sdf(scene: SceneSpec, seed: int = 0, *,
                    image_size: tuple[int, int] = (224, 224), camera_rate: float = 10.0) -> str:
    """`scene_world` as an XML document."""
    root = scene_world(scene, seed, image_size=image_size, camera_rate=camera_rate)
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
