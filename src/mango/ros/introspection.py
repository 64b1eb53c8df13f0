"""Message classes by type name, without rosidl_runtime_py (not shipped as a wheel)."""

from __future__ import annotations

import importlib

from mango.errors import InputError


def message_class(msgtype: str) -> type:
    """`pkg/msg/Name` (or `pkg/Name`) -> the generated Python class."""
    parts = msgtype.split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3:
        raise InputError(f"bad message type name {msgtype!r} (want pkg/msg/Name)")
    pkg, kind, name = parts
    try:
        if kind == "action":  # an action's topic types: `Name_FeedbackMessage` and the like
            action, _, part = name.rpartition("_")
            return getattr(getattr(importlib.import_module(f"{pkg}.action"), action).Impl, part)
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ImportError, AttributeError):
        raise InputError(f"message type {msgtype!r} is not installed") from None
