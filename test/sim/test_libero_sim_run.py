"""`mango sim run --scene libero/SUITE/TASK` (commands.md §7): the scripted expert on LIBERO
itself, its 20 Hz trace, `--states` reloaded into LIBERO and asked again, and bad input.

Reloading follows LIBERO's own harness (hf-libero 0.1.4 = Lifelong-Robot-Learning/LIBERO,
`libero/libero/envs/bddl_base_domain.py` `set_init_state`: `sim.set_state_from_flattened`,
`sim.forward`); what LIBERO says of a reloaded state (`check_success`, each goal atom's
`base_predicates` value) must be what our `libero_*` predicates say of the trace's world state
at the same `t`. Needs `.venv-libero` (`make libero-venv`): without it these tests fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.oracle import StateView, compile_expression
from mango.oracle.world_state import read_trace
from mango.sim.libero import LiberoClient, parse_scene, world_state
from mango.sim.libero.agreement import libero_library, our_atom

pytestmark = [pytest.mark.libero, pytest.mark.slow]

runner = CliRunner()
SCENE = "libero/libero_spatial/0"  # on(akita_black_bowl_1, plate_1): a short pick and place


def mango(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_run_writes_a_trace_whose_states_libero_reproduces(tmp_path: Path) -> None:
    trace, states = tmp_path / "t.jsonl", tmp_path / "s.npz"
    res = mango("sim", "run", "--scene", SCENE, "--seed", 1, "--trace", trace,
                "--states", states, "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)  # one object, nothing else on stdout
    labels = json.loads(trace.with_suffix(".labels.json").read_text())
    assert {k: v for k, v in out.items() if k != "libero_success"} == {
        k: v for k, v in labels.items() if k != "libero_success"}
    assert out["scene"] == SCENE and out["seed"] == 1
    assert isinstance(out["libero_success"], bool)
    assert out["goal_atoms"] == [["on", "akita_black_bowl_1", "plate_1"]]
    # the fine-grained oracle of the instruction, read in LIBERO's semantics, agrees with LIBERO
    assert (out["oracle_verdict"], out["oracle_failed_step"], out["oracle_error"]) == (
        "pass", None, None)

    trace_states = read_trace(trace)
    npz = np.load(states)
    assert npz["states"].shape[0] == len(trace_states) == npz["t"].shape[0]
    assert list(npz["t"]) == [s.t for s in trace_states]
    assert np.allclose(np.diff(npz["t"]), 1 / 20)  # LIBERO's control rate

    library = libero_library()
    rows = sorted({*range(0, len(trace_states), 8), len(trace_states) - 1})
    verdicts = []
    with LiberoClient() as client:
        task = client.open(parse_scene(SCENE), 1)
        assert npz["states"].shape[1] == task.state_size
        for i in rows:
            client.set_sim_state(list(npz["states"][i]))
            recorded = trace_states[i]
            view = StateView(recorded, library.thresholds)
            ours = [bool(compile_expression(our_atom(a), library)(view)) for a in task.goal]
            assert client.goal_values() == ours, f"row {i} (t = {recorded.t})"
            assert client.check_success() == all(ours), f"row {i}"
            verdicts.append(all(ours))
            # the reloaded simulation is the recorded world: every entity where the trace has it
            again = world_state(client.facts(), task.articulation, recorded.t)
            for name, o in recorded.objects.items():
                assert again.objects[name].position == pytest.approx(o.position, abs=1e-6), name
            assert again.contacts == recorded.contacts, f"row {i}"
    # the episode starts short of the goal and the expert reaches it (LIBERO agrees at the end)
    assert verdicts[0] is False
    assert verdicts[-1] is out["libero_success"] is out["symbolic_success"] is True


def test_a_short_run_stops_at_max_steps(tmp_path: Path) -> None:
    """Without --json: a summary for a person, the same labels file."""
    trace = tmp_path / "t.jsonl"
    res = mango("sim", "run", "--scene", "libero/libero_goal/put_the_bowl_on_the_plate",
                "--trace", trace, "--max-steps", 12)
    assert res.exit_code == 0, res.stderr
    said = " ".join(res.stdout.split())
    assert "check_success: no success" in said and "fine-grained oracle" in said, said
    out = json.loads(trace.with_suffix(".labels.json").read_text())
    # 12 steps from the init state: the hand has not even reached the bowl
    assert out["oracle_verdict"] == "fail" and out["oracle_failed_step"] == "1.1", out
    assert out["steps"] == 12 and len(read_trace(trace)) == 13
    assert out["libero_success"] is False and out["expected_verdict"] == "fail"
    assert "step limit" in out["expert_error"]


@pytest.mark.parametrize(("args", "message"), [
    (["--scene", "libero/libero_100/0"], "'--scene': unknown LIBERO suite 'libero_100'"),
    (["--scene", "libero/libero_goal/10"], r"'--scene': .*tasks 0..9, not 10"),
    (["--scene", "libero/libero_goal/no_such_task"], "'--scene': .*no task 'no_such_task'"),
    (["--scene", "libero/libero_goal/0", "--seed", 50], r"'--seed': .*init states 0..49, not 50"),
    (["--scene", "libero/libero_goal/0", "--fault", "drop@0.5"], "--fault is not wired"),
    (["--scene", "libero10_stove_moka", "--states", "x.npz"], "--states is for LIBERO"),
])
def test_bad_input_is_one_error_line(tmp_path: Path, args: list[object], message: str) -> None:
    """One line naming the option at fault (LIBERO's own refusals too: its process names the
    argument of the request it refused and the command maps it to its option)."""
    res = mango("sim", "run", "--trace", tmp_path / "t.jsonl", *args, "--json")
    assert res.exit_code == 2
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert re.search(message, lines[0]), lines[0]


def test_missing_runtime_names_its_make_target(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MANGO_LIBERO_VENV", str(tmp_path / "no-venv"))
    res = mango("sim", "run", "--scene", "libero/libero_goal/0", "--trace", tmp_path / "t.jsonl")
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and "`make libero-venv`" in res.stderr
