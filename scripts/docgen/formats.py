"""The file formats, read from the pydantic models that load them: a field listed here is a
field the loader accepts, with the type and default it checks."""

from __future__ import annotations

import importlib
import types
import typing
from typing import Any

# (title, what the file is, "module:Model", an example file in the repository)
FORMATS: tuple[tuple[str, str, str, str], ...] = (
    ("Fine-grained oracle (JSON)",
     "An instruction as atomic steps, each with predicate expressions over the world state "
     "(spec §2; judged by `mango oracle check`, the oracle node and `mango replay`).",
     "mango.oracle.model:FineGrainedOracle", "config/oracles/libero10_stove_moka.json"),
    ("World state (one JSON record per line of a trace)",
     "What the oracle judges (spec §3): a trace is one record per line (JSONL); the "
     "`WorldState` message carries the same fields.",
     "mango.oracle.world_state:WorldState", "config/traces/soup_sauce_basket_pass.jsonl"),
    ("Sim scene (YAML)",
     "A tabletop the embedded simulator builds (`config/scenes/*.yaml`, `mango bddl scene`).",
     "mango.sim.scene:SceneSpec", "config/scenes/libero10_stove_moka.yaml"),
)


def _models(root: type) -> list[type]:
    """The model and every model its fields hold, each once, in reading order."""
    out: list[type] = []

    def visit(model: type) -> None:
        if model in out:
            return
        out.append(model)
        for field in model.model_fields.values():
            for inner in _inner_types(field.annotation):
                if hasattr(inner, "model_fields"):
                    visit(inner)

    visit(root)
    return out


def _inner_types(annotation: Any) -> list[Any]:
    args = getattr(annotation, "__args__", None)
    if not args:
        return [annotation]
    return [t for a in args for t in _inner_types(a)]


def _type_name(annotation: Any) -> str:
    """A type as a reader writes it: `list[Action | Step]`, not pydantic's tagged unions."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_name(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    return f"`{field.default!r}`"


def _model_table(model: type) -> list[str]:
    doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    lines = [f"### `{model.__name__}`", "", doc, "", "| field | type | default |",
             "|---|---|---|"]
    for name, field in model.model_fields.items():
        key = field.alias or name
        typ = _type_name(field.annotation).replace("|", "\\|")
        default = _default(field).replace("|", "\\|")
        lines.append(f"| `{key}` | `{typ}` | {default} |")
    return [*lines, ""]


def formats_page() -> str:
    lines = ["# File formats", "",
             "Generated from the models that read each file, when the site is built. "
             "\"spec §N\" elsewhere in these pages refers to the project's format "
             "specification, which these models implement.", ""]
    for title, what, ref, example in FORMATS:
        module, _, name = ref.partition(":")
        model = getattr(importlib.import_module(module), name)
        lines += [f"## {title}", "", what, f"Read by `{module}.{name}`; an example: "
                  f"`{example}`.", ""]
        for m in _models(model):
            lines += _model_table(m)
    return "\n".join(lines)
