"""Every count a user gives the command line has a bound, shown in `--help` and checked before
any work: outside it is one `error:` line naming the option, exit 2, never a traceback (or a
MemoryError, a fork per job, a numpy error after the scene was built). And the error boundary
(`cli/boundary.py`) words what a user can cause and leaves a bug a traceback."""

from __future__ import annotations

import errno
import math
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mango.cli.boundary import ErrorBoundary
from mango.cli.main import app
from mango.errors import InputError
from mango.sim.seeds import SEED_MAX

runner = CliRunner()

# Numeric options with no range on the option itself, and where their value is checked instead.
CHECKED_ELSEWHERE = {
    ("replay", "--episode"): "an index, negative from the end; one that is not there is named",
    ("bag export", "--episode"): "the same index as replay's",
    ("perception markers", "--size-mm"): "perception.sheet: finite, two pixels a cell, the page",
    ("sim export-sdf", "--image-size"): "a pair, checked in the command (1..4096)",
    ("sim export-sdf", "--camera-rate"): "checked in the command (above 0, at most 1000 Hz)",
    ("generate minimize", "--tau"): "checked in the command: (0, 1]",
}


def _numeric_options() -> list[tuple[str, Any]]:
    """(command path, option) for every int or float option of every command."""
    out = []

    def walk(group: Any, path: list[str]) -> None:
        for name, cmd in getattr(group, "commands", {}).items():
            if getattr(cmd, "commands", None):
                walk(cmd, [*path, name])
                continue
            for p in cmd.params:
                ann = getattr(getattr(p, "type_descriptor", None), "annotation", None)
                if ann in (int, float) or set(getattr(ann, "__args__", ())) in ({int}, {float}):
                    out.append((" ".join([*path, name]), p))

    walk(typer.main.get_command(app), [])
    return out


OPTIONS = _numeric_options()
BOUNDED = [(path, p) for path, p in OPTIONS if p.min is not None or p.max is not None]


def _name(p: Any) -> str:
    return max(p.opts, key=len)


def test_every_numeric_option_is_bounded_or_checked_where_it_is_used() -> None:
    unbounded = sorted((path, _name(p)) for path, p in OPTIONS
                       if p.min is None and p.max is None)
    assert unbounded == sorted(CHECKED_ELSEWHERE), unbounded
    assert len(BOUNDED) >= 25  # the walk found the commands


def _one_error_line(args: list[str], option: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (args, result.stdout, result.stderr, result.exception)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), \
        (args, result.stderr)
    assert option in result.stderr and "Traceback" not in result.stdout + result.stderr
    return result.stderr


def _allowed(p: Any) -> str:
    """What the error says is allowed, from the option's own range."""
    if p.min is not None and p.max is not None:
        return f"(allowed: {p.min}..{p.max})"
    return f"(allowed: at least {p.min})" if p.min is not None else f"(allowed: at most {p.max})"


def test_every_range_is_checked_just_past_each_end() -> None:
    for path, p in BOUNDED:
        values = [] if p.min is None else [str(math.ceil(p.min) - 1)]
        values += [] if p.max is None else [str(math.floor(p.max) + 1)]
        values += ["nan"] if p.type_descriptor.annotation is float else []
        for value in values:
            said = _one_error_line([*path.split(), _name(p), value], _name(p))
            assert said.endswith(f"{_allowed(p)}\n"), said


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_value_outside_an_options_range_is_one_error_line(data: st.DataObject) -> None:
    path, p = data.draw(st.sampled_from(BOUNDED))
    is_float = p.type_descriptor.annotation is float
    outside = []
    if p.min is not None:
        outside.append(st.integers(max_value=math.ceil(p.min) - 1))
        if is_float:
            outside += [st.floats(max_value=p.min).filter(lambda v, lo=p.min: v < lo),
                        st.just(math.nan)]  # (the filter drops -0.0, which is not below 0)
    if p.max is not None:
        outside.append(st.integers(min_value=math.floor(p.max) + 1))
        if is_float:
            outside += [st.floats(min_value=p.max).filter(lambda v, hi=p.max: v > hi)]
    value = data.draw(st.one_of(outside))
    said = _one_error_line([*path.split(), _name(p), str(value)], _name(p))
    assert said.endswith(f"{_allowed(p)}\n"), said


@pytest.mark.parametrize(("args", "option", "says"), [
    (["sim", "run", "--scene", "stove_moka", "--trace", "t.jsonl", "--seed", "-1"], "--seed",
     f"allowed: 0..{SEED_MAX}"),
    (["perception", "detect", "the bowl", "--scene", "stove_moka", "--seed", "-1"], "--seed",
     f"allowed: 0..{SEED_MAX}"),
    (["task", "run", "--scene", "stove_moka", "--mode", "full", "--monitor", "oracle",
      "--seed", "-1"], "--seed", f"allowed: 0..{SEED_MAX}"),
    (["sim", "run", "--scene", "stove_moka", "--trace", "t.jsonl", "--seed", str(2**32)],
     "--seed", "less than or equal to 4294967295"),
    (["replay", "bag", "--oracle", "o.json", "--jobs", "3000"], "--jobs", "allowed: 0..64"),
    (["campaign", "run", "c.yaml", "-o", "out", "--workers", "3000"], "--workers",
     "allowed: 1..64"),
    (["perception", "detect", "the bowl", "--scene", "stove_moka", "--width", "100000"],
     "--width", "allowed: 16..4096"),
    (["sim", "eval", "--start", str(SEED_MAX), "--seeds", "2"], "--start",
     "2 seeds from 4294967295 run past the last seed"),
    (["record", "-o", "bag", "--duration", "nan"], "--duration", "at least 0"),
    (["task", "run", "--scene", "stove_moka", "--mode", "full", "--monitor", "oracle",
      "--monitor-hz", "nan"], "--monitor-hz", "allowed: 0..1000"),
    (["generate", "minimize", "--tasks", "t.json", "-o", "m.json", "--generations", "1000000000"],
     "--generations", "allowed: 1..10000"),
])
def test_the_red_team_probes_and_their_kin(args: list[str], option: str, says: str,
                                           tmp_path: Path) -> None:
    said = _one_error_line(args, option)
    assert says in said, said


def test_marker_ids_are_bounded_before_a_range_is_expanded(tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.png"
    for ids, says in [("0-999999999", "'0-999999999' is not within the dictionary's ids, 0..49"),
                      ("0-49,0-49", "more ids than the dictionary has (50)"),
                      ("9-3", "(a range goes up: 0-4)")]:
        said = _one_error_line(["perception", "markers", "--ids", ids, "--size-mm", "20",
                                "-o", str(sheet)], "--ids")
        assert says in said, said
    for size, says in [("nan", "a positive number of mm"), ("inf", "a positive number of mm"),
                       ("1e-9", "too small for a 4x4_50 marker at 300 DPI"),
                       ("1e300", "does not fit on one a4 page")]:
        said = _one_error_line(["perception", "markers", "--ids", "0-3", "--size-mm", size,
                                "-o", str(sheet)], "--size-mm")
        assert says in said, said
    assert not sheet.exists()


def test_the_ranges_are_in_the_help() -> None:
    for args, shown in [(["sim", "run", "--help"], f"0<=x<={SEED_MAX}"),
                        (["replay", "--help"], "0<=x<=64"),
                        (["campaign", "run", "--help"], "1<=x<=64")]:
        result = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 0 and shown in result.stdout, (args, result.stdout)


# --- the boundary itself, on a command line of its own -------------------------------------

_demo = typer.Typer(cls=ErrorBoundary)
_sub = typer.Typer()
_demo.add_typer(_sub, name="do")


@_sub.command("raise")
def _raise(what: str) -> None:
    raise {
        "input": InputError("no such thing", file="f.yaml", field="x"),
        "full": OSError(errno.ENOSPC, "No space left on device"),
        "named": PermissionError(errno.EACCES, "Permission denied", "/root/secret"),
        "renamed": OSError(errno.EXDEV, "Invalid cross-device link", "/a", None, "/b"),
        "refused": ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
        "bug": ValueError("a bug"),
    }[what]


@pytest.mark.parametrize(("what", "line", "code"), [
    ("input", "error: f.yaml, field 'x': no such thing\n", 2),  # bad input
    # what the system refused once the run was under way: it could not be carried out
    ("full", "error: cannot write: No space left on device\n", 1),
    ("named", "error: /root/secret: Permission denied\n", 1),
    ("renamed", "error: /a -> /b: Invalid cross-device link\n", 1),
])
def test_what_a_user_can_cause_is_one_line(what: str, line: str, code: int) -> None:
    """Exit codes as shared/spec/commands.md has them: 2 bad input, 1 the run could not be
    carried out."""
    result = runner.invoke(_demo, ["do", "raise", what])
    assert result.exit_code == code and result.stderr == line, result.stderr


@pytest.mark.parametrize(("what", "kind"), [("refused", ConnectionRefusedError),
                                            ("bug", ValueError)])
def test_a_bug_or_an_error_with_no_path_stays_what_it_is(what: str, kind: type) -> None:
    result = runner.invoke(_demo, ["do", "raise", what])
    assert isinstance(result.exception, kind) and "error:" not in result.stderr


def test_a_missing_option_still_shows_the_usage() -> None:
    result = runner.invoke(app, ["sim", "run", "--trace", "t.jsonl"])
    assert result.exit_code == 2 and "Missing option" in result.stderr
    assert "Usage:" in result.stderr


@_sub.command("count")
def _count(n: int) -> None:
    """A positional argument with a type: a bad value is named as the usage line names it."""


def test_a_bad_value_for_an_argument_is_one_line_naming_it() -> None:
    """A positional argument's error has no option to name (it was a traceback in the
    boundary itself): it is named as the usage line shows it."""
    result = runner.invoke(_demo, ["do", "count", "many"])
    assert result.exit_code == 2, result.exception
    assert result.stderr == ("error: field 'N': Input should be a valid integer, unable to parse "
                             "string as an integer\n")


@pytest.mark.parametrize(("args", "name"), [
    (["oracle", "check", "{F}", "t.jsonl"], "ORACLE"),
    (["oracle", "lint", "{F}"], "ORACLE"),
    (["bag", "info", "{F}"], "BAG"),
    (["bag", "export", "{F}", "-o", "t.jsonl"], "BAG"),  # one of several (BAG...)
    (["replay", "{F}", "--oracle", "o.json"], "BAG"),
    (["campaign", "report", "{F}"], "FOLDER"),
    (["bddl", "import", "{F}", "-o", "out"], "TASK"),
])
def test_an_unreadable_file_given_as_an_argument_is_one_line(
        args: list[str], name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file the user may not read (root reads everything, so the refusal is the system's
    answer for that one path): the command line's own check names the argument."""
    import os

    unreadable = tmp_path / "secret"
    unreadable.write_text("{}")
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: (
        False if str(p) == str(unreadable) and mode & os.R_OK else access(p, mode, *a, **k)))
    said = _one_error_line([str(unreadable) if a == "{F}" else a for a in args], name)
    assert said == f"error: field '{name}': path '{unreadable}' is not readable.\n", said


@settings(max_examples=15, deadline=None)
@given(length=st.integers(150, 5000),
       where=st.sampled_from([(["primitives", "grasp", "{P}"], "PHRASE"),
                              (["primitives", "pick-place", "{P}", "in the basket"], "OBJECT"),
                              (["primitives", "pick-place", "the can", "in {P}"], "DESTINATION"),
                              (["primitives", "place", "in {P}"], "PHRASE"),
                              (["primitives", "place", "in the basket", "--object", "{P}"],
                               "--object")]))
def test_a_phrase_a_primitive_grounds_has_the_bound_of_a_detect_request(
        length: int, where: tuple[list[str], str]) -> None:
    """Property: a phrase longer than `Detect` takes is refused while the command line is
    parsed, naming the argument; one within it goes on to the scene (here one that is not
    there, so the answer is about the scene)."""
    from mango.perception.base import MAX_PHRASE_CHARS

    args, name = where
    phrase = ("the red can " * length)[:length]
    argv = [a.replace("{P}", phrase) for a in args] + ["--scene", "no_such_scene_41"]
    said = _one_error_line(argv, "error: ")
    full = next(a for a in argv if phrase in a)
    if len(full) > MAX_PHRASE_CHARS:
        assert said.startswith(f"error: field '{name}': the phrase is {len(full)} characters "
                               f"long"), said
        assert said.endswith(f"a phrase has at most {MAX_PHRASE_CHARS}\n"), said
    else:
        assert "no_such_scene_41" in said, said
