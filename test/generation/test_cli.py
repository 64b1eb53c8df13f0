"""`mango generate` end to end (spec §7 exit codes, files written, quiet mode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "test" / "data" / "generation"
TASKS = str(DATA / "libero10_tasks.json")
SCENES = str(DATA / "libero10_scenes.json")
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["generate", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def libdir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lib")
    res = invoke("library", "--tasks", TASKS, "-o", str(out))
    assert res.exit_code == 0, res.stderr
    assert "offline planner" in res.stderr and "not a language model" in res.stderr
    assert "module1 iteration 1" in res.stderr
    return out


def test_library_writes_both_libraries(libdir):
    lib = json.loads((libdir / "atomic_library.json").read_text())
    assert {t["id"] for t in lib["atomic_library"]} >= {"pick_up", "place_in"}
    olib = json.loads((libdir / "atomic_oracle_library.json").read_text())
    assert all("correctness_oracle" in o for o in olib["atomic_oracle_library"])
    report = json.loads((libdir / "library_report.json").read_text())
    assert report["approved"] and report["backend"] == "offline"
    lines = (libdir / "library_transcript.jsonl").read_text().splitlines()
    assert lines and json.loads(lines[0])["role"] == "generator"


def test_oracle_approved_quiet(libdir, tmp_path):
    out = tmp_path / "o" / "oracle.json"
    res = invoke("oracle", "--instruction", "put both moka pots on the stove", "--scene", SCENES,
                 "--libraries", str(libdir), "-o", str(out), "--quiet")
    assert res.exit_code == 0
    assert res.stderr == "" and res.stdout == ""
    oracle = json.loads(out.read_text())
    assert oracle["instruction"] == "put both moka pots on the stove"
    assert (out.parent / "oracle.report.json").is_file()
    assert (out.parent / "oracle.transcript.jsonl").is_file()
    report = json.loads((out.parent / "oracle.report.json").read_text())
    assert report["approved"] and report["executable"] and report["valid"]


def test_oracle_not_approved_exit_1_still_writes(libdir, tmp_path):
    # the LIBERO-10 libraries have no "near" check, so pushing next to something is read and
    # grounded but cannot be monitored: the loop ends unapproved and the last candidate stays
    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps({"task_objects": [{
        "id": "push the alphabet soup next to the basket",
        "objects": ["alphabet_soup_1", "basket_1"],
        "states": ["alphabet_soup_1", "basket_1", "basket_1_contain_region"]}]}))
    out = tmp_path / "oracle.json"
    res = invoke("oracle", "--instruction", "push the alphabet soup next to the basket",
                 "--scene", str(scene), "--libraries", str(libdir), "-o", str(out),
                 "--max-iterations", "3")
    assert res.exit_code == 1
    assert "not approved" in res.stderr
    assert out.is_file()
    report = json.loads((tmp_path / "oracle.report.json").read_text())
    issues = [i for r in report["module3"]["history"][0]["reports"] for i in r["issues"]]
    assert any("push_near" in i for i in issues)


@pytest.mark.parametrize("instruction,word", [
    ("put the pineapple in the basket", "pineapple"),   # nothing in the scene is called so
    ("wipe the basket", "wipe"),                        # no action it can read
    ("put the alphabet soup", "put the alphabet soup"),  # says where to put nothing
    ("put the soup in the basket, then do the same with the basket", "same"),
])
def test_unreadable_instruction_is_refused_exit_1_without_an_oracle(libdir, tmp_path,
                                                                    instruction, word):
    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps({"task_objects": [{
        "id": instruction, "objects": ["alphabet_soup_1", "basket_1"],
        "states": ["alphabet_soup_1", "basket_1", "basket_1_contain_region"]}]}))
    out = tmp_path / "oracle.json"
    res = invoke("oracle", "--instruction", instruction, "--scene", str(scene),
                 "--libraries", str(libdir), "-o", str(out))
    assert res.exit_code == 1
    assert "\nrefused: cannot read" in res.stderr, res.stderr
    assert word in res.stderr
    assert not out.exists()


def test_all_refuses_one_task_and_generates_the_others(tmp_path):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(["put the alphabet soup in the basket",
                                 "put the pineapple in the basket"]))
    scenes = tmp_path / "scenes.json"
    scenes.write_text(json.dumps({"task_objects": [{
        "id": t, "objects": ["alphabet_soup_1", "basket_1"],
        "states": ["alphabet_soup_1", "basket_1", "basket_1_contain_region"]}
        for t in json.loads(tasks.read_text())]}))
    res = invoke("all", "--tasks", str(tasks), "--scenes", str(scenes), "-o",
                 str(tmp_path / "out"))
    assert res.exit_code == 1
    assert "refused: cannot read 'put the pineapple in the basket'" in res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [o["approved"] for o in summary["oracles"]] == [True]
    assert [r["instruction"] for r in summary["refused"]] == ["put the pineapple in the basket"]


@pytest.mark.parametrize("case", ["bad_json", "no_entry", "no_libraries", "bad_ablation",
                                  "empty_instruction", "bad_backend", "fallback_offline",
                                  "fallback_disagrees"])
def test_bad_input_exit_2(case, libdir, tmp_path):
    out = str(tmp_path / "o.json")
    args = ["oracle", "--instruction", "put both moka pots on the stove", "--scene", SCENES,
            "--libraries", str(libdir), "-o", out]
    if case == "bad_json":
        bad = tmp_path / "scene.json"
        bad.write_text('{"task_objects": [\n  {"id": "x",, }]}')
        args[4] = str(bad)
    elif case == "no_entry":
        args[2] = "juggle three oranges"
    elif case == "no_libraries":
        args[6] = str(tmp_path / "nowhere")
    elif case == "bad_ablation":
        args += ["--ablation", "no_brain"]
    elif case == "empty_instruction":
        args[2] = "  "
    elif case == "bad_backend":
        args += ["--backend", "telepathy"]
    elif case == "fallback_offline":  # the reader cannot be its own fallback
        args += ["--fallback", "offline"]
    elif case == "fallback_disagrees":
        args += ["--fallback", "local", "--opt", "fallback=openai"]
    res = invoke(*args)
    assert res.exit_code == 2, res.stderr
    assert res.stderr.startswith("error: ")
    assert "Traceback" not in res.stderr
    if case.startswith("fallback"):
        assert "fallback" in res.stderr
    if case == "bad_json":
        assert "scene.json:2:" in res.stderr


def test_library_bad_tasks_exit_2(tmp_path):
    tasks = tmp_path / "tasks.json"
    tasks.write_text('["put the bowl in the drawer", 3]')
    res = invoke("library", "--tasks", str(tasks), "-o", str(tmp_path / "out"))
    assert res.exit_code == 2 and "field '[1]'" in res.stderr


def test_all_then_score(tmp_path):
    out = tmp_path / "run"
    res = invoke("all", "--tasks", TASKS, "--scenes", SCENES, "-o", str(out), "-q")
    assert res.exit_code == 0, res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["oracles"]) == 10 and all(o["approved"] for o in summary["oracles"])
    res = invoke("score", str(out), "--scenes", SCENES, "--truth", str(ROOT / "config/oracles"),
                 "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    s = data["summary"]
    assert s["n"] == 10 and s["validity"] == 1.0 and s["executability"] == 1.0
    assert s["min_similarity"] >= 0.9
    assert set(s["modules"]) == {"module1", "module2", "module3"}
    assert s["modules"]["module1"]["iterations"] >= 1
    res = invoke("score", str(out / "oracles"), "--truth", str(ROOT / "config/oracles"))
    assert res.exit_code == 0 and "similarity" in res.stdout


def test_ablation_via_cli(tmp_path):
    out = tmp_path / "run"
    res = invoke("all", "--tasks", TASKS, "--scenes", SCENES, "-o", str(out), "-q",
                 "--ablation", "baseline")
    assert res.exit_code == 0
    assert json.loads((out / "summary.json").read_text())["ablation"] == "baseline"


def test_minimize_cli(tmp_path):
    out = tmp_path / "min.json"
    res = invoke("minimize", "--tasks", TASKS, "-o", str(out), "--seed", "3",
                 "--generations", "10", "-q")
    assert res.exit_code == 0, res.stderr
    data = json.loads(out.read_text())
    assert data["seed"] == 3 and data["generations"] <= 10
    assert 1 <= len(data["selected"]) <= 10 and data["similarity"] >= 0.95


def test_restricted_function_library_is_respected(tmp_path):
    """Without near/up the planner must not monitor approach or lifting."""
    out = tmp_path / "run"
    res = invoke("all", "--tasks", TASKS, "--scenes", SCENES, "-o", str(out), "-q",
                 "--functions", str(DATA / "functions_no_near_up.json"))
    assert res.exit_code == 0, res.stderr
    files = [f for f in (out / "oracles").glob("*.json") if not f.name.endswith(".report.json")]
    assert len(files) == 10
    for f in files:
        text = f.read_text()
        assert "near(" not in text and "up(" not in text
        oracle = json.loads(text)
        assert oracle["plan"]
    olib = json.loads((out / "atomic_oracle_library.json").read_text())
    assert {o["id"] for o in olib["atomic_oracle_library"]} == {
        "turn_on", "close", "pick_up", "place_in", "place_on"}


def test_record_then_replay_reproduces_the_run(tmp_path):
    cache = tmp_path / "cache"
    a, b = tmp_path / "a", tmp_path / "b"
    res = invoke("all", "--tasks", TASKS, "--scenes", SCENES, "-o", str(a), "-q",
                 "--backend", f"record:{cache}@offline")
    assert res.exit_code == 0, res.stderr
    res = invoke("all", "--tasks", TASKS, "--scenes", SCENES, "-o", str(b), "-q",
                 "--backend", f"replay:{cache}")
    assert res.exit_code == 0, res.stderr
    for name in ("atomic_library.json", "atomic_oracle_library.json"):
        assert (a / name).read_text() == (b / name).read_text()
    oracles = sorted(p.name for p in (a / "oracles").glob("*.json"))
    assert oracles
    for name in oracles:
        if not name.endswith(".report.json"):
            assert (a / "oracles" / name).read_text() == (b / "oracles" / name).read_text()
