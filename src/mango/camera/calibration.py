"""Camera calibration files (the ROS `camera_calibration_parsers` YAML layout) -> intrinsics.

The same file a `cameracalibrator` run writes: `image_width`, `image_height`, `camera_name`,
`camera_matrix`, `distortion_model`, `distortion_coefficients`, `rectification_matrix`,
`projection_matrix` (each matrix as `{rows, cols, data}`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mango.imaging import letterbox
from mango.yaml_files import load_yaml_model


class Matrix(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    rows: Annotated[int, Field(ge=1)]
    cols: Annotated[int, Field(ge=1)]
    data: list[Annotated[float, Field(allow_inf_nan=False)]]

    @model_validator(mode="after")
    def _size(self) -> Matrix:
        if len(self.data) != self.rows * self.cols:
            raise ValueError(f"data has {len(self.data)} values, rows x cols is "
                             f"{self.rows * self.cols}")
        return self


class CameraCalibration(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    image_width: Annotated[int, Field(ge=1)]
    image_height: Annotated[int, Field(ge=1)]
    camera_name: str = "camera"
    camera_matrix: Matrix
    distortion_model: str = "plumb_bob"
    distortion_coefficients: Matrix = Matrix(rows=1, cols=5, data=[0.0] * 5)
    rectification_matrix: Matrix = Matrix(rows=3, cols=3, data=[1, 0, 0, 0, 1, 0, 0, 0, 1])
    projection_matrix: Matrix | None = None

    @model_validator(mode="after")
    def _shapes(self) -> CameraCalibration:
        if (self.camera_matrix.rows, self.camera_matrix.cols) != (3, 3):
            raise ValueError("camera_matrix must be 3 x 3")
        if (self.rectification_matrix.rows, self.rectification_matrix.cols) != (3, 3):
            raise ValueError("rectification_matrix must be 3 x 3")
        p = self.projection_matrix
        if p is not None and (p.rows, p.cols) != (3, 4):
            raise ValueError("projection_matrix must be 3 x 4")
        return self

    @property
    def k(self) -> list[float]:
        return list(self.camera_matrix.data)

    @property
    def d(self) -> list[float]:
        return list(self.distortion_coefficients.data)

    @property
    def r(self) -> list[float]:
        return list(self.rectification_matrix.data)

    @property
    def p(self) -> list[float]:
        """The projection matrix, or K with a zero column when the file has none."""
        if self.projection_matrix is not None:
            return list(self.projection_matrix.data)
        k = self.k
        return [k[0], k[1], k[2], 0.0, k[3], k[4], k[5], 0.0, k[6], k[7], k[8], 0.0]

    def letterboxed(self, width: int, height: int) -> CameraCalibration:
        """The calibration of frames fitted into width x height by `resize_with_pad` (scale
        kept, padding around): K and P follow `mango.imaging.Letterbox`; D and R do not
        change (they act on normalised coordinates). Same aspect: a plain rescale."""
        box = letterbox(self.image_height, self.image_width, height, width)
        return self.model_copy(update={
            "image_width": width, "image_height": height,
            "camera_matrix": Matrix(rows=3, cols=3, data=box.camera_matrix(self.k)),
            "projection_matrix": Matrix(rows=3, cols=4, data=box.camera_matrix(self.p))})

    def same_aspect(self, width: int, height: int) -> bool:
        """Frames of width x height can be this camera binned or scaled (aspect within a
        pixel); another aspect means another sensor mode, which this calibration is not for."""
        return abs(width * self.image_height / self.image_width - height) <= 1.0


def load_calibration(path: str | Path) -> CameraCalibration:
    """Read a calibration YAML; errors name the file, line or field."""
    return load_yaml_model(path, CameraCalibration, "calibration")
