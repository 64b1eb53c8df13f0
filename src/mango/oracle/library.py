"""Function library (spec §4): the predicates a scene offers, their argument kinds and thresholds.

A library file lists predicates by name. Names with a built-in implementation (see
`mango.oracle.predicates`, and `mango.oracle.libero_predicates` for the optional `libero_*`
ones) are computed from geometry; any other declared predicate is still
valid in expressions but can only be decided by `facts` in the world states.

Argument kinds come from an optional `"argument_kinds"` list per predicate (our extension);
without it they are read off the argument names (`target_object` -> object,
`container_object` -> region/object/fixture, ...) and an argument whose name says nothing is
left unchecked rather than guessed into errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mango.errors import InputError
from mango.json_files import read_json
from mango.oracle.expr import NAME_RE
from mango.oracle.libero_predicates import LIBERO_IMPLEMENTATIONS
from mango.oracle.predicates import BUILTINS, Implementation, Thresholds
from mango.oracle.world_state import ENTITY_KINDS

_TYPES = {1: "UnaryAtomic", 2: "BinaryAtomic", 3: "TernaryAtomic"}

# Keyword in an argument name -> kinds it accepts; first match wins.
_NAME_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("container", ("region", "object", "fixture")),
    ("region", ("region",)),
    ("surface", ("surface", "region", "object", "fixture", "device")),
    ("joint", ("joint", "fixture", "region")),
    ("device", ("device", "fixture")),
    ("fixture", ("fixture", "joint", "device")),
    ("robot", ("robot",)),
    ("object", ("object",)),
)


def kinds_from_argument_name(name: str) -> tuple[str, ...] | None:
    """Kinds an argument accepts judging by its name, or None (unchecked)."""
    low = name.lower()
    for word, kinds in _NAME_KINDS:
        if word in low:
            return kinds
    return None


@dataclass(frozen=True)
class PredicateSpec:
    """One predicate: name, argument names and kinds, description, optional implementation."""

    name: str
    input_arguments: tuple[str, ...]
    argument_kinds: tuple[tuple[str, ...] | None, ...]
    description: str = ""
    type: str = ""
    implementation: Implementation | None = field(default=None, compare=False, repr=False)

    @property
    def arity(self) -> int:
        return len(self.input_arguments)

    def to_json(self) -> dict[str, Any]:
        return {
            "predicate": self.name,
            "description": self.description,
            "input_arguments": list(self.input_arguments),
            "type": self.type or _TYPES.get(self.arity, f"{self.arity}-aryAtomic"),
            "argument_kinds": [None if k is None else list(k) for k in self.argument_kinds],
        }


class FunctionLibrary:
    """The predicates a scene offers, with the thresholds of the built-in implementations."""

    def __init__(
        self, predicates: dict[str, PredicateSpec], thresholds: Thresholds | None = None
    ) -> None:
        self.predicates = dict(predicates)
        self.thresholds = thresholds or Thresholds()

    def __contains__(self, name: object) -> bool:
        return name in self.predicates

    def get(self, name: str) -> PredicateSpec | None:
        return self.predicates.get(name)

    def unknown(self, name: str) -> str:
        """Why `name` is not a predicate here, and where it is when an optional library has
        it (an oracle in LIBERO's semantics checked with the default library)."""
        known = ", ".join(sorted(self.predicates))
        text = f"unknown predicate '{name}' (known: {known})"
        if name in LIBERO_IMPLEMENTATIONS:
            text += ("; LIBERO's predicates are in the optional `libero` library: pass "
                     "--functions config/functions/libero.json")
        return text

    @classmethod
    def default(cls, thresholds: Thresholds | None = None) -> FunctionLibrary:
        """Every built-in predicate with its geometric implementation."""
        preds = {
            name: PredicateSpec(
                name=name,
                input_arguments=args,
                argument_kinds=kinds,
                description=desc,
                type=_TYPES[len(args)],
                implementation=impl,
            )
            for name, (impl, args, kinds, desc) in BUILTINS.items()
        }
        return cls(preds, thresholds)

    def with_thresholds(self, thresholds: Thresholds) -> FunctionLibrary:
        return FunctionLibrary(self.predicates, thresholds)

    def to_json(self) -> dict[str, Any]:
        """The spec §4 form, plus our `argument_kinds` and `thresholds` (readers ignore them)."""
        return {
            "predicates": {name: spec.to_json() for name, spec in self.predicates.items()},
            "thresholds": self.thresholds.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any, file: str | None = None) -> FunctionLibrary:
        """Validate a spec §4 function library; errors name the file and field."""
        if not isinstance(data, dict):
            raise InputError("a function library must be a JSON object", file=file)
        preds_in = data.get("predicates")
        if not isinstance(preds_in, dict):
            raise InputError(
                "missing or not an object (expected {name: {...}})", file=file, field="predicates"
            )
        preds: dict[str, PredicateSpec] = {}
        for key, entry in preds_in.items():
            preds[key] = _predicate_from_json(key, entry, file)
        thresholds = (
            Thresholds.from_json(data["thresholds"], file=file)
            if data.get("thresholds") is not None
            else Thresholds()
        )
        return cls(preds, thresholds)

    @classmethod
    def load(cls, path: str | Path) -> FunctionLibrary:
        """Read a function library JSON file."""
        p = Path(path)
        data = read_json(p, "function library")
        return cls.from_json(data, file=str(p))

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def _predicate_from_json(key: Any, entry: Any, file: str | None) -> PredicateSpec:
    where = f"predicates.{key}"
    if not isinstance(key, str) or not NAME_RE.fullmatch(key):
        raise InputError("a predicate name must be an identifier", file=file, field=where)
    if not isinstance(entry, dict):
        raise InputError("must be an object", file=file, field=where)
    name = entry.get("predicate", key)
    if name != key:
        raise InputError(
            f"'predicate' is {name!r} but the entry is keyed {key!r}",
            file=file,
            field=f"{where}.predicate",
        )
    args = entry.get("input_arguments")
    if not isinstance(args, list) or not all(isinstance(a, str) and a for a in args):
        raise InputError(
            "must be a list of argument names", file=file, field=f"{where}.input_arguments"
        )
    desc = entry.get("description", "")
    if not isinstance(desc, str):
        raise InputError("must be a string", file=file, field=f"{where}.description")
    ptype = entry.get("type", "")
    if not isinstance(ptype, str):
        raise InputError("must be a string", file=file, field=f"{where}.type")
    impl = None
    # Optional implementations (LIBERO's semantics) are attached only where a library names
    # them, so the default library stays the project's own.
    builtin = BUILTINS.get(key) or LIBERO_IMPLEMENTATIONS.get(key)
    if builtin is not None:
        impl = builtin[0]
        if len(args) != len(builtin[1]):
            raise InputError(
                f"the built-in '{key}' takes {len(builtin[1])} argument(s), not {len(args)}",
                file=file,
                field=f"{where}.input_arguments",
            )
    kinds_in = entry.get("argument_kinds")
    kinds: list[tuple[str, ...] | None]
    if kinds_in is None:
        kinds = [kinds_from_argument_name(a) for a in args]
        if builtin is not None:
            kinds = list(builtin[2])
    else:
        kfield = f"{where}.argument_kinds"
        if not isinstance(kinds_in, list) or len(kinds_in) != len(args):
            raise InputError(
                f"must be a list with one entry per argument ({len(args)})", file=file, field=kfield
            )
        kinds = []
        for i, k in enumerate(kinds_in):
            if k is None:
                kinds.append(None)
                continue
            ks = [k] if isinstance(k, str) else k
            if not isinstance(ks, list) or not ks or not all(x in ENTITY_KINDS for x in ks):
                raise InputError(
                    f"must be null, a kind or a list of kinds from {', '.join(ENTITY_KINDS)}",
                    file=file,
                    field=f"{kfield}[{i}]",
                )
            kinds.append(tuple(ks))
    return PredicateSpec(
        name=key,
        input_arguments=tuple(args),
        argument_kinds=tuple(kinds),
        description=desc,
        type=ptype,
        implementation=impl,
    )
