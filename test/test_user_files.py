"""A file a user names is read only when it is a regular file of sane size (issue #41, class 1):
a FIFO, a device, a socket or a folder is refused at once, naming the file, and so is a file
too big to read whole; a file streamed line by line (a trace) bounds each line instead. One
checker (`mango.errors.open_user_file`) behind every reader, so every entry point answers
alike: one `error:` line and exit 2."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mango.cli.main import app
from mango.errors import MAX_FILE_BYTES, InputError, read_user_text
from mango.json_files import read_lines, read_text
from mango.oracle import read_trace
from mango.sim.scene import load_scene

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "config/oracles/libero10_soup_sauce_basket.json"
TRACE = ROOT / "test/data/oracle/libero/soup_sauce_basket_pass.jsonl"
runner = CliRunner()


def promptly(call: Callable[[], Any], fifos: tuple[Path, ...] = ()) -> Any:
    """`call()`'s result or the exception it raised, within 5 s. A call stuck on a FIFO (what
    the checker prevents) fails the test instead of hanging it: the FIFOs are then opened for
    writing and closed, which ends the stuck read with an empty file."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # handed to the test as the answer
            out.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5.0)
    if worker.is_alive():
        for fifo in fifos:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(5.0)
        pytest.fail(f"blocked on a special file: {fifos}")
    return out[0]


def mango(*args: object, fifos: tuple[Path, ...] = ()) -> tuple[int, str]:
    result = promptly(lambda: runner.invoke(app, [str(a) for a in args]), fifos)
    return result.exit_code, result.stderr


def _special(kind: str, folder: Path) -> Path:
    """A path that is no regular file (or leads to one, through a link)."""
    if kind == "fifo":
        os.mkfifo(folder / "pipe.json")
        return folder / "pipe.json"
    if kind == "folder":
        (folder / "dir.json").mkdir()
        return folder / "dir.json"
    if kind == "socket":
        path = folder / "s.json"
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))  # the socket file stays after the socket closes
        return path
    if kind == "link to a fifo":
        os.mkfifo(folder / "target")
        (folder / "link.json").symlink_to(folder / "target")
        return folder / "link.json"
    return Path(kind)  # a device: /dev/zero, /dev/null, /dev/urandom


REASONS = {"fifo": "a named pipe (FIFO)", "link to a fifo": "a named pipe (FIFO)",
           "folder": "a folder", "socket": "a socket", "/dev/zero": "a character device",
           "/dev/null": "a character device", "/dev/urandom": "a character device"}


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["regular", "oversized", *REASONS]),
       cap=st.integers(0, 4096), content=st.text(max_size=300))
def test_only_a_regular_file_of_sane_size_is_read(kind: str, cap: int, content: str) -> None:
    """Property: a regular file within the cap reads back exactly; anything else is an
    `InputError` naming the file and why, never a hang, another exception or a partial read."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = content.encode("utf-8")
        if kind in ("regular", "oversized"):
            path = folder / "f.json"
            path.write_bytes(data)
            if kind == "oversized":
                os.truncate(path, max(cap, len(data)) + 1 + cap)  # sparse: no bytes written
        else:
            path = _special(kind, folder)
        fifos = (path,) if "fifo" in kind else ()
        answer = promptly(lambda: read_user_text(path, "oracle", max_bytes=cap), fifos)
        if kind == "regular" and len(data) <= cap:
            assert answer == content.replace("\r\n", "\n").replace("\r", "\n")
            return
        assert isinstance(answer, InputError), answer
        assert answer.file == str(path) and str(answer).startswith(f"{path}: cannot read oracle")
        if kind in REASONS:
            assert f"{REASONS[kind]}, not a regular file" in answer.message
        else:
            assert "a file read whole may hold" in answer.message


def test_a_file_over_the_documented_cap_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "huge.json"
    big.write_text('{"instruction": "')
    os.truncate(big, MAX_FILE_BYTES + 1)  # sparse: instant, and nothing to read if it tried
    with pytest.raises(InputError, match=r"more than the 64 MiB a file read whole may hold"):
        read_text(big, "oracle")
    assert read_text(TRACE, "trace") == TRACE.read_text()  # a real file reads as it did


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 40), max_size=12), cap=st.integers(1, 30))
def test_a_streamed_file_bounds_each_line(lengths: list[int], cap: int) -> None:
    """Property: `read_lines` gives the lines up to the first one longer than the cap (newline
    included), then an `InputError` naming that line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        lines = ["x" * n + "\n" for n in lengths]
        path.write_text("".join(lines))
        got: list[str] = []
        too_long = next((i for i, ln in enumerate(lines, 1) if len(ln) > cap), None)
        try:
            with read_lines(path, "trace", max_line_bytes=cap) as stream:
                got.extend(stream)
        except InputError as exc:
            assert (exc.file, exc.line) == (str(path), too_long), exc
            assert exc.message == f"a line longer than {cap} bytes"
        else:
            assert too_long is None
        assert got == lines[: (too_long or len(lines) + 1) - 1]


def test_stream_readers_refuse_special_files_before_reading(tmp_path: Path) -> None:
    fifo = _special("fifo", tmp_path)
    for read in (lambda p: read_lines(p, "trace"), read_trace):
        for path, reason in ((fifo, "a named pipe (FIFO)"), (Path("/dev/zero"),
                                                            "a character device")):
            answer = promptly(lambda r=read, p=path: r(p), (fifo,))
            assert isinstance(answer, InputError) and answer.file == str(path)
            assert answer.message == f"cannot read trace: {reason}, not a regular file"
    # YAML readers share the checker (scenes, stacks, robot files, calibrations)
    answer = promptly(lambda: load_scene(fifo.rename(tmp_path / "scene.yaml")),
                      (tmp_path / "scene.yaml",))
    assert str(answer) == f"{tmp_path / 'scene.yaml'}: cannot read scene: a named pipe (FIFO), " \
                          "not a regular file"


def test_bad_utf8_in_a_trace_names_its_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    lines = TRACE.read_bytes().splitlines(keepends=True)
    trace.write_bytes(b"".join(lines[:2]) + b'{"t": 9, "x": "\xff"}\n')
    code, err = mango("oracle", "check", ORACLE, trace)
    assert (code, err) == (2, f"error: {trace}:3:16: not UTF-8 text\n")


# ------------------------------------------------------------------ the red team's probes


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_special_files_given_to_the_cli_are_one_error_line(tmp_path: Path, special: str) -> None:
    path = _special(special, tmp_path)
    reason = REASONS[special]
    fifos = (path,) if special == "fifo" else ()
    scene = tmp_path / "scene.yaml"
    os.mkfifo(scene)
    for args, what in [(("oracle", "check", path, TRACE), "oracle"),
                       (("oracle", "check", ORACLE, path), "trace"),
                       (("oracle", "check", ORACLE, TRACE, "--functions", path),
                        "function library"),
                       (("oracle", "lint", ORACLE, "--scene", path), "scene"),
                       (("oracle", "lint", ORACLE, "--state", path), "scene"),
                       (("oracle", "symbolic", path, TRACE), "goal"),
                       (("bddl", "import", path, "-o", tmp_path / "out"), "BDDL file")]:
        code, err = mango(*args, fifos=fifos)
        assert (code, err) == (2, f"error: {path}: cannot read {what}: {reason}, "
                                  "not a regular file\n"), args
    # a sim scene by path (a .yaml FIFO is a scene reference, read as YAML)
    code, err = mango("oracle", "lint", ORACLE, "--scene", scene, fifos=(scene,))
    assert (code, err) == (2, f"error: {scene}: cannot read scene: a named pipe (FIFO), "
                              "not a regular file\n")


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_a_policy_runs_oracle_is_checked_before_the_stack_starts(tmp_path: Path,
                                                                 special: str) -> None:
    """`policy run --oracle /dev/zero` said 'oracle file not found' (it is there): the oracle
    is checked as every file a user names, before any node starts."""
    path = _special(special, tmp_path)
    code, err = mango("policy", "run", "--scene", "libero10_soup_sauce_basket", "--oracle", path,
                      fifos=(path,) if special == "fifo" else ())
    assert (code, err) == (2, f"error: {path}: cannot read oracle: {REASONS[special]}, "
                              "not a regular file\n")


def test_an_oversized_oracle_is_refused_by_the_cli(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.touch()
    os.truncate(big, 3 * 2**30)
    code, err = mango("oracle", "check", big, TRACE)
    assert (code, err) == (2, f"error: {big}: cannot read oracle: 3 GiB, more than the 64 MiB "
                              "a file read whole may hold\n")


def test_a_trace_of_any_length_is_a_scene_by_its_first_state(tmp_path: Path) -> None:
    """`lint --scene` takes a trace's first state: it reads the first lines of a 3 GiB trace
    (the rest a sparse hole, never read), not the whole file."""
    big = tmp_path / "big.jsonl"
    big.write_text("".join(TRACE.read_text().splitlines(keepends=True)[:2]))
    os.truncate(big, 3 * 2**30)
    code, err = mango("oracle", "lint", ORACLE, "--scene", big)
    assert (code, err) == (0, "")


# ------------------------------------------------------------------ control characters


def _oracle_with(tmp_path: Path, mutate: Callable[[dict], None]) -> Path:
    data = json.loads(ORACLE.read_text())
    mutate(data)
    path = tmp_path / "oracle.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("mutate", "step", "field", "char"), [
    (lambda d: d["plan"][0]["actions"][1]["parameters"].update(obj_id="alphabet_soup_1\x00"),
     "1.2", "plan[0].actions[1].parameters.obj_id", "U+0000"),
    (lambda d: d["plan"][1]["actions"][0]["parameters"].update(obj_id="\u202e1_puos"),
     "2.1", "plan[1].actions[0].parameters.obj_id", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    (lambda d: d["plan"][0]["actions"][0]["parameters"].update({"o\x1bbj": "x"}),
     "1.1", "plan[0].actions[0].parameters.o\\u001bbj", "U+001B"),
    (lambda d: d["plan"][0]["actions"][2].update(action_id="place\u2067_in"),
     "1.3", "plan[0].actions[2].action_id", "U+2067 (RIGHT-TO-LEFT ISOLATE)"),
    (lambda d: d["plan"][0]["actions"][0]["monitoring"][0].update(oracle_id="near\u200b"),
     "1.1", "plan[0].actions[0].monitoring[0].oracle_id", "U+200B (ZERO WIDTH SPACE)"),
    (lambda d: d["plan"][0]["actions"][0]["parameters"].update(obj_id=["a", {"k": "b\x07"}]),
     "1.1", "plan[0].actions[0].parameters.obj_id[1].k", "U+0007"),
], ids=["NUL in a value", "RTL override", "escape in a key", "RTL isolate in action_id",
        "zero width in oracle_id", "bell deep in a value"])
def test_control_characters_in_an_oracle_are_refused(
    tmp_path: Path, mutate: Callable[[dict], None], step: str, field: str, char: str
) -> None:
    """NUL, escapes, bidi overrides and zero-width characters in a name or parameter: refused
    by `check` and `lint` with the step path and the field (the key itself shown escaped)."""
    oracle = _oracle_with(tmp_path, mutate)
    expected = (f"error: {oracle}, field '{field}': step {step}: control character {char}: "
                "names, parameters and expressions are printable text\n")
    for args in (("oracle", "check", oracle, TRACE), ("oracle", "lint", oracle)):
        assert mango(*args) == (2, expected), args


def test_whitespace_in_free_text_is_still_fine(tmp_path: Path) -> None:
    def spaced(d: dict) -> None:
        d["instruction"] = "Put both the soup\tand the sauce\nin the basket"
        monitor = d["plan"][0]["actions"][0]["monitoring"][0]
        monitor["handle_as"] = monitor["handle_as"].replace(", ", ",\n\t ")
        d["plan"][0]["actions"][0]["parameters"]["note"] = "café, spaced out"

    code, _ = mango("oracle", "check", _oracle_with(tmp_path, spaced), TRACE)
    assert code == 0
    code, err = mango("oracle", "check", _oracle_with(
        tmp_path, lambda d: d.update(instruction="put it\u202e in")), TRACE)
    assert (code, err) == (2, f"error: {tmp_path / 'oracle.json'}, field 'instruction': "
                              "control character U+202E (RIGHT-TO-LEFT OVERRIDE): names, "
                              "parameters and expressions are printable text\n")


def test_a_library_file_that_is_no_regular_file_is_named_as_what_it_is(tmp_path: Path) -> None:
    """A FIFO as the atomic library was reported as missing: what is there is named."""
    from mango.generation.runner import ATOMIC_LIBRARY, ORACLE_LIBRARY, load_libraries

    os.mkfifo(tmp_path / ATOMIC_LIBRARY)
    (tmp_path / ORACLE_LIBRARY).write_text("{}")
    with pytest.raises(InputError, match="a named pipe"):
        load_libraries(tmp_path)
    (tmp_path / ATOMIC_LIBRARY).unlink()
    with pytest.raises(InputError, match=f"missing {ATOMIC_LIBRARY}"):
        load_libraries(tmp_path)
