"""The `owlv2` and `grounding_dino` backends' cases (`open_vocabulary_cases.py`), run in a
process of their own with transformers on its path.

transformers 5 (what the backends are written against) cannot sit in the suite's environment:
importing it beside lerobot 0.4.4 breaks lerobot's import (requirements/python.txt). `make
test` installs it into `.deps/transformers` (`make perception-deps`, `pip --target`, no other
package: its dependencies are the venv's) and this test puts that folder first on the path of
a child pytest. Every case must pass; none may be skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPS = REPO / ".deps" / "transformers"
CASES = Path(__file__).with_name("open_vocabulary_cases.py")


@pytest.mark.slow
def test_open_vocabulary_backends_on_tiny_random_models(tmp_path: Path) -> None:
    assert (DEPS / "transformers").is_dir(), (
        f"{DEPS} holds no transformers: run `make perception-deps` (part of `make test`)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(DEPS), str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         f"--basetemp={tmp_path / 'cases'}", str(CASES)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    summary = re.search(r"(\d+) passed", out)
    functions = len(re.findall(r"^def test_", CASES.read_text(), re.M))  # some parametrized
    assert summary and int(summary.group(1)) >= functions, out[-2000:]
    assert not re.search(r"skipped|failed|error", out.splitlines()[-1]), out[-2000:]
