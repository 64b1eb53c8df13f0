"""A LIBERO BDDL problem as validated data (the subset LIBERO's `robosuite_parse_problem` reads).

Names are lower case, as LIBERO sees them (it lower-cases the whole file before parsing). A
region is declared inside its `:target` and referred to everywhere else by LIBERO's full name
`<target>_<region>` (`flat_stove_1` + `cook_region` -> `flat_stove_1_cook_region`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NAME_RE = re.compile(r"[a-z_][a-z0-9_]*")

# LIBERO's predicate table (libero/libero/envs/predicates/__init__.py, VALIDATE_PREDICATE_FN_DICT)
# name -> arity (None: any). `incontact` is defined in base_predicates.py but commented out of
# that table; we accept it because this project's library has the same relation.
PREDICATE_ARITY: dict[str, int | None] = {
    "true": None,
    "false": None,
    "in": 2,
    "on": 2,
    "up": 1,
    "open": 1,
    "close": 1,
    "turnon": 1,
    "turnoff": 1,
    "printjointstate": 1,
    "incontact": 2,
}
# The spelling LIBERO's own files use, for the writer (`Turnon`, as in libero_10).
PREDICATE_SPELLING: dict[str, str] = {
    "true": "True",
    "false": "False",
    "in": "In",
    "on": "On",
    "up": "Up",
    "open": "Open",
    "close": "Close",
    "turnon": "Turnon",
    "turnoff": "Turnoff",
    "printjointstate": "PrintJointState",
    "incontact": "InContact",
}
# What `:init` can set: placements and articulation states (bddl_base_domain.py's
# `_add_placement_initializer` acts on these and ignores the rest).
INIT_PREDICATES = ("on", "in", "open", "close", "turnon", "turnoff")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_name(value: str) -> str:
    if not NAME_RE.fullmatch(value):
        raise ValueError(f"'{value}' is not a BDDL name (letters, digits, '_')")
    return value


class Region(_Model):
    """A named area of a target: a table rectangle (`:ranges`) or a site of a fixture/object."""

    name: str
    target: str
    ranges: list[tuple[float, float, float, float]] = Field(default_factory=list)
    yaw_rotation: list[tuple[float, float]] = Field(default_factory=list)
    rgba: tuple[float, float, float, float] | None = None

    _names = field_validator("name", "target")(_check_name)

    @field_validator("ranges")
    @classmethod
    def _ordered(
        cls, v: list[tuple[float, float, float, float]]
    ) -> list[tuple[float, float, float, float]]:
        # LIBERO asserts x_max >= x_min and y_max >= y_min (problems/*_manipulation.py)
        for i, (x0, y0, x1, y1) in enumerate(v):
            if x1 < x0 or y1 < y0:
                raise ValueError(
                    f"range {i + 1} ({x0} {y0} {x1} {y1}) is not (x_min y_min x_max y_max)"
                )
        return v

    @property
    def full_name(self) -> str:
        """LIBERO's id for the region: `<target>_<region>`."""
        return f"{self.target}_{self.name}"

    def centre(self) -> tuple[float, float] | None:
        """The centre of the first range (LIBERO places with `ranges[0]`), in the target's frame."""
        if not self.ranges:
            return None
        x0, y0, x1, y1 = self.ranges[0]
        return ((x0 + x1) / 2, (y0 + y1) / 2)

    @property
    def yaw(self) -> tuple[float, float] | None:
        """The yaw interval LIBERO uses: the last pair given (it overwrites earlier ones)."""
        return self.yaw_rotation[-1] if self.yaw_rotation else None


class Entity(_Model):
    """A fixture or object instance and its LIBERO category (`moka_pot_1 - moka_pot`)."""

    name: str
    category: str

    _names = field_validator("name", "category")(_check_name)


class Atom(_Model):
    """A ground predicate, e.g. `(On moka_pot_1 flat_stove_1_cook_region)`."""

    kind: Literal["atom"] = "atom"
    predicate: str
    args: tuple[str, ...]

    @field_validator("args")
    @classmethod
    def _arg_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for a in v:
            _check_name(a)
        return v

    @model_validator(mode="after")
    def _arity(self) -> Atom:
        if self.predicate not in PREDICATE_ARITY:
            raise ValueError(
                f"unknown predicate '{self.predicate}' "
                f"(LIBERO has {', '.join(PREDICATE_SPELLING.values())})"
            )
        want = PREDICATE_ARITY[self.predicate]
        if want is not None and len(self.args) != want:
            raise ValueError(
                f"'{PREDICATE_SPELLING[self.predicate]}' takes {want} argument(s), "
                f"not {len(self.args)}"
            )
        return self


class Compound(_Model):
    """`(And ...)`, `(Or ...)` or `(Not x)` over atoms and compounds."""

    kind: Literal["and", "or", "not"]
    children: list[Atom | Compound]

    @model_validator(mode="after")
    def _count(self) -> Compound:
        if self.kind == "not" and len(self.children) != 1:
            raise ValueError(f"'Not' takes 1 formula, not {len(self.children)}")
        if self.kind == "or" and not self.children:
            raise ValueError("'Or' needs at least one formula")
        return self

    def atoms(self) -> list[Atom]:
        out: list[Atom] = []
        for c in self.children:
            out.extend([c] if isinstance(c, Atom) else c.atoms())
        return out


Formula = Atom | Compound


def formula_atoms(f: Formula) -> list[Atom]:
    """Every atom of a formula, in order."""
    return [f] if isinstance(f, Atom) else f.atoms()


class Problem(_Model):
    """One BDDL task file."""

    name: str
    domain: str = "robosuite"
    language: str
    requirements: list[str] | None = None
    scene_properties: dict[str, str] = Field(default_factory=dict)
    regions: list[Region] = Field(default_factory=list)
    fixtures: list[Entity] = Field(default_factory=list)
    objects: list[Entity] = Field(default_factory=list)
    obj_of_interest: list[str] = Field(default_factory=list)
    init: list[Atom] = Field(default_factory=list)
    goal: Formula

    @model_validator(mode="after")
    def _references(self) -> Problem:
        names = [e.name for e in (*self.fixtures, *self.objects)]
        seen: set[str] = set()
        for n in names:
            if n in seen:
                raise ValueError(f"'{n}' is declared twice")
            seen.add(n)
        for r in self.regions:
            if r.full_name in seen:
                raise ValueError(f"region '{r.full_name}' is also declared as an entity")
            seen.add(r.full_name)
        names = self.entity_names()
        for where, atoms in (("init", self.init), ("goal", self.goal_atoms())):
            for a in atoms:
                for arg in a.args:
                    if arg not in names:
                        raise ValueError(f"{where}: '{arg}' is not a declared name")
        return self

    def entity_names(self) -> set[str]:
        """Every id an atom may name: fixtures, objects and the full names of regions whose
        target is declared."""
        declared = {e.name for e in (*self.fixtures, *self.objects)}
        return declared | {r.full_name for r in self.regions if r.target in declared}

    def dangling_regions(self) -> list[Region]:
        """Regions of a target nobody declared: LIBERO keeps the name but builds nothing."""
        declared = {e.name for e in (*self.fixtures, *self.objects)}
        return [r for r in self.regions if r.target not in declared]

    def region(self, full_name: str) -> Region | None:
        return next((r for r in self.regions if r.full_name == full_name), None)

    def category_of(self, name: str) -> str | None:
        return next((e.category for e in (*self.fixtures, *self.objects) if e.name == name), None)

    def goal_atoms(self) -> list[Atom]:
        return formula_atoms(self.goal)
