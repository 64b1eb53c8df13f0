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
from mango.sim.scene import ARTICULATED, SceneSpec
from mango.yaml_files import read_yaml_mapping

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
    position: Vec3 = (0.0, 0.0, 0.0)  # marker centre in the entity (part) frame, metres
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


def auto_marker_map(scene: SceneSpec, dictionary: DictionaryName = "4x4_50",
                    max_size: float = 0.05, first_id: int = 0) -> MarkerMap:
    """One marker on the top face of every entity whose top is solid (not an open
    container), as large as fits (at most `max_size`), ids in entity order: what a lab
    would stick on; used when a scene has no hand-made map."""
    out: list[MarkerSpec] = []
    k = first_id
    cells = marker_cells(dictionary)
    for e in scene.entities:
        if e.shape in ("bowl", "basket", "caddy"):
            continue
        sx, sy, sz = e.size
        # the plate carries a one-cell quiet zone: it must fit the top face
        side = min(max_size, 0.9 * min(sx, sy) * cells / (cells + 2))
        if side < 0.015:
            continue
        x, y = 0.0, 0.0
        if e.shape == "stove":  # the burner covers the middle: the back-right corner
            side = min(side, 0.05)
            x, y = sx / 2 - side, -sy / 2 + side
        out.append(MarkerSpec(id=k, entity=e.id, size=round(side, 4),
                              position=(x, y, sz / 2)))
        k += 1
    return MarkerMap(dictionary=dictionary, markers=out)
