"""Recovering JSON from model text, and describing what is wrong with it."""

from __future__ import annotations

from pydantic import BaseModel

from mango.llm.structured import json_candidates, parse_answer


class Item(BaseModel):
    id: str
    count: int


def test_plain_fenced_and_embedded_json_are_found():
    assert parse_answer('{"id": "a", "count": 1}', Item).value == Item(id="a", count=1)
    fenced = 'Here:\n```json\n{"id": "b", "count": 2}\n```'
    assert parse_answer(fenced, Item).value == Item(id="b", count=2)
    prose = 'I chose {"id": "c}", "count": 3} because {braces} in strings are fine.'
    assert parse_answer(prose, Item).value == Item(id="c}", count=3)


def test_later_object_is_used_when_the_first_does_not_validate():
    text = 'Example: {"id": "x"}. Answer: {"id": "y", "count": 4}'
    assert parse_answer(text, Item).value == Item(id="y", count=4)


def test_generic_wrapper_is_unwrapped_but_field_named_wrapper_is_not():
    assert parse_answer('{"answer": {"id": "a", "count": 1}}', Item).value is not None

    class Box(BaseModel):
        result: dict

    assert parse_answer('{"result": {"k": 1}}', Box).value == Box(result={"k": 1})


def test_errors_say_what_is_wrong():
    assert parse_answer("", Item).error == "the answer was empty"
    assert "no JSON object" in parse_answer("no idea", Item).error
    err = parse_answer('{"id": "a", "count": "many"}', Item).error
    assert "field 'count'" in err and "integer" in err


def test_candidates_are_deduplicated_and_ordered():
    text = '```\n[1, 2]\n```\n[1, 2] {"a": 1}'
    assert json_candidates(text) == [[1, 2], {"a": 1}]
