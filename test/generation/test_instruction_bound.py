"""An instruction is a count a user controls (issue #41, class 2): past `MAX_INSTRUCTION_CHARS`
it is refused before any reading, naming the field, wherever it comes in (the reader itself,
a TASKS.json entry, `generate oracle --instruction`, `task run --instruction`). A 120 KB
instruction kept the grammar busy for 10 s before the bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.reading import scene_task
from typer.testing import CliRunner

from mango.cli.main import app
from mango.errors import InputError
from mango.generation.models import MAX_INSTRUCTION_CHARS, instruction_problem, load_tasks
from mango.generation.offline.grounding import ground_instruction

LONG = "put the butter in the basket " * 40  # 1,160 characters: a few words past the bound
runner = CliRunner()


def test_the_bound_is_the_length_and_an_instruction_at_it_is_read() -> None:
    assert len(LONG) > MAX_INSTRUCTION_CHARS
    assert instruction_problem(LONG[:MAX_INSTRUCTION_CHARS]) is None
    assert instruction_problem("  ") == "the instruction is empty"
    said = instruction_problem(LONG)
    assert said == (f"the instruction is {len(LONG)} characters long; an instruction has at "
                    f"most {MAX_INSTRUCTION_CHARS}")
    res = ground_instruction(LONG, scene_task("living_room_basket"))
    assert not res.goals and res.problems == [said]
    ok = ground_instruction("put the butter in the basket", scene_task("living_room_basket"))
    assert ok.read_in_full


def test_a_tasks_file_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(["put the butter in the basket", LONG]))
    with pytest.raises(InputError) as err:
        load_tasks(path)
    assert err.value.field == "[1]" and "characters long" in str(err.value)


@pytest.mark.parametrize("args", [
    ["generate", "oracle", "--scene", "libero10_soup_sauce_basket", "--libraries", "x",
     "-o", "y"],
    ["task", "run", "--scene", "libero10_soup_sauce_basket", "--mode", "full", "--monitor",
     "oracle"],
])
def test_the_command_line_refuses_it_before_any_work(args: list[str]) -> None:
    res = runner.invoke(app, [*args, "--instruction", LONG])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: field '--instruction': the instruction is 1160 "), \
        res.stderr
