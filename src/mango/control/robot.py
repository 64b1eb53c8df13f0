"""Robot descriptions (`config/robots/*.yaml`): joint names, limits, home and workspace, as data.

Every goal the control node accepts is checked against one of these before the arm moves, so
the limits live in one reviewed file per robot (the FR3 datasheet's, for sim and robot alike).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mango.yaml_files import load_yaml_model

REPO_ROOT = Path(__file__).resolve().parents[3]
ROBOTS_DIR = REPO_ROOT / "config" / "robots"
Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = tuple[Finite, Finite, Finite]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class WorkspaceBox(BaseModel):
    """Axis-aligned box (base frame, metres) the hand must stay inside."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    min: Vec3
    max: Vec3

    @model_validator(mode="after")
    def _ordered(self) -> WorkspaceBox:
        if any(lo >= hi for lo, hi in zip(self.min, self.max, strict=True)):
            raise ValueError("workspace min must be below max on every axis")
        return self

    @property
    def diagonal(self) -> float:
        """The box's diagonal (m): no straight move inside it is longer."""
        return float(np.linalg.norm(np.asarray(self.max) - np.asarray(self.min)))

    def contains(self, p: np.ndarray, margin: float = 0.0) -> bool:
        lo, hi = np.asarray(self.min) - margin, np.asarray(self.max) + margin
        return bool(np.all(p >= lo) and np.all(p <= hi))


class RobotConfig(BaseModel):
    """One arm: 7 joints with position/velocity (and, where known, acceleration and jerk)
    limits, a gripper, home pose, workspace."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    joint_names: tuple[str, ...]
    position_lower: tuple[Finite, ...]
    position_upper: tuple[Finite, ...]
    velocity_limits: tuple[Positive, ...]
    # rad/s^2 and rad/s^3; optional: a backend that plays goals as smooth splines (the joint
    # trajectory controller) retimes them to stay within these
    acceleration_limits: tuple[Positive, ...] | None = None
    jerk_limits: tuple[Positive, ...] | None = None
    gripper_max_width: Annotated[float, Field(gt=0)] = 0.08
    home: tuple[Finite, ...]
    kinematics: Literal["sim", "fr3_dh"] = "sim"
    workspace: WorkspaceBox

    @model_validator(mode="after")
    def _consistent(self) -> RobotConfig:
        n = len(self.joint_names)
        if n != 7 or len(set(self.joint_names)) != 7:
            raise ValueError("joint_names must list 7 distinct names")
        for f in ("position_lower", "position_upper", "velocity_limits", "home",
                  "acceleration_limits", "jerk_limits"):
            if getattr(self, f) is not None and len(getattr(self, f)) != n:
                raise ValueError(f"{f} must have {n} values, one per joint")
        for i, (lo, hi, h) in enumerate(zip(self.position_lower, self.position_upper, self.home,
                                            strict=True)):
            if not lo < hi:
                raise ValueError(f"joint {self.joint_names[i]}: lower limit must be below upper")
            if not lo <= h <= hi:
                raise ValueError(f"home of {self.joint_names[i]} lies outside its limits")
        return self

    @property
    def lower(self) -> np.ndarray:
        return np.asarray(self.position_lower, float)

    @property
    def upper(self) -> np.ndarray:
        return np.asarray(self.position_upper, float)

    @property
    def vmax(self) -> np.ndarray:
        return np.asarray(self.velocity_limits, float)

    @property
    def amax(self) -> np.ndarray | None:
        a = self.acceleration_limits
        return None if a is None else np.asarray(a, float)

    @property
    def jmax(self) -> np.ndarray | None:
        j = self.jerk_limits
        return None if j is None else np.asarray(j, float)


def robot_path(name_or_path: str | Path) -> Path:
    """A robot file by path, or by name in `config/robots/`."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return ROBOTS_DIR / f"{name_or_path}.yaml"


def load_robot(name_or_path: str | Path) -> RobotConfig:
    """Read and validate a robot file; errors name the file and field."""
    path = robot_path(name_or_path)
    known = ", ".join(sorted(p.stem for p in ROBOTS_DIR.glob("*.yaml")))
    return load_yaml_model(path, RobotConfig, "robot file", hint=f" (known robots: {known})")
