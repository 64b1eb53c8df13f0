"""`mango llm serve` and `mango llm models` as a user runs them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest
from typer.testing import CliRunner

from mango.cli.main import app

runner = CliRunner()


def test_models_lists_the_offline_qwen(tmp_path):
    (tmp_path / "extra-model.gguf").write_bytes(b"GGUF")
    result = runner.invoke(app, ["llm", "models", "--dir", str(tmp_path)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "qwen0.5b" in result.output and "installed" in result.output
    assert "extra-model.gguf" in result.output



@pytest.mark.parametrize("kind", ["file", "device"])
def test_models_dir_that_is_no_folder_is_one_error_line(tmp_path, kind):
    """A --dir that is a file or a device listed the known models as if it were an empty folder,
    exit 0 (issue #41): it is refused, naming it."""
    path = "/dev/zero" if kind == "device" else str(tmp_path / "m.gguf")
    if kind == "file":
        (tmp_path / "m.gguf").write_bytes(b"GGUF")
    result = runner.invoke(app, ["llm", "models", "--dir", path])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"error: {path}, field '--dir': not a folder (the model directory "
                             "holds .gguf files)\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [(["llm", "serve", "/nonexistent/model.gguf"], "no such model file"),
     (["llm", "serve", "qwen0.5b", "--port", "70000"], "field '--port'"),
     (["llm", "serve", "qwen0.5b", "--ctx", "16"], "field '--ctx'")],
)
def test_serve_bad_input_exits_2_with_one_line(args, message):
    result = subprocess.run([sys.executable, "-m", "mango.cli.main", *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_serve_answers_chat_completions_until_interrupted():
    env = {**os.environ, "COLUMNS": "300"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mango.cli.main", "llm", "serve", "qwen0.5b", "--port", "0",
         "--threads", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+/v1)", line)
        assert match, line + proc.stderr.read() if proc.poll() is not None else line
        base = match.group(1)
        r = httpx.post(f"{base}/chat/completions", timeout=60, json={
            "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4})
        assert r.status_code == 200
        assert r.json()["object"] == "chat.completion"
    finally:
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "stopped" in proc.stdout.read()
