"""A campaign's errors are one `error:` line naming the path or the field, exit 2, never a
traceback: an output that cannot be one (a file, /dev/null, a folder nobody can write in),
checked before any episode runs; seeds that are no seeds; a store that is damaged or cut short,
on report and on resume; a disk that fills up mid-run (the kernel's own refusal, through a
file-size limit)."""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mango.cli.main import app
from mango.errors import InputError
from mango.evaluation.campaign import load_campaign
from mango.evaluation.runner import STORE_FILE
from mango.evaluation.store import Store
from mango.sim.seeds import MAX_SEED_COUNT, SEED_MAX

TINY = Path(__file__).resolve().parents[1] / "data" / "sim" / "tiny_basket.yaml"
runner = CliRunner()


def _campaign(folder: Path, seeds: str = "{start: 0, count: 1}", name: str = "c.yaml") -> Path:
    path = folder / name
    path.write_text(f"""name: tiny
systems:
  - {{name: expert, kind: policy, backend: expert}}
tasks: [{TINY}]
seeds: {seeds}
""")
    return path


def _one_error_line(args: list[str], code: int = 2) -> str:
    """The one error line of a command that must exit `code` (commands.md: 2 bad input, 1 a
    run that could not be carried out)."""
    res = runner.invoke(app, args)
    assert res.exit_code == code, (args, res.stdout, res.stderr, res.exception)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in res.stdout + res.stderr, res.stderr
    return errors[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A campaign folder holding one finished episode."""
    base = tmp_path_factory.mktemp("finished")
    out = base / "out"
    res = runner.invoke(app, ["campaign", "run", str(_campaign(base)), "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    return out


@pytest.mark.parametrize("seeds", ["{start: 1e20, count: 1}", "{start: 1.0e+20, count: 1}",
                                   f"{{start: {SEED_MAX + 1}, count: 1}}",
                                   f"{{start: {SEED_MAX}, count: 2}}",
                                   f"{{start: 0, count: {MAX_SEED_COUNT + 1}}}"])
def test_seeds_that_are_no_seeds_fail_before_any_episode(tmp_path: Path, seeds: str) -> None:
    path = _campaign(tmp_path, seeds)
    line = _one_error_line(["campaign", "run", str(path), "-o", str(tmp_path / "out")])
    assert line.startswith(f"error: {path}, field 'seeds") and not (tmp_path / "out").exists()


@settings(max_examples=40, deadline=None)
@given(start=st.one_of(st.integers(-10, 10), st.integers(SEED_MAX - 2 * MAX_SEED_COUNT,
                                                         SEED_MAX + 10),
                       st.integers(-2**70, 2**70)),
       count=st.integers(min_value=-5, max_value=2 * MAX_SEED_COUNT))
def test_a_seed_range_is_taken_exactly_when_every_seed_is_a_seed(start: int, count: int
                                                                 ) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = _campaign(Path(folder), f"{{start: {start}, count: {count}}}")
        valid = start >= 0 and 1 <= count <= MAX_SEED_COUNT and start + count - 1 <= SEED_MAX
        if valid:
            seeds = [e.seed for e in load_campaign(path).episodes()]
            assert seeds == list(range(start, start + count))
        else:
            with pytest.raises(InputError) as err:
                load_campaign(path)
            assert err.value.field is not None and err.value.field.startswith("seeds")


def _unwritable_folder(tmp_path: Path) -> list[Path]:
    """Folders nobody can create a file in: /sys (sysfs refuses even root), and for anyone
    but root a folder without write permission."""
    places = [Path("/sys")]
    if os.geteuid() != 0:
        ro = tmp_path / "read_only"
        ro.mkdir()
        ro.chmod(0o555)
        places.append(ro)
    return places


def test_an_output_that_cannot_be_one_is_named_before_any_episode(tmp_path: Path) -> None:
    path = _campaign(tmp_path)
    a_file = tmp_path / "a_file"
    a_file.write_text("precious\n")
    cases = [(a_file, f"error: {a_file}: the campaign output folder is a file, not a folder"),
             (Path("/dev/null"), "error: /dev/null: the campaign output folder is a file"),
             (Path("/proc/no_such_dir/out"), "error: /proc/no_such_dir/out: cannot create")]
    cases += [(p, f"error: {p}") for p in _unwritable_folder(tmp_path)]
    for out, says in cases:
        line = _one_error_line(["campaign", "run", str(path), "-o", str(out)])
        assert line.startswith(says), (out, line)
    assert a_file.read_text() == "precious\n"
    assert not list(tmp_path.glob("**/episodes"))  # no episode ran anywhere


@pytest.mark.parametrize("damage", ["garbage", "half", "header"])
def test_a_damaged_store_is_named_on_report_and_on_resume(finished: Path, tmp_path: Path,
                                                          damage: str) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    db = out / STORE_FILE
    data = db.read_bytes()
    db.write_bytes({"garbage": os.urandom(len(data)), "half": data[: len(data) // 2],
                    "header": data[:50]}[damage])
    says = f"error: {db}: not a readable campaign store ("
    assert _one_error_line(["campaign", "report", str(out), "--format", "json"]
                           ).startswith(says)
    resume = _one_error_line(["campaign", "run", str(_campaign(tmp_path)), "-o", str(out)])
    assert resume.startswith(says) and "use a new output folder" in resume
    assert sorted(p.name for p in (out / "episodes").iterdir()) == sorted(
        p.name for p in (finished / "episodes").iterdir())  # nothing ran, nothing lost


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_store_damaged_anywhere_is_reported_or_named_never_a_traceback(
        finished: Path, data: st.DataObject) -> None:
    """The store cut at any byte, or any bytes of it overwritten: `campaign report` either
    reports (exit 0: the damage missed what it reads) or says the store is unreadable in one
    line naming it (exit 2) — never a traceback, never another error."""
    original = (finished / STORE_FILE).read_bytes()
    at = data.draw(st.integers(0, len(original) - 1), label="offset")
    if data.draw(st.booleans(), label="cut"):
        damaged = original[:at]
    else:
        junk = data.draw(st.binary(min_size=1, max_size=64), label="junk")
        damaged = original[:at] + junk + original[at + len(junk):]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        shutil.copytree(finished, out)
        (out / STORE_FILE).write_bytes(damaged)
        res = runner.invoke(app, ["campaign", "report", str(out), "--format", "json"])
        assert "Traceback" not in res.stdout + res.stderr, (at, res.stderr)
        assert res.exception is None or isinstance(res.exception, SystemExit), (at, res.exception)
        errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
        if res.exit_code == 0:
            assert not errors
        else:  # the store, or the folder whose store holds no episode (a cut at byte 0)
            assert res.exit_code == 2 and len(errors) == 1, (at, res.stderr)
            assert errors[0].startswith(f"error: {out}"), errors


def test_a_report_to_a_full_disk_names_it(finished: Path) -> None:
    line = _one_error_line(["campaign", "report", str(finished), "-o", "/dev/full"], code=1)
    assert line == "error: cannot write /dev/full: No space left on device"


def test_a_full_store_is_named(finished: Path, tmp_path: Path) -> None:
    """SQLite's own 'disk full' (SQLITE_FULL), reached by capping the file's pages."""
    shutil.copytree(finished, tmp_path / "out")
    db = tmp_path / "out" / STORE_FILE
    with Store(db) as store:
        (result,) = store.results()
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(OSError) as err:  # the system's refusal: the run cannot go on
            for i in range(50):
                store.add({**result, "episode": f"more_{i}", "pad": "x" * 4000})
    assert err.value.filename == str(db)
    assert err.value.strerror == "cannot write the campaign store (database or disk is full)"
    with Store(db) as store:  # what was stored before stays
        assert [r["episode"] for r in store.results()] == [result["episode"]]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))


def test_a_disk_full_mid_campaign_is_one_error_naming_the_file(tmp_path: Path) -> None:
    """The episode's trace (about 280 kB) passes the process's file-size limit: its write fails
    as on a full disk, and the error names that file."""
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "mango.cli.main", "campaign", "run",
                           str(_campaign(tmp_path)), "-o", str(out)], capture_output=True,
                          text=True, timeout=120, preexec_fn=_limited)
    assert proc.returncode == 1, proc.stderr  # the run could not be carried out
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    trace = out / "episodes" / "expert__tiny_basket__s0__none" / "trace.jsonl"
    assert errors == [f"error: {trace}: File too large"], proc.stderr
    assert "Traceback" not in proc.stderr
    with sqlite3.connect(out / STORE_FILE) as db:  # the store is whole, the episode not in it
        assert db.execute("SELECT count(*) FROM episodes").fetchone() == (0,)


@pytest.mark.timeout(120)  # a read of a FIFO would block for good: fail, never hang
@pytest.mark.parametrize(("kind", "reason"), [("fifo", "a named pipe (FIFO)"),
                                              ("link to /dev/zero", "a character device"),
                                              ("folder", "a folder")])
def test_a_store_that_is_no_regular_file_is_named_as_what_it_is(
        tmp_path: Path, kind: str, reason: str) -> None:
    """campaign.sqlite as a FIFO or a link to a device was 'disk I/O error' on resume (exit 1)
    and 'no campaign.sqlite here' on report: it is checked as every file a user names is."""
    out = tmp_path / "out"
    out.mkdir()
    store = out / STORE_FILE
    if kind == "fifo":
        os.mkfifo(store)
    elif kind == "folder":
        store.mkdir()
    else:
        store.symlink_to("/dev/zero")
    said = f"error: {store}: cannot read campaign store: {reason}, not a regular file"
    assert _one_error_line(["campaign", "report", str(out)]) == said
    assert _one_error_line(["campaign", "run", str(_campaign(tmp_path)), "-o", str(out)]) == said
    assert sorted(p.name for p in out.iterdir()) == [STORE_FILE]  # no episode ran
