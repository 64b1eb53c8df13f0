"""The documentation site builds strictly (a warning, a broken link or a missing anchor fails
it, as `make docs` builds it) and its generated pages are there; a broken link does fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from docgen.nodes import node_executables  # noqa: E402


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # not `-q`: it hides the warnings from the count that --strict fails on
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), "-d", str(site)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parallel
def test_the_site_builds_strictly_with_its_generated_pages(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    nodes = (tmp_path / "site/reference/nodes/index.html").read_text()
    for name in node_executables():
        assert f"<code>{name}</code>" in nodes, name
    cli = (tmp_path / "site/reference/cli/index.html").read_text()
    assert "mango oracle check" in cli and "--exit-code" in cli
    interfaces = (tmp_path / "site/reference/interfaces/index.html").read_text()
    assert "mango_ros/msg/WorldState" in interfaces
    bench = (tmp_path / "site/benchmarks/index.html").read_text()
    assert "python bench/bench_oracle.py" in bench
    start = (tmp_path / "site/getting-started/index.html").read_text()
    assert 'id="judge-a-run-replay-a-bag"' in start
    assert (tmp_path / "site/assets/run_timeline.png").is_file()


@pytest.mark.parallel
def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    page = docs / "getting-started.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md), [nowhere](#no-such-anchor)\n")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["docs_dir"] = str(docs)
    config["hooks"] = [str(ROOT / "docs" / "hooks.py")]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert re.search(r"no-such-page\.md", out) and "no-such-anchor" in out, out
