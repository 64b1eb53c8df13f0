"""Every interface file of the package is built, with the fields it declares."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_FIELD = re.compile(r"^\s*([A-Za-z0-9_/]+(?:\[[0-9<=]*\])?)\s+([a-z][a-z0-9_]*)\s*(?:#.*)?$")


def _declared_fields(text: str) -> list[str]:
    """Field names of one section of an interface file (constants and comments skipped)."""
    names = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or "=" in line:
            continue
        m = _FIELD.match(line)
        assert m, f"cannot read interface line: {line!r}"
        names.append(m.group(2))
    return names


def _files(kind: str) -> list[Path]:
    return sorted((REPO / kind).glob(f"*.{kind}"))


@pytest.mark.parametrize("path", _files("msg"), ids=lambda p: p.stem)
def test_message_built_with_declared_fields(path: Path) -> None:
    cls = getattr(importlib.import_module("mango_ros.msg"), path.stem)
    assert list(cls.get_fields_and_field_types()) == _declared_fields(path.read_text())


@pytest.mark.parametrize("path", _files("srv"), ids=lambda p: p.stem)
def test_service_built_with_declared_fields(path: Path) -> None:
    cls = getattr(importlib.import_module("mango_ros.srv"), path.stem)
    request, response = path.read_text().split("\n---\n")
    assert list(cls.Request.get_fields_and_field_types()) == _declared_fields(request)
    assert list(cls.Response.get_fields_and_field_types()) == _declared_fields(response)


@pytest.mark.parametrize("path", _files("action"), ids=lambda p: p.stem)
def test_action_built_with_declared_fields(path: Path) -> None:
    cls = getattr(importlib.import_module("mango_ros.action"), path.stem)
    goal, result, feedback = path.read_text().split("\n---\n")
    assert list(cls.Goal.get_fields_and_field_types()) == _declared_fields(goal)
    assert list(cls.Result.get_fields_and_field_types()) == _declared_fields(result)
    assert list(cls.Feedback.get_fields_and_field_types()) == _declared_fields(feedback)


def test_unknown_interface_is_an_error() -> None:
    msgs = importlib.import_module("mango_ros.msg")
    with pytest.raises(AttributeError):
        getattr(msgs, "NoSuchMessage")  # noqa: B009 - the point is a dynamic lookup

