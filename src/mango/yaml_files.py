"""Reading the project's YAML files (stacks, scenes, robots, calibrations) with errors that
name the file, line, column and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from mango.errors import InputError, from_validation_error, read_user_text

M = TypeVar("M", bound=BaseModel)


def read_yaml_mapping(path: str | Path, what: str, hint: str = "") -> dict[str, Any]:
    """The file's top-level mapping; `what` names the kind of file in messages."""
    p = Path(path)
    try:
        text = read_user_text(p, what)
    except InputError as exc:
        raise InputError(exc.message + hint, file=exc.file, line=exc.line) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(p),
                         line=mark.line + 1 if mark else None,
                         column=mark.column + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise InputError(f"a {what} file must be a YAML mapping", file=str(p))
    return data


def load_yaml_model(path: str | Path, model: type[M], what: str, hint: str = "") -> M:
    """Read and validate a YAML file into `model`."""
    data = read_yaml_mapping(path, what, hint)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, file=str(path)) from None
