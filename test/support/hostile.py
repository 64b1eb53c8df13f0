"""Hostile inputs shared by the tests that feed them to every entry point (built as text:
Python's own json module cannot write what is nested deep enough to matter)."""

from __future__ import annotations

import random

_ACTION = '{"action_id": "lift", "monitoring": [{"oracle_id": "lift", "handle_as": "up(a)"}]}'


def nested_oracle(depth: int) -> str:
    """A well-formed oracle (JSON text) whose one action sits `depth` nested steps down."""
    node = f'{{"step": 1, "execution_mode": "sequential", "actions": [{_ACTION}]}}'
    head = '{"step": 1, "execution_mode": "sequential", "steps": ['
    node = head * depth + node + "]}" * depth
    return f'{{"instruction": "deep", "execution_mode": "sequential", "plan": [{node}]}}'


def nested_json(depth: int, rng: random.Random) -> str:
    """An object holding `depth` - 1 levels of randomly mixed arrays and objects."""
    opens, closes = [], []
    for _ in range(depth - 1):
        if rng.random() < 0.5:
            opens.append("[")
            closes.append("]")
        else:
            opens.append('{"k": ')
            closes.append("}")
    return '{"goal": ' + "".join(opens) + "1" + "".join(reversed(closes)) + "}"
