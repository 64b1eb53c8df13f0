"""Output a person reads: no raw Python values (`None`, `True`/`False`, a float's long repr),
tables instead of dicts, table cells folded rather than cut, progress instead of a line per
run, and a language-model backend that says what it is and what to expect."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "test/data/generation"
TASKS, SCENES = GEN / "libero10_tasks.json", GEN / "libero10_scenes.json"
RAW = re.compile(r"\bNone\b|\bTrue\b|\bFalse\b|\d+\.\d{5,}|\{'")
runner = CliRunner()


def _ok(args: list[str], width: int = 100) -> tuple[str, str]:
    result = runner.invoke(app, args, env={"COLUMNS": str(width)})
    assert result.exit_code == 0, (args, result.stdout, result.stderr, result.exception)
    return result.stdout, result.stderr


def _readable(text: str) -> None:
    found = RAW.search(text)
    assert found is None, f"raw value {found.group(0)!r} in:\n{text}"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "all"
    _ok(["generate", "all", "--tasks", str(TASKS), "--scenes", str(SCENES), "-o", str(out),
         "-q"])
    return out


def test_generate_score_prints_tables_with_whole_words(generated: Path) -> None:
    out, _ = _ok(["generate", "score", str(generated), "--truth", str(ROOT / "config/oracles"),
                  "--scenes", str(SCENES)], width=90)
    _readable(out)
    assert "generated oracles" in out and "summary" in out
    assert re.search(r"validity\s+│\s+100%", out) and re.search(r"executability\s+│\s+100%",
                                                                 out)
    assert re.search(r"module 1: iterations, seconds\s+│\s+1, \d+\.\d\d", out)
    # every word of every instruction is in the table whole (rich wraps between words)
    cells = " ".join(re.findall(r"^│ (.*?) │", out, flags=re.M))
    for instruction in ("put both the alphabet soup and the tomato sauce in the basket",
                        "put the yellow and white mug in the microwave and close it"):
        for word in instruction.split():
            assert re.search(rf"\b{re.escape(word)}\b", cells), (word, out)
    assert "…" not in out


def test_generate_score_without_scenes_says_executability_was_not_checked(
        generated: Path) -> None:
    out, _ = _ok(["generate", "score", str(generated)], width=120)
    _readable(out)
    assert "not checked (give --scenes)" in out


def test_sim_eval_shows_a_table_not_a_line_per_seed() -> None:
    out, err = _ok(["sim", "eval", "--scene", "book_caddy", "--seeds", "2"])
    _readable(out + err)
    assert "seed 0:" not in out + err and "seed 1:" not in out + err
    assert re.search(r"libero10_book_caddy\s+│ 2/2\s+│ 2/2\s+│ 2/2", out), out


def test_sim_run_and_oracle_check_print_rounded_times(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    out, err = _ok(["sim", "run", "--scene", "book_caddy", "--fault", "drop@0.5", "--trace",
                    str(trace)])
    _readable(out + err)
    said = " ".join(out.split())  # rich wraps long lines
    assert re.search(r"ground truth: incomplete at step 1\.3 \(t = \d+\.\d\d s\)", said), out
    checked, _ = _ok(["oracle", "check", str(ROOT / "config/oracles/libero10_book_caddy.json"),
                      str(trace)])
    _readable(checked)
    assert "FAIL" in checked


def test_a_language_backend_names_its_model_and_shows_each_call(tmp_path: Path,
                                                                 monkeypatch) -> None:
    sys.path.insert(0, str(ROOT / "test/generation"))
    from test_http_backend import PlannerChatServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = PlannerChatServer()
    try:
        _, err = _ok(["generate", "library", "--tasks", str(TASKS), "-o", str(tmp_path / "l"),
                      "--backend", "openai", "--model", "planner-over-http", "--opt",
                      f"base_url={server.url}"])
    finally:
        server.close()
    assert "backend: openai, model planner-over-http" in err
    calls = re.findall(r"agent call (\d+): (\w+) (module\d\.[\w.]+): \d+\.\d s", err)
    assert len(calls) == len(server.requests) > 0, err
    # numbered as they start; parallel assessors may finish out of order
    assert sorted(int(n) for n, _, _ in calls) == list(range(1, len(calls) + 1))
    assert {"generator", "judge"} <= {role for _, role, _ in calls}


def test_the_local_backend_says_what_to_expect_before_loading_the_model(tmp_path: Path) -> None:
    result = runner.invoke(app, ["generate", "library", "--tasks", str(TASKS), "-o",
                                 str(tmp_path / "l"), "--backend", "local", "--model",
                                 str(tmp_path / "none.gguf")])
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert f"backend: local llama.cpp, model {tmp_path / 'none.gguf'}. Expect minutes" in said
    assert "3 min 17 s" in said and "error:" in said
