"""`mango sim export-sdf`: a scene as a Gazebo world. The file is checked as XML against the
SDFormat 1.9 element descriptions, and its poses, sizes and colours against the MuJoCo scene
the embedded simulator builds (and the scene file) — not against the exporter's own output."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.sim.env import SimEnv
from mango.sim.scene import as_scene, list_scenes
from mango.sim.sdf import scene_world_sdf

runner = CliRunner()

# What SDFormat 1.9 allows for every element the exporter writes, keyed "parent/element":
# (value type, child elements, attributes, required attributes); "*" = any children (a plugin's
# own configuration). Taken from gazebosim/sdformat sdf/1.9/*.sdf (root.sdf, world.sdf,
# physics.sdf, plugin.sdf, light.sdf, model.sdf, link.sdf, inertial.sdf, visual.sdf,
# collision.sdf, geometry.sdf, box_shape.sdf, cylinder_shape.sdf, plane_shape.sdf,
# material.sdf, surface.sdf, joint.sdf, sensor.sdf, camera.sdf, pose.sdf), includes resolved.
SPEC: dict[str, tuple[str, str, str, str]] = {
    "axis/dynamics": ("", "damping friction spring_reference spring_stiffness", "", ""),
    "axis/limit": ("", "dissipation effort lower stiffness upper velocity", "", ""),
    "axis/xyz": ("vector3", "", "expressed_in", ""),
    "box/size": ("vector3", "", "", ""),
    "camera/camera_info_topic": ("string", "", "", ""),
    "camera/clip": ("", "far near", "", ""),
    "camera/horizontal_fov": ("double", "", "", ""),
    "camera/image": ("", "anti_aliasing format height width", "", ""),
    "clip/far": ("double", "", "", ""),
    "clip/near": ("double", "", "", ""),
    "collision/geometry": (
        "",
        "box capsule cylinder ellipsoid empty heightmap image mesh plane polyline sphere",
        "",
        "",
    ),
    "collision/pose": ("pose", "", "degrees relative_to rotation_format", ""),
    "collision/surface": ("", "bounce contact friction soft_contact", "", ""),
    "cylinder/length": ("double", "", "", ""),
    "cylinder/radius": ("double", "", "", ""),
    "dynamics/damping": ("double", "", "", ""),
    "dynamics/friction": ("double", "", "", ""),
    "friction/ode": ("", "fdir1 mu mu2 slip1 slip2", "", ""),
    "geometry/box": ("", "size", "", ""),
    "geometry/cylinder": ("", "length radius", "", ""),
    "geometry/plane": ("", "normal size", "", ""),
    "image/height": ("int", "", "", ""),
    "image/width": ("int", "", "", ""),
    "inertia/ixx": ("double", "", "", ""),
    "inertia/ixy": ("double", "", "", ""),
    "inertia/ixz": ("double", "", "", ""),
    "inertia/iyy": ("double", "", "", ""),
    "inertia/iyz": ("double", "", "", ""),
    "inertia/izz": ("double", "", "", ""),
    "inertial/inertia": ("", "ixx ixy ixz iyy iyz izz", "", ""),
    "inertial/mass": ("double", "", "", ""),
    "inertial/pose": ("pose", "", "degrees rotation_format", ""),
    "joint/axis": ("", "dynamics limit xyz", "", ""),
    "joint/child": ("string", "", "", ""),
    "joint/parent": ("string", "", "", ""),
    "joint/pose": ("pose", "", "degrees relative_to rotation_format", ""),
    "light/cast_shadows": ("bool", "", "", ""),
    "light/diffuse": ("color", "", "", ""),
    "light/direction": ("vector3", "", "", ""),
    "light/pose": ("pose", "", "degrees relative_to rotation_format", ""),
    "light/specular": ("color", "", "", ""),
    "limit/lower": ("double", "", "", ""),
    "limit/upper": ("double", "", "", ""),
    "link/collision": ("", "geometry laser_retro max_contacts pose surface", "name", "name"),
    "link/inertial": ("", "inertia mass pose", "", ""),
    "link/pose": ("pose", "", "degrees relative_to rotation_format", ""),
    "link/sensor": (
        "",
        "air_pressure altimeter always_on camera contact enable_metrics force_torque gps "
        "imu lidar logical_camera magnetometer navsat plugin pose ray rfid rfidtag sonar "
        "topic transceiver update_rate visualize",
        "name type",
        "name type",
    ),
    "link/visual": (
        "",
        "cast_shadows geometry laser_retro material meta plugin pose transparency visibility_flags",
        "name",
        "name",
    ),
    "material/ambient": ("color", "", "", ""),
    "material/diffuse": ("color", "", "", ""),
    "model/joint": (
        "",
        "axis axis2 child gearbox_ratio gearbox_reference_body parent physics pose sensor "
        "thread_pitch",
        "name type",
        "name type",
    ),
    "model/link": (
        "",
        "audio_sink audio_source battery collision enable_wind gravity inertial kinematic "
        "light must_be_base_link particle_emitter pose projector self_collide sensor "
        "velocity_decay visual",
        "name",
        "name",
    ),
    "model/pose": ("pose", "", "degrees relative_to rotation_format", ""),
    "model/static": ("bool", "", "", ""),
    "ode/mu": ("double", "", "", ""),
    "ode/mu2": ("double", "", "", ""),
    "physics/max_step_size": ("double", "", "", ""),
    "physics/real_time_factor": ("double", "", "", ""),
    "plane/normal": ("vector3", "", "", ""),
    "plane/size": ("vector2d", "", "", ""),
    "sdf": ("", "actor light model world", "version", "version"),
    "sdf/world": (
        "",
        "actor atmosphere audio frame gravity gui include light magnetic_field model "
        "physics plugin population road scene spherical_coordinates state wind",
        "name",
        "name",
    ),
    "sensor/always_on": ("bool", "", "", ""),
    "sensor/camera": (
        "",
        "box_type camera_info_topic clip depth_camera distortion horizontal_fov image "
        "lens noise optical_frame_id pose save segmentation_type trigger_topic triggered "
        "visibility_mask",
        "name",
        "",
    ),
    "sensor/topic": ("string", "", "", ""),
    "sensor/update_rate": ("double", "", "", ""),
    "surface/friction": ("", "bullet ode torsional", "", ""),
    "visual/geometry": (
        "",
        "box capsule cylinder ellipsoid empty heightmap image mesh plane polyline sphere",
        "",
        "",
    ),
    "visual/material": (
        "",
        "ambient diffuse double_sided emissive lighting pbr render_order script shader "
        "shininess specular",
        "",
        "",
    ),
    "visual/pose": ("pose", "", "degrees relative_to rotation_format", ""),
    "world/gravity": ("vector3", "", "", ""),
    "world/light": (
        "",
        "attenuation cast_shadows diffuse direction intensity light_on pose specular spot "
        "visualize",
        "name type",
        "name type",
    ),
    "world/model": (
        "",
        "allow_auto_disable enable_wind frame gripper include joint link model plugin "
        "pose self_collide static",
        "canonical_link name placement_frame",
        "name",
    ),
    "world/physics": (
        "",
        "bullet dart max_contacts max_step_size ode real_time_factor real_time_update_rate simbody",
        "default name type",
        "type",
    ),
    "world/plugin": ("", "*", "filename name", "filename name"),
}

# gz-sim's system plugins a world needs: gazebosim/gz-sim examples/worlds/empty.sdf (physics,
# user commands, scene broadcaster) and examples/worlds/camera_sensor.sdf (sensors, ogre2)
GZ_SYSTEMS = {
    "gz::sim::systems::Physics": "gz-sim-physics-system",
    "gz::sim::systems::UserCommands": "gz-sim-user-commands-system",
    "gz::sim::systems::SceneBroadcaster": "gz-sim-scene-broadcaster-system",
    "gz::sim::systems::Sensors": "gz-sim-sensors-system",
}
VALUE_LENGTH = {"double": 1, "int": 1, "vector2d": 2, "vector3": 3, "color": 4, "pose": 6}
SCENES = [p.stem for p in list_scenes()]


def _check_value(key: str, kind: str, text: str | None) -> None:
    if kind in ("", "string"):
        assert kind == "" or (text or "").strip(), f"{key}: empty string"
        return
    if kind == "bool":
        assert text in ("true", "false", "0", "1"), f"{key}: {text!r} is not a bool"
        return
    values = (text or "").split()
    assert len(values) == VALUE_LENGTH[kind], f"{key}: {text!r} is not a {kind}"
    numbers = [float(v) for v in values]
    assert all(math.isfinite(v) for v in numbers), key
    if kind == "int":
        assert values[0].lstrip("-").isdigit(), f"{key}: {text!r} is not an int"
    if kind == "color":
        assert all(0 <= v <= 1 for v in numbers), f"{key}: colour {text!r} outside [0, 1]"


def _check(el: ET.Element, key: str) -> None:
    assert key in SPEC, f"element {key} is not one the test checks against SDFormat 1.9"
    kind, children, attributes, required = SPEC[key]
    allowed = set(children.split())
    assert set(el.attrib) <= set(attributes.split()), f"{key}: attributes {sorted(el.attrib)}"
    assert set(required.split()) <= set(el.attrib), f"{key}: needs {required}"
    if "*" in allowed:
        return
    for child in el:
        assert child.tag in allowed, f"<{child.tag}> is not a child of <{el.tag}> in SDF 1.9"
        _check(child, f"{el.tag}/{child.tag}")
    if not len(el):
        _check_value(key, kind, el.text)


def _rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """SDFormat's pose angles: R = Rz(yaw) Ry(pitch) Rx(roll) (sdf/1.9/pose.sdf)."""
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch),
                              math.sin(pitch), math.cos(yaw), math.sin(yaw))
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx


def _pose(el: ET.Element) -> tuple[np.ndarray, np.ndarray]:
    pose = el.find("pose")
    v = [float(x) for x in pose.text.split()] if pose is not None else [0.0] * 6
    return np.array(v[:3]), _rpy_matrix(*v[3:])


def _world(scene: str, seed: int = 0) -> ET.Element:
    return ET.fromstring(scene_world_sdf(as_scene(scene), seed))


@pytest.mark.parametrize("scene", SCENES)
def test_every_element_and_attribute_is_sdformat_1_9(scene: str) -> None:
    root = _world(scene)
    assert root.tag == "sdf" and root.get("version") == "1.9"
    _check(root, "sdf")
    (world,) = root.findall("world")
    models = [m.get("name") for m in world.findall("model")]
    assert len(models) == len(set(models)), "model names repeat"
    for model in world.findall("model"):
        frames = [c.get("name") for c in model if c.tag in ("link", "joint")]
        assert len(frames) == len(set(frames)), f"{model.get('name')}: names repeat"
        links = {c.get("name") for c in model.findall("link")}
        for joint in model.findall("joint"):
            assert joint.findtext("child") in links
            assert joint.findtext("parent") in links | {"world"}


def test_the_world_loads_gz_sims_systems() -> None:
    world = _world("stove_moka").find("world")
    plugins = {p.get("name"): p.get("filename") for p in world.findall("plugin")}
    assert plugins == GZ_SYSTEMS
    sensors = next(p for p in world.findall("plugin") if p.get("name").endswith("Sensors"))
    assert sensors.findtext("render_engine") == "ogre2"


@pytest.mark.parametrize(("scene", "seed"), [("stove_moka", 0), ("bowl_drawer", 3),
                                             ("mug_microwave", 1), ("book_caddy", 5)])
def test_every_body_and_geom_is_where_the_mujoco_scene_has_it(scene: str, seed: int) -> None:
    """Model pose x link pose x visual pose lands on MuJoCo's geom, for every geom of every
    entity and fixture part, in the state SimEnv.reset(seed) leaves (the sim's t = 0)."""
    world = _world(scene, seed).find("world")
    with SimEnv(scene, seed, cameras=()) as env:
        m, d, built = env.model, env.data, env.built
        for entity_id, root in built.entity_body.items():
            model = world.find(f"model[@name='{entity_id}']")
            assert model is not None, entity_id
            mp, mr = _pose(model)
            bodies = [b for b in range(1, m.nbody) if m.body_rootid[b] == root]
            geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] in bodies]
            visuals = []
            for link in model.findall("link"):
                lp, lr = _pose(link)
                for visual in link.findall("visual"):
                    vp, vr = _pose(visual)
                    visuals.append((mp + mr @ (lp + lr @ vp), mr @ lr @ vr, visual))
            assert len(visuals) == len(geoms), entity_id
            for g, (pos, rot, visual) in zip(geoms, visuals, strict=True):
                np.testing.assert_allclose(pos, d.geom_xpos[g], atol=1e-6, err_msg=entity_id)
                np.testing.assert_allclose(rot, d.geom_xmat[g].reshape(3, 3), atol=1e-6)
                if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX:
                    size = [float(x) for x in visual.findtext("geometry/box/size").split()]
                    np.testing.assert_allclose(size, 2 * m.geom_size[g], atol=1e-9)
        robot = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(m.nbody)]
    names = {mo.get("name") for mo in world.findall("model")}
    assert not names & {n for n in robot if n and n.startswith(("panda", "fr3", "robot"))}


def test_object_positions_follow_the_seed_as_in_the_sim() -> None:
    """A jittered scene: the world state's object positions for each seed, found again in the
    exported models (a free object's model frame is its body, whose centre the state gives)."""
    sc = as_scene("soup_sauce_basket")
    moved = [e.id for e in sc.entities if e.movable and max(e.jitter) > 0]
    assert moved
    seen = {}
    for seed in (0, 7):
        world = _world("soup_sauce_basket", seed).find("world")
        with SimEnv(sc, seed, cameras=()) as env:
            state = env.world_state().objects
        for oid in moved:
            pos, _ = _pose(world.find(f"model[@name='{oid}']"))
            np.testing.assert_allclose(pos, state[oid].position, atol=1e-6)
            seen.setdefault(oid, []).append(pos)
    assert any(np.linalg.norm(a - b) > 1e-3 for a, b in seen.values())


def test_colours_kinds_and_joints_follow_the_scene_file() -> None:
    sc = as_scene("bowl_drawer")
    world = _world("bowl_drawer").find("world")
    for e in sc.entities:
        model = world.find(f"model[@name='{e.id}']")
        diffuse = [float(x) for x in model.find("link/visual/material/diffuse").text.split()]
        np.testing.assert_allclose(diffuse, e.color, atol=1e-6)
        static = model.findtext("static") == "true"
        fixed = [j for j in model.findall("joint") if j.get("type") == "fixed"]
        if e.movable:
            assert not static and not model.findall("joint")
        elif e.joint is not None:
            # the moving part on its joint; the joint's zero is q_init (no initial position in
            # SDF 1.9), so the limits are the scene's range less q_init
            assert not static and fixed and fixed[0].findtext("parent") == "world"
            (joint,) = model.findall(f"joint[@name='{e.joint.id}']")
            assert joint.get("type") == "prismatic"
            lower, upper = (float(joint.findtext(f"axis/limit/{k}")) for k in ("lower", "upper"))
            assert lower == pytest.approx(e.joint.range[0] - e.joint.q_init)
            assert upper == pytest.approx(e.joint.range[1] - e.joint.q_init)
        else:
            assert static
    table = world.find(f"model[@name='{sc.table.id}']")
    assert table.findtext("static") == "true"
    size = [float(x) for x in table.find("link/visual/geometry/box/size").text.split()]
    assert size[:2] == pytest.approx(list(sc.table.size))


def test_a_scene_camera_is_a_camera_sensor_looking_where_the_scene_says() -> None:
    """A Gazebo camera looks along its +x with +z up (gz-sensors' camera frame), so its x axis
    points from the scene camera's `pos` to its `lookat`."""
    sc = as_scene("stove_moka")
    world = _world("stove_moka").find("world")
    for cam in sc.cameras:
        model = world.find(f"model[@name='{cam.name}_camera']")
        pos, rot = _pose(model)
        np.testing.assert_allclose(pos, cam.pos, atol=1e-9)
        view = np.subtract(cam.lookat, cam.pos)
        np.testing.assert_allclose(rot[:, 0], view / np.linalg.norm(view), atol=1e-6)
        assert rot[2, 2] > 0  # image up is world up-ish
        sensor = model.find("link/sensor")
        assert sensor.get("type") == "camera"
        assert sensor.findtext("topic") == f"/camera/{cam.name}/image_raw"
        assert sensor.findtext("camera/camera_info_topic") == f"/camera/{cam.name}/camera_info"
        # square images: horizontal field of view = the scene's vertical one
        assert float(sensor.findtext("camera/horizontal_fov")) == pytest.approx(
            math.radians(cam.fovy))


def test_cli_writes_the_world_into_a_folder_or_stdout(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sim", "export-sdf", "--scene", "stove_moka", "-o",
                                 f"{tmp_path}/worlds/"])
    assert result.exit_code == 0, result.output
    written = tmp_path / "worlds" / "libero10_stove_moka.sdf"
    assert ET.parse(written).getroot().find("world").get("name") == "libero10_stove_moka"
    result = runner.invoke(app, ["sim", "export-sdf", "--scene", "stove_moka"])
    assert result.exit_code == 0
    assert result.stdout == written.read_text()


@pytest.mark.parametrize(("args", "needle"), [
    (["--scene", "no_such_scene"], "unknown scene"),
    (["--scene", "stove_moka", "--camera-rate", "0"], "--camera-rate"),
])
def test_cli_bad_input_is_one_error_line(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["sim", "export-sdf", *args])
    assert result.exit_code == 2
    assert result.stderr.startswith("error:") and needle in result.stderr
