"""Every command that writes (`-o`): a file where a folder is wanted, or a place that cannot be
written, is one `error:` line and exit 2 before any work, never a traceback; a folder where a
file is wanted (ending in `/`, or existing) receives the file under the command's default name;
and a bag is never written over."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "test/data/generation"
TASKS, SCENES = GEN / "libero10_tasks.json", GEN / "libero10_scenes.json"
runner = CliRunner()


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("libs")
    result = runner.invoke(app, ["generate", "library", "--tasks", str(TASKS), "-o", str(out),
                                 "-q"])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rclpy.serialization import serialize_message

    from mango.bags import BagWriter
    from mango.ros.world_state_msg import record_to_msg

    path = tmp_path_factory.mktemp("bag") / "run"
    with BagWriter(path) as w:
        w.add_topic("/world_state", "mango_ros/msg/WorldState")
        for i in range(5):
            w.write("/world_state", serialize_message(record_to_msg({"t": i * 0.1})), i)
    return path


INSTRUCTION = "put both the alphabet soup and the tomato sauce in the basket"
DEFAULT_NAMES = {  # what a file-writing command calls its file inside a folder given as -o
    "oracle functions": "functions.json",
    "bag export": "run.jsonl",
    "generate oracle": "put_both_the_alphabet_soup_and_the_tomato_sauce.json",
    "generate minimize": "libero10_tasks.minimized.json",
}


def _commands(libs: Path, bag: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (arguments before -o, whether -o names a file or a folder)."""
    instruction = INSTRUCTION
    return {
        "oracle functions": (["oracle", "functions"], "file"),
        "bag export": (["bag", "export", str(bag)], "file"),
        "bag repair": (["bag", "repair", str(bag)], "folder"),
        "generate library": (["generate", "library", "--tasks", str(TASKS), "-q"], "folder"),
        "generate oracle": (["generate", "oracle", "--instruction", instruction, "--scene",
                             str(SCENES), "--libraries", str(libs), "-q"], "file"),
        "generate all": (["generate", "all", "--tasks", str(TASKS), "--scenes", str(SCENES),
                          "-q"], "folder"),
        "generate minimize": (["generate", "minimize", "--tasks", str(TASKS), "--generations",
                               "2", "-q"], "file"),
        "record": (["record", "--duration", "0.1"], "folder"),
    }


def _places(tmp_path: Path, name: str, wants: str) -> list[tuple[Path, str]]:
    a_dir = tmp_path / "a_dir"
    (a_dir / "inside").mkdir(parents=True)
    a_file = tmp_path / "a_file"
    a_file.write_text("precious\n")
    nowhere = Path("/proc/no_such_dir/out")  # cannot be created, even by root
    if wants == "file":  # the folder's default-named entry is itself a folder
        (a_dir / DEFAULT_NAMES[name]).mkdir()
    wrong = a_dir if wants == "file" else a_file
    return [(wrong, "is a directory" if wants == "file" else "is a file"),
            (nowhere, "cannot create the folder")]


@pytest.mark.parametrize("name", ["oracle functions", "bag export", "bag repair",
                                  "generate library", "generate oracle", "generate all",
                                  "generate minimize", "record"])
def test_a_bad_output_is_one_error_line_and_exit_2(name: str, libs: Path, bag: Path,
                                                   tmp_path: Path) -> None:
    args, wants = _commands(libs, bag)[name]
    for place, says in _places(tmp_path, name, wants):
        result = runner.invoke(app, [*args, "-o", str(place)])
        assert result.exit_code == 2, (name, place, result.stderr, result.exception)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, \
            result.stderr
        assert says in result.stderr, result.stderr
        assert "Traceback" not in result.stdout + result.stderr
    assert (tmp_path / "a_file").read_text() == "precious\n"  # nothing written over


@pytest.mark.parametrize("args", [["record", "--duration", "0.1"], ["bag", "repair"]])
def test_a_bag_is_never_written_over(args: list[str], bag: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in bag.iterdir())
    full = [*args[:2], str(bag), "-o", str(bag)] if args[0] == "bag" else [*args, "-o", str(bag)]
    result = runner.invoke(app, full)
    assert result.exit_code == 2 and "exist" in result.stderr, result.stderr
    assert sorted(p.name for p in bag.iterdir()) == before


@pytest.mark.parametrize("name", sorted(DEFAULT_NAMES))
def test_a_full_disk_is_one_line_naming_the_file(name: str, libs: Path, bag: Path) -> None:
    """/dev/full refuses every write with ENOSPC, an error that names no file: the line names
    the output all the same (`generate minimize` said '?', issue #41)."""
    args, _ = _commands(libs, bag)[name]
    result = runner.invoke(app, [*args, "-o", "/dev/full"])
    assert result.exit_code in (1, 2), (result.stderr, result.exception)
    assert result.stderr.startswith("error: /dev/full: ") and result.stderr.count("\n") == 1, \
        result.stderr
    assert "No space left on device" in result.stderr


@pytest.mark.parametrize(("args", "option"), [
    (["policy", "run", "--scene", "libero10_soup_sauce_basket"], "--bag"),
    (["demo"], "--out"),
])
def test_a_recorded_run_checks_where_its_bag_goes_before_the_stack_starts(
        args: list[str], option: str, bag: Path, tmp_path: Path) -> None:
    """A file, /dev/null or a folder that cannot be made as `policy run --bag` or `demo --out`
    started the stack and waited 90 s for a recorder that had died (issue #41): now one line
    and exit 2 at once, and a bag is never written over."""
    a_file = tmp_path / "a_file"
    a_file.write_text("precious\n")
    demo_out = tmp_path / "demo"
    demo_out.mkdir()
    (demo_out / "bag").symlink_to(bag)  # the demo's bag folder, a recorded bag
    places = [(a_file, "is a file, not a folder"), (Path("/dev/null"), "is a file, not a folder"),
              (Path("/proc/no_such_dir/out"), "cannot create the folder"),
              (bag if option == "--bag" else demo_out, "exists and is not empty")]
    for place, says in places:
        result = runner.invoke(app, [*args, option, str(place)])
        assert result.exit_code == 2, (place, result.stderr, result.exception)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, \
            result.stderr
        assert says in result.stderr, result.stderr
    assert a_file.read_text() == "precious\n"


@pytest.mark.parametrize("name", sorted(DEFAULT_NAMES))
@pytest.mark.parametrize("how", ["existing folder", "trailing slash"])
def test_a_folder_for_a_file_gets_the_default_name_inside(name: str, how: str, libs: Path,
                                                           bag: Path, tmp_path: Path) -> None:
    args, _ = _commands(libs, bag)[name]
    folder = tmp_path / "out" / "min"
    if how == "existing folder":
        folder.mkdir(parents=True)
    given = str(folder) + ("/" if how == "trailing slash" else "")
    result = runner.invoke(app, [*args, "-o", given])
    assert result.exit_code == 0, (result.stderr, result.exception)
    stem = DEFAULT_NAMES[name].removesuffix(".json").removesuffix(".jsonl")
    names = sorted(p.name for p in folder.iterdir())
    assert DEFAULT_NAMES[name] in names and all(n.startswith(stem) for n in names), names
    assert (folder / DEFAULT_NAMES[name]).read_text().strip()


def test_bag_export_and_repair_default_beside_the_bag(bag: Path, tmp_path: Path) -> None:
    import shutil

    from mango.bags import BagReader

    copy = tmp_path / "run"
    shutil.copytree(bag, copy)
    for args in (["bag", "export", str(copy)], ["bag", "export", str(copy), "--episode", "1"],
                 ["bag", "repair", str(copy)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.stderr, result.exception)
    assert len((tmp_path / "run.jsonl").read_text().splitlines()) == 5
    assert (tmp_path / "run.episode1.jsonl").read_text() == (tmp_path / "run.jsonl").read_text()
    assert sum(1 for _ in BagReader(tmp_path / "run.repaired").messages()) == 5
    # a bag's own .mcap counts as the bag: nothing is written inside the bag folder
    mcap = next(copy.glob("*.mcap"))
    before = sorted(p.name for p in copy.iterdir())
    result = runner.invoke(app, ["bag", "export", str(mcap)])
    assert result.exit_code == 0 and "run.jsonl" in result.stderr, result.stderr
    assert sorted(p.name for p in copy.iterdir()) == before
    # a second default repair does not write over the first
    result = runner.invoke(app, ["bag", "repair", str(copy)])
    assert result.exit_code == 2 and "run.repaired" in result.stderr, result.stderr


def test_a_missing_bag_makes_no_default_output(tmp_path: Path) -> None:
    for sub in ("export", "repair"):
        result = runner.invoke(app, ["bag", sub, str(tmp_path / "nowhere" / "run")])
        assert result.exit_code == 2 and "no such bag" in result.stderr, result.stderr
    assert not (tmp_path / "nowhere").exists()
