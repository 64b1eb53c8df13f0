"""Campaign episodes as ROS stacks (`runner: ros`): the sim stack per episode on the worker's
own ROS domain, the same result as the in-process run of the same seeds (verdict, failed step,
success, the labels' truth), and what a stack cannot run refused before anything runs.

The stack runs in real time, not in lockstep: its expert sees the world when its messages
arrive, so an episode is not bit-identical to the in-process one (a nominal stove_moka
episode placed the pot off the cook region once in CI; 17 runs of it here did not). Every stack
episode is judged alike by its own live oracle, its bag's symbolic check and its expert's
account, always; one that disagrees with the in-process run is run once more on a fresh
stack, and that run must agree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mango.errors import InputError
from mango.evaluation.campaign import load_campaign
from mango.evaluation.ros_runner import execute_ros_episode
from mango.evaluation.runner import STORE_FILE, run_campaign
from mango.evaluation.store import Store

CAMPAIGN = """name: agree
systems: [{name: vla, kind: policy}]
tasks: [libero10_stove_moka]
seeds: {start: 0, count: 1}
faults: [none, drop@0.3]
"""


def _outcome(r: dict) -> tuple:
    return (r["error"], r["success"], r["verdict"]["verdict"], r["verdict"]["failed_step"],
            r["symbolic"]["verdict"], r["labels"]["expected_verdict"], r["labels"]["failed_step"])


def _outcomes(out: Path) -> dict[str, tuple]:
    with Store(out / STORE_FILE) as s:
        return {r["episode"]: _outcome(r) for r in s.results()}


def _consistent(o: tuple) -> bool:
    """The live verdict, the symbolic end state and the expert's truth tell the same story."""
    error, success, verdict, step, symbolic, expected, expected_step = o
    return (error is None and verdict == expected and step == expected_step
            and (symbolic == "pass") == success == (verdict == "pass"))


def test_stack_episodes_give_the_in_process_results(tmp_path: Path) -> None:
    local = tmp_path / "local.yaml"
    local.write_text(CAMPAIGN)
    ros = tmp_path / "ros.yaml"
    ros.write_text(CAMPAIGN + "runner: ros\n")
    run_campaign(load_campaign(local), tmp_path / "in_process")
    base = (int(os.environ["ROS_DOMAIN_ID"]) + 40) % 200 + 1  # not the suite's own domain
    summary = run_campaign(load_campaign(ros), tmp_path / "ros", workers=1,
                           ros_domain_base=base)
    assert (summary.ran, summary.errors) == (2, 0)  # a nominal and a faulted episode
    want, got = _outcomes(tmp_path / "in_process"), _outcomes(tmp_path / "ros")
    assert all(_consistent(o) for o in want.values()), want
    assert all(_consistent(o) for o in got.values()), got
    campaign = load_campaign(ros)
    for spec in campaign.episodes():
        if got[spec.id] != want[spec.id]:  # real time, not lockstep: once more, afresh
            system = campaign.systems[spec.system].model_dump(mode="json")
            again, _ = execute_ros_episode(spec, system, tmp_path / "again", base)
            got[spec.id] = _outcome(again)
    assert got == want
    assert {v[2] for v in got.values()} == {"pass", "fail"}  # both outcomes are compared
    with Store(tmp_path / "ros" / STORE_FILE) as s:
        results = list(s.results())
    assert all(r["runner"] == "ros" and r["ros"]["domain"] == base for r in results)
    for r in results:  # the recorder's bag and the trace exported from it
        folder = tmp_path / "ros" / "episodes" / r["episode"]
        assert (folder / "bag" / "metadata.yaml").is_file()
        assert (folder / "trace.jsonl").stat().st_size > 0


@pytest.mark.parametrize(("extra", "field", "says"), [
    ("  - {name: t, kind: task, mode: full, monitor: oracle}\n", "systems[1].kind",
     "orchestrated systems run in_process"),
    ("oracles: generated\n", "oracles", "generated oracles run in_process"),
])
def test_what_a_stack_cannot_run_is_refused_first(tmp_path: Path, extra: str, field: str,
                                                  says: str) -> None:
    text = CAMPAIGN + "runner: ros\n"
    if extra.startswith("  -"):
        text = text.replace("systems: [{name: vla, kind: policy}]\n",
                            "systems:\n  - {name: vla, kind: policy}\n" + extra)
    else:
        text += extra
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_campaign(path)
    assert err.value.field == field and says in err.value.message
