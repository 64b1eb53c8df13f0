"""Turning a model's text answer into a validated pydantic object.

Small models and servers without schema enforcement wrap JSON in code fences, add prose,
or nest the answer under the schema's name. These helpers recover the intended object
where that is unambiguous and otherwise describe precisely what is wrong, so that the
re-ask prompt can tell the model which field to fix.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from mango.errors import field_path

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ParseResult(Generic[T]):
    """Either a validated `value` or an `error` sentence saying what is wrong."""

    value: T | None
    error: str | None


def json_candidates(text: str) -> list[Any]:
    """Every JSON value a model's answer plausibly meant, most literal first.

    Order: the whole text, the contents of each code fence, then each JSON object or array
    that starts at a `{`/`[` in the text (decoded with the real JSON decoder, so braces
    inside strings are handled).
    """
    found: list[Any] = []
    seen: set[str] = set()

    def add(value: Any) -> None:
        key = json.dumps(value, sort_keys=True)
        if key not in seen:
            seen.add(key)
            found.append(value)

    stripped = text.strip()
    with contextlib.suppress(ValueError):
        add(json.loads(stripped))
    for block in _FENCE.findall(text):
        with contextlib.suppress(ValueError):
            add(json.loads(block.strip()))
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            pos = start + 1
            continue
        add(value)
        pos = end
    return found


def describe_validation_error(exc: ValidationError, limit: int = 5) -> str:
    """`field 'steps[0].id': Field required; ...` — short enough to send back to a model."""
    parts = []
    for err in exc.errors()[:limit]:
        path = field_path(tuple(err["loc"]))
        parts.append(f"field '{path}': {err['msg']}" if path else err["msg"])
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more problem{'s' if more > 1 else ''}")
    return "; ".join(parts)


def parse_answer(text: str | None, schema: type[T]) -> ParseResult[T]:
    """Validate a model's answer against `schema`, repairing only unambiguous wrapping.

    Repairs: code fences, prose around the JSON, and a single-key wrapper object whose key
    is the schema's name or a generic word ("answer", "result", "properties", ...).
    """
    if text is None or not text.strip():
        return ParseResult(None, "the answer was empty")
    candidates = json_candidates(text)
    if not candidates:
        snippet = text.strip().replace("\n", " ")[:120]
        return ParseResult(None, f"the answer contains no JSON object (it began: {snippet!r})")
    first_error: str | None = None
    for candidate in candidates:
        for value in _unwrapped(candidate, schema):
            try:
                return ParseResult(schema.model_validate(value), None)
            except ValidationError as exc:
                if first_error is None:
                    first_error = describe_validation_error(exc)
    return ParseResult(None, f"the JSON does not match the schema: {first_error}")


_WRAPPER_KEYS = {"answer", "result", "response", "output", "data", "properties", "json"}


def _unwrapped(value: Any, schema: type[BaseModel]) -> list[Any]:
    out = [value]
    if isinstance(value, dict) and len(value) == 1:
        (key, inner), = value.items()
        fields = set(schema.model_fields)
        if isinstance(inner, dict) and key not in fields and (
            key.lower() in _WRAPPER_KEYS or key.lower() == schema.__name__.lower()
        ):
            out.append(inner)
    return out


def schema_instruction(schema: type[BaseModel]) -> str:
    """The system note that asks for JSON when the server cannot enforce the schema."""
    return (
        "Reply with exactly one JSON object and nothing else (no prose, no code fences). "
        "It must validate against this JSON Schema:\n"
        + json.dumps(schema.model_json_schema(), separators=(",", ":"))
    )


def repair_prompt(error: str, truncated: bool = False) -> str:
    """The follow-up user message after an invalid answer."""
    if truncated:
        return (
            f"An earlier answer to this request was cut off because it was too long ({error}). "
            "Answer again with a short JSON object: brief strings, no repetition."
        )
    return (
        f"Your previous answer was not valid: {error}. "
        "Reply again with only the corrected JSON object that matches the schema."
    )
