"""Seeded fuzzing: malformed oracles, traces, expressions and libraries give clean errors only.

"Clean" means the public entry points either succeed or raise `InputError` (the CLI turns that
into one `error:` line and exit 2); any other exception is a bug.
"""

from __future__ import annotations

import copy
import json
import math
import random
import string
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from mango.cli.main import app
from mango.errors import InputError
from mango.oracle import (
    FunctionLibrary,
    StepTracker,
    check_trace,
    load_oracle,
    parse_expression,
    static_check,
)
from mango.oracle.world_state import iter_trace_lines

ROOT = Path(__file__).resolve().parents[2]
ORACLE = json.loads((ROOT / "config/oracles/libero10_bowl_drawer.json").read_text())
TRACE_LINES = (ROOT / "test/data/oracle/libero/bowl_drawer_pass.jsonl").read_text().splitlines()
TOKENS = [
    "up",
    "in",
    "on",
    "grasped",
    "near",
    "open",
    "(",
    ")",
    ",",
    "and",
    "or",
    "not",
    "&&",
    "||",
    "!",
    "true",
    "false",
    "a",
    "b",
    "robot_hand",
    " ",
    "\n",
    "&",
    "|",
    "AND",
    "Not",
    "1",
    "$",
    "((",
    "))",
    "in(a, b)",
    "up(x)",
]
JUNK: list[Any] = [
    None,
    0,
    -1,
    1.5,
    math.nan,
    math.inf,
    "",
    "x",
    [],
    {},
    [1, 2],
    {"a": 1},
    True,
    "up(",
    10**20,
    [None],
    {"q": None},
]


def random_expression(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 30)))
    return " ".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 12)))


def mutate(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """Damage one random place of a JSON-like value."""
    if isinstance(value, dict) and value and depth < 8:
        key = rng.choice(list(value))
        roll = rng.random()
        if roll < 0.15:
            del value[key]
        elif roll < 0.3:
            value[key] = rng.choice(JUNK)
        elif roll < 0.4 and key == "handle_as":
            value[key] = random_expression(rng)
        else:
            value[key] = mutate(value[key], rng, depth + 1)
        return value
    if isinstance(value, list) and value and depth < 8:
        i = rng.randrange(len(value))
        roll = rng.random()
        if roll < 0.15:
            del value[i]
        elif roll < 0.3:
            value[i] = rng.choice(JUNK)
        elif roll < 0.4:
            value.append(copy.deepcopy(value[i]))
        else:
            value[i] = mutate(value[i], rng, depth + 1)
        return value
    if isinstance(value, str) and rng.random() < 0.5:
        return random_expression(rng)
    return rng.choice(JUNK)


def dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


def fuzz_case(rng: random.Random) -> None:
    kind = rng.randrange(5)
    if kind == 0:
        parse_expression(random_expression(rng))
    elif kind == 1:
        data = mutate(copy.deepcopy(ORACLE), rng)
        if rng.random() < 0.3:
            text = dumps(data)
            cut = rng.randrange(len(text) + 1)
            load_oracle(text[:cut] + rng.choice(["", "}", ",", "\x00"]) + text[cut:])
            return
        oracle = load_oracle(data)
        static_check(oracle, None, {"akita_black_bowl_1": "object"})
        check_trace(oracle, iter_trace_lines(TRACE_LINES[:5]))
    elif kind == 2:
        lines = list(TRACE_LINES[: rng.randint(0, 6)])
        if lines:
            i = rng.randrange(len(lines))
            if rng.random() < 0.2:
                lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
            else:
                lines[i] = dumps(mutate(json.loads(lines[i]), rng))
        check_trace(ORACLE, iter_trace_lines(lines))
    elif kind == 3:
        lib = mutate(FunctionLibrary.default().to_json(), rng)
        library = FunctionLibrary.from_json(lib)
        StepTracker(ORACLE, library)
    else:
        tracker = StepTracker(
            {"plan": [{"action_id": "x", "monitoring": [{"handle_as": random_expression(rng)}]}]}
        )
        tracker.update(next(iter_trace_lines(TRACE_LINES[:1])))


def test_thousand_malformed_inputs_give_only_clean_errors() -> None:
    rng = random.Random(20261130)
    clean = errors = 0
    for case in range(1000):
        state = rng.getstate()
        try:
            fuzz_case(rng)
            clean += 1
        except InputError as exc:
            assert str(exc), f"case {case}: empty message"
            errors += 1
        except Exception as exc:  # pragma: no cover - the failure message is the point
            rng.setstate(state)
            raise AssertionError(f"case {case} raised {type(exc).__name__}: {exc}") from exc
    # both outcomes occur, so the fuzzer is neither trivially valid nor trivially broken
    assert errors > 300 and clean > 50


def test_cli_fuzz_exits_cleanly(tmp_path: Path) -> None:
    rng = random.Random(7)
    runner = CliRunner()
    o, t = tmp_path / "o.json", tmp_path / "t.jsonl"
    for _ in range(40):
        o.write_text(dumps(mutate(copy.deepcopy(ORACLE), rng)))
        lines = [
            dumps(mutate(json.loads(line), rng)) if rng.random() < 0.2 else line
            for line in TRACE_LINES[:4]
        ]
        t.write_text("\n".join(lines))
        for args in (["check", str(o), str(t), "--json"], ["lint", str(o), "--scene", str(t)]):
            result = runner.invoke(app, ["oracle", *args])
            assert result.exit_code in (0, 1, 2), result.output
            assert result.exception is None or isinstance(result.exception, SystemExit), repr(
                result.exception
            )
            if result.exit_code == 2:
                assert result.stderr.startswith("error: ")
