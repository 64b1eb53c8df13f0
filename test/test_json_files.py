"""Every JSON input is read by one parser: invalid JSON, a key given twice and nesting past
`MAX_DEPTH` are clean errors naming file and line — never a traceback, never a silent answer
— at every entry point (oracle, --functions, --scene, --tasks, trace lines)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.hostile import nested_json, nested_oracle
from typer.testing import CliRunner

from mango.cli.main import app
from mango.errors import InputError
from mango.json_files import MAX_DEPTH, parse_json

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "config/oracles/libero10_soup_sauce_basket.json"
TRACE = ROOT / "test/data/oracle/libero/soup_sauce_basket_pass.jsonl"
runner = CliRunner()


def mango(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr


def test_a_key_given_twice_is_refused_with_its_line() -> None:
    text = '{\n "a": 1,\n "b": {"c": 2},\n "a": 3\n}'
    with pytest.raises(InputError) as exc:
        parse_json(text, "x.json")
    assert str(exc.value) == "x.json:4: key 'a' appears twice in one object"
    # the same key in two different objects is fine
    assert parse_json('{"a": {"k": 1}, "b": {"k": 2}}') == {"a": {"k": 1}, "b": {"k": 2}}


def test_positions_in_a_json_lines_record_are_the_files() -> None:
    with pytest.raises(InputError) as exc:
        parse_json('{"t": 0.1,, }', "trace.jsonl", line=7)
    assert str(exc.value).startswith("trace.jsonl:7:11: invalid JSON")


def test_depth_fuzz_never_raises_anything_but_input_error() -> None:
    rng = random.Random(20261201)
    outcomes = {"parsed": 0, "refused": 0}
    for _ in range(300):
        depth = rng.choice([rng.randint(1, MAX_DEPTH), rng.randint(MAX_DEPTH + 1, 5000)])
        try:
            parse_json(nested_json(depth, rng))
            outcomes["parsed"] += 1
            assert depth <= MAX_DEPTH
        except InputError as exc:
            outcomes["refused"] += 1
            assert depth > MAX_DEPTH and f"deeper than {MAX_DEPTH} levels" in exc.message
    assert min(outcomes.values()) > 100  # both sides of the limit were tried


def _deep_trace(tmp_path: Path, depth: int) -> Path:
    lines = TRACE.read_text().splitlines()
    lines[1] = lines[1].rstrip()[:-1] + f', "extra": {nested_json(depth, random.Random(depth))}}}'
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("depth", [120, 1500, 50_000])
def test_every_entry_point_refuses_deep_json_with_exit_2(tmp_path: Path, depth: int) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(nested_json(depth, random.Random(depth)))
    oracle = tmp_path / "oracle.json"
    oracle.write_text(nested_oracle(depth // 2))  # a nested step is two levels
    cases = [
        ("oracle", "check", oracle, TRACE),
        ("oracle", "lint", oracle),
        ("oracle", "check", ORACLE, TRACE, "--functions", deep),
        ("oracle", "lint", ORACLE, "--scene", deep),
        ("oracle", "check", ORACLE, _deep_trace(tmp_path, depth)),
        ("oracle", "symbolic", deep, TRACE),
        ("generate", "library", "--tasks", deep, "-o", tmp_path / "lib", "--quiet"),
    ]
    for args in cases:
        code, err = mango(*args)
        assert code == 2, (args, err)
        assert "nested deeper than 100 levels" in err and "Traceback" not in err, (args, err)
        assert err.count("\n") == 1, err  # one line


def test_duplicate_keys_are_refused_at_every_entry_point(tmp_path: Path) -> None:
    dup_oracle = tmp_path / "oracle.json"
    dup_oracle.write_text(ORACLE.read_text().replace(
        '"execution_mode"', '"execution_mode": "sequential", "execution_mode"', 1))
    lines = TRACE.read_text().splitlines()
    lines[2] = lines[2].replace('"t":', '"t": 0.0, "t":', 1)
    dup_trace = tmp_path / "trace.jsonl"
    dup_trace.write_text("\n".join(lines) + "\n")
    for args, where in [(("oracle", "check", dup_oracle, TRACE), f"{dup_oracle}:"),
                        (("oracle", "check", ORACLE, dup_trace), f"{dup_trace}:3:")]:
        code, err = mango(*args)
        assert code == 2 and where in err and "appears twice" in err, err
