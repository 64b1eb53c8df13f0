"""Every command that writes (`-o`): a directory where a file is wanted, a file where a folder
is wanted, or a place that cannot be written is one `error:` line and exit 2 before any work,
never a traceback; and a bag is never written over."""

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


def _commands(libs: Path, bag: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (arguments before -o, whether -o names a file or a folder)."""
    instruction = "put both the alphabet soup and the tomato sauce in the basket"
    return {
        "oracle functions": (["oracle", "functions"], "file"),
        "bag export": (["bag", "export", str(bag)], "file"),
        "bag repair": (["bag", "repair", str(bag)], "folder"),
        "generate library": (["generate", "library", "--tasks", str(TASKS), "-q"], "folder"),
        "generate oracle": (["generate", "oracle", "--instruction", instruction, "--scene",
                             str(SCENES), "--libraries", str(libs), "-q"], "file"),
        "generate all": (["generate", "all", "--tasks", str(TASKS), "--scenes", str(SCENES),
                          "-q"], "folder"),
        "record": (["record", "--duration", "0.1"], "folder"),
    }


def _places(tmp_path: Path, wants: str) -> list[tuple[Path, str]]:
    a_dir = tmp_path / "a_dir"
    (a_dir / "inside").mkdir(parents=True)
    a_file = tmp_path / "a_file"
    a_file.write_text("precious\n")
    nowhere = Path("/proc/no_such_dir/out")  # cannot be created, even by root
    wrong = a_dir if wants == "file" else a_file
    return [(wrong, "is a directory" if wants == "file" else "is a file"),
            (nowhere, "cannot create the folder")]


@pytest.mark.parametrize("name", ["oracle functions", "bag export", "bag repair",
                                  "generate library", "generate oracle", "generate all",
                                  "record"])
def test_a_bad_output_is_one_error_line_and_exit_2(name: str, libs: Path, bag: Path,
                                                   tmp_path: Path) -> None:
    args, wants = _commands(libs, bag)[name]
    for place, says in _places(tmp_path, wants):
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
