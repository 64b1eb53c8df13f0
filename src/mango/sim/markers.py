"""Fiducial markers fixed to entities: one file format for the sim and for a real lab.

A marker map (YAML) says which ArUco/AprilTag id sits where on which entity: the marker's
centre and orientation in the entity's (or its moving part's) frame and its printed size. The
sim builder renders each as a thin textured plate (the texture drawn from OpenCV's own
dictionary, `cv2.aruco.generateImageMarker`); the `aruco` perception backend reads the same
file to turn a detected marker's pose into the entity's pose. Off unless a map is given, so
scenes and traces without one are unchanged.

Marker frame (OpenCV's, for `SOLVEPNP_IPPE_SQUARE`): origin at the centre of the black
square, x to the right and y up as the marker image is seen, z out of the printed face.
`rpy` (degrees, fixed axes x-y-z, as URDF's `rpy`) rotates the entity frame into it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mango.errors import InputError, from_validation_error
from mango.sim.parts import KNOB_HALF, container_wall, door_panel, drawer_half, plate_well
from mango.sim.scene import ARTICULATED, EntitySpec, SceneSpec
from mango.yaml_files import read_yaml_mapping

PLATE_THICKNESS = 0.001  # the card a marker is printed on, metres

Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = tuple[Finite, Finite, Finite]

# our names -> OpenCV's predefined dictionaries (cv2.aruco.DICT_*)
DICTIONARIES: dict[str, str] = {
    "4x4_50": "DICT_4X4_50", "4x4_100": "DICT_4X4_100", "4x4_250": "DICT_4X4_250",
    "5x5_50": "DICT_5X5_50", "5x5_100": "DICT_5X5_100", "5x5_250": "DICT_5X5_250",
    "6x6_250": "DICT_6X6_250", "apriltag_36h11": "DICT_APRILTAG_36h11",
}
DictionaryName = Literal["4x4_50", "4x4_100", "4x4_250", "5x5_50", "5x5_100", "5x5_250",
                         "6x6_250", "apriltag_36h11"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MarkerSpec(_Strict):
    id: Annotated[int, Field(ge=0)]
    entity: str  # the entity the marker is fixed to
    part: Literal["base", "drawer", "door", "knob"] = "base"  # or its moving part
    size: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]  # black square side, metres
    position: Vec3 = (0.0, 0.0, 0.0)  # centre of the printed face, entity (part) frame, m
    rpy: Vec3 = (0.0, 0.0, 0.0)  # marker frame in the entity (part) frame, degrees

    def rotation(self) -> np.ndarray:
        """entity_R_marker (columns: the marker's axes in the entity frame)."""
        return rpy_matrix(*(math.radians(a) for a in self.rpy))

    def transform(self) -> np.ndarray:
        """entity_T_marker, 4x4."""
        t = np.eye(4)
        t[:3, :3] = self.rotation()
        t[:3, 3] = self.position
        return t


class MarkerMap(_Strict):
    dictionary: DictionaryName = "4x4_50"
    markers: list[MarkerSpec]

    @model_validator(mode="after")
    def _check(self) -> MarkerMap:
        ids = [m.id for m in self.markers]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"marker ids used twice: {', '.join(map(str, dup))}")
        limit = dictionary_size(self.dictionary)
        big = [i for i in ids if i >= limit]
        if big:
            raise ValueError(f"marker ids {big} exceed dictionary {self.dictionary} "
                             f"(ids 0..{limit - 1})")
        return self

    def by_id(self) -> dict[int, MarkerSpec]:
        return {m.id: m for m in self.markers}

    def check_scene(self, scene: SceneSpec, file: str | None = None) -> None:
        """Every marker names an entity (and a part it has) of the scene."""
        for i, m in enumerate(self.markers):
            try:
                e = scene.entity(m.entity)
            except KeyError:
                raise InputError(f"marker {m.id}: unknown entity '{m.entity}' in scene "
                                 f"'{scene.name}'", file=file, field=f"markers[{i}].entity"
                                 ) from None
            if m.part != "base" and ARTICULATED.get(e.shape) != m.part:
                raise InputError(f"marker {m.id}: entity '{m.entity}' has no part '{m.part}'",
                                 file=file, field=f"markers[{i}].part")


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Rz(yaw) Ry(pitch) Rx(roll): rotations about the fixed x, y, z axes (URDF rpy)."""
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch),
                              math.sin(pitch), math.cos(yaw), math.sin(yaw))
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def cv_dictionary(name: str) -> Any:
    """OpenCV's predefined dictionary for one of our names."""
    import cv2

    if name not in DICTIONARIES:
        raise InputError(f"unknown marker dictionary '{name}' (known: {', '.join(DICTIONARIES)})")
    return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, DICTIONARIES[name]))


def dictionary_size(name: str) -> int:
    return int(cv_dictionary(name).bytesList.shape[0])


def marker_image(dictionary: str, marker_id: int, cell_px: int = 8,
                 border_cells: int = 1) -> np.ndarray:
    """The marker as a grey uint8 image with a white quiet zone of `border_cells` cells."""
    import cv2

    d = cv_dictionary(dictionary)
    if not 0 <= marker_id < d.bytesList.shape[0]:
        raise InputError(f"marker id {marker_id} is not in dictionary {dictionary} "
                         f"(ids 0..{d.bytesList.shape[0] - 1})")
    cells = d.markerSize + 2  # data cells + the black border
    img = cv2.aruco.generateImageMarker(d, marker_id, cells * cell_px, borderBits=1)
    pad = border_cells * cell_px
    return cv2.copyMakeBorder(img, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=255)


def marker_cells(dictionary: str) -> int:
    """Cells across the black square (data cells + its border)."""
    return int(cv_dictionary(dictionary).markerSize) + 2


def load_marker_map(path: str | Path) -> MarkerMap:
    """Read and validate a marker map file; errors name the file and the field."""
    p = Path(path)
    data = read_yaml_mapping(p, "marker map")
    try:
        return MarkerMap.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, file=str(p)) from None


def axes_rpy(x: Vec3, z: Vec3) -> Vec3:
    """`rpy` (degrees) of the marker frame whose x and z axes (in the entity frame) are given."""
    ax, az = np.asarray(x, float), np.asarray(z, float)
    r = np.column_stack([ax, np.cross(az, ax), az])
    roll = math.atan2(r[2, 1], r[2, 2])
    pitch = -math.asin(float(np.clip(r[2, 0], -1.0, 1.0)))
    yaw = math.atan2(r[1, 0], r[0, 0])
    return (round(math.degrees(roll), 6) + 0.0, round(math.degrees(pitch), 6) + 0.0,
            round(math.degrees(yaw), 6) + 0.0)


def fitting_side(width: float, height: float, cells: int, max_size: float) -> float:
    """The largest marker (black square side) whose plate, with its one-cell quiet zone,
    fits a `width` x `height` face with a margin."""
    return round(min(max_size, 0.9 * min(width, height) * cells / (cells + 2)), 4)


def plate_half(side: float, cells: int) -> float:
    """Half the side of the plate a marker is printed on (square + quiet zone)."""
    return side * (cells + 2) / cells / 2


# outward normals of an open container's four side walls (entity frame), and the marker's x
# axis on each so that the marker reads upright (its y = entity +z)
_WALLS: tuple[tuple[Vec3, Vec3], ...] = (
    ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), ((-1.0, 0.0, 0.0), (0.0, -1.0, 0.0)),
    ((0.0, 1.0, 0.0), (-1.0, 0.0, 0.0)), ((0.0, -1.0, 0.0), (1.0, 0.0, 0.0)),
)


def _wall_toward(scene: SceneSpec, e: EntitySpec, camera: str) -> tuple[Vec3, Vec3]:
    """The side wall whose outer face looks most toward `camera` (+x without that camera)."""
    cam = next((c for c in scene.cameras if c.name == camera), None)
    if cam is None:
        return _WALLS[0]
    yaw = math.radians(e.yaw)
    to_cam = np.array([cam.pos[0] - e.position[0], cam.pos[1] - e.position[1]])

    def facing(w: tuple[Vec3, Vec3]) -> float:
        n = w[0]
        return float(to_cam @ [math.cos(yaw) * n[0] - math.sin(yaw) * n[1],
                               math.sin(yaw) * n[0] + math.cos(yaw) * n[1]])

    return max(_WALLS, key=facing)


def auto_marker_map(scene: SceneSpec, dictionary: DictionaryName = "4x4_50",
                    max_size: float = 0.05, first_id: int = 0) -> MarkerMap:
    """What a lab would stick on, measured to be seen by the front or wrist camera in the
    LIBERO-10 scenes; used when a scene has no hand-made map. Ids in entity order:

    - a solid-topped entity: one marker on its top face, as large as fits (<= `max_size`);
    - an open container (bowl, basket, caddy): on the outer side wall that faces the front
      camera (its top is only a rim), and on its inner floor for a camera above (what it
      holds may cover that one);
    - a plate (a dish): on its floor inside the rim;
    - a moving part, in the part frame: the drawer on its front beside the handle and on a
      tab jutting out level with the front's top edge (the front faces the robot, nearly
      edge-on to a camera above it; the tab is seen from above, open or shut); the microwave
      door on its outer face and on a flag above its top edge (seen from above at any opening);
      the stove knob on a disc on its top, turning with it.
    """
    out: list[MarkerSpec] = []
    cells = marker_cells(dictionary)

    def add(e: EntitySpec, side: float, position: Vec3, rpy: Vec3 = (0.0, 0.0, 0.0),
            part: str = "base") -> None:
        out.append(MarkerSpec(id=first_id + len(out), entity=e.id, part=part,  # type: ignore[arg-type]
                              size=side, position=position, rpy=rpy))

    for e in scene.entities:
        sx, sy, sz = e.size
        if e.shape in ("bowl", "basket", "caddy"):
            normal, x_axis = _wall_toward(scene, e, "front")
            width = abs(x_axis[0]) * sx + abs(x_axis[1]) * sy
            side = fitting_side(width, sz, cells, max_size)
            if side >= 0.015:
                add(e, side, (normal[0] * (sx / 2 + PLATE_THICKNESS),
                             normal[1] * (sy / 2 + PLATE_THICKNESS), 0.0),
                    axes_rpy(x_axis, normal))
            # and on the inner floor, for a camera above (the wrist): a caddy's in the
            # compartment nearest the robot (its divider splits it along x)
            wall = container_wall(e.shape)
            inner_x = (sx / 2 - 1.5 * wall) if e.shape == "caddy" else sx - 2 * wall
            # a camera up to ~25 deg off the vertical sees the walls hide a band of the floor
            # as wide as half their height: the plate fits inside what stays in view
            hidden = 0.5 * (sz - wall)
            side = fitting_side(inner_x - hidden, sy - 2 * wall - hidden, cells, max_size)
            if side >= 0.015:
                add(e, side, (-sx / 4 if e.shape == "caddy" else 0.0, 0.0,
                             -sz / 2 + wall + PLATE_THICKNESS))
            continue
        if e.shape == "plate":  # on the floor inside its rim, a square in the circle
            r, floor = plate_well(e)
            side = fitting_side(r * math.sqrt(2), r * math.sqrt(2), cells, max_size)
            if side >= 0.015:
                add(e, side, (0.0, 0.0, round(-sz / 2 + floor + PLATE_THICKNESS, 4)))
            continue
        side = fitting_side(sx, sy, cells, max_size)
        if side < 0.015:
            continue
        x, y = 0.0, 0.0
        if e.shape == "stove":  # the burner covers the middle: the back-right corner
            side = min(side, 0.05)
            x, y = sx / 2 - side, -sy / 2 + side
        add(e, side, (x, y, sz / 2 + PLATE_THICKNESS))
        if e.shape in ARTICULATED:
            for spec in _part_markers(e, cells, max_size):
                add(e, *spec)
    return MarkerMap(dictionary=dictionary, markers=out)


def _part_markers(e: EntitySpec, cells: int, max_size: float
                  ) -> list[tuple[float, Vec3, Vec3, str]]:
    """(size, position, rpy, part) of the markers on an articulated entity's moving part."""
    part = ARTICULATED[e.shape]
    front: Vec3 = axes_rpy((0.0, -1.0, 0.0), (-1.0, 0.0, 0.0))  # on a face looking along -x
    if part == "drawer":
        dx, dy, dz = drawer_half(e)
        # beside the handle (which spans |y| < 0.05 at mid height)
        side = fitting_side(dy - 0.05, 2 * dz, cells, max_size)
        half = plate_half(side, cells)
        tab = fitting_side(2 * dy, 2 * dz, cells, min(max_size, 0.04))
        tab_half = plate_half(tab, cells)
        return [(side, (-dx - PLATE_THICKNESS, -(0.05 + half + 0.003), 0.0), front, part),
                # level with the front's top edge, on the other side of the handle, on a
                # bracket reaching past the cabinet's upper handle: seen from above when shut
                (tab, (-dx - 0.02 - tab_half, 0.05 + tab_half + 0.003, dz + PLATE_THICKNESS),
                 (0.0, 0.0, 0.0), part)]
    if part == "door":
        (cx, cy, cz), (hx, hy, hz) = door_panel(e)
        side = fitting_side(2 * hy, 2 * hz, cells, max_size)
        half = plate_half(side, cells)
        # the flag rides just above the cabinet top (the door's top edge is a little lower),
        # outside the outer face, so that it clears the body when the door is shut
        top = e.size[2] / 2 + 0.0005 + PLATE_THICKNESS
        return [(side, (cx - hx - PLATE_THICKNESS, cy, cz), front, part),
                (side, (cx + hx - half, cy, top), (0.0, 0.0, 0.0), part)]
    side = max_size  # a disc wider than the knob: visual only, the larger the surer its turn
    return [(side, (0.0, 0.0, KNOB_HALF + 0.003 + PLATE_THICKNESS), (0.0, 0.0, 0.0), part)]
