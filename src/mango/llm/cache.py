"""Record/replay cache around any backend.

Every exchange is stored as one JSON file named by the sha256 of what determines the
answer: backend name, model, role, task, messages, context and the answer schema. A key
may be asked several times in one run (a loop that re-asks the same question); the file
keeps the answers in order and a replay hands them out in the same order, so a replayed
run sees exactly the answers, and the errors, that the recorded run saw — offline and
bit-for-bit.

Modes: `record` (always ask the wrapped backend; overwrite what is stored), `replay`
(never ask; a miss is a `CacheMiss`), `auto` (replay what is stored, ask and record the rest).

A request recorded from a simulated run carries measured numbers (positions, distances),
and MuJoCo's physics and the offscreen renderer are not bit-identical across CPUs and GL
libraries: replayed on another machine, a dropped can may lie 2 mm away. A replay that
finds no exact key therefore takes the one recorded exchange of the same backend, model,
role, task and schema whose messages and context are the same text with every number within
`NEAR_TOL` of the request's (logged as a warning); several such entries, or none, is a miss.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from mango.errors import InputError
from mango.llm.backend import ROLES, AgentCall, BackendError, LLMBackend

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

CacheMode = Literal["record", "replay", "auto"]
CACHE_MODES: tuple[CacheMode, ...] = ("record", "replay", "auto")
MANIFEST = "manifest.json"
FORMAT_VERSION = 1
NEAR_TOL = 0.01  # a replayed request's numbers may differ this much from the recorded ones
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


class CacheMiss(BackendError):
    """Replay found no recorded answer for a request."""


def canonical_json(value: Any) -> str:
    """Stable JSON text for hashing: sorted keys, no whitespace, models and paths as data."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=canonical_json)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    raise TypeError(
        f"cannot key a cache entry on a {type(value).__name__}; pass JSON-like data, "
        "pydantic models or dataclasses in AgentCall.context"
    )


def exchange_key(backend: str, model: str, call: AgentCall, schema: type[BaseModel]) -> str:
    """sha256 over everything that determines the answer."""
    material = {
        "backend": backend,
        "model": model,
        "role": call.role,
        "task": call.task,
        "messages": call.messages,
        "context": call.context,
        "schema": schema.model_json_schema(),
    }
    return hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()


def near(a: Any, b: Any, tol: float = NEAR_TOL) -> bool:
    """The same JSON-like data up to numbers (also those written inside text) within `tol`."""
    if isinstance(a, str) and isinstance(b, str):
        if _NUMBER.split(a) != _NUMBER.split(b):
            return False
        return all(abs(float(x) - float(y)) <= tol
                   for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b), strict=True))
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= tol
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(near(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(near(x, y, tol) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class CachedBackend:
    """Wraps `inner` (None for replay-only) and stores every exchange under `directory`.

    The directory's manifest names the wrapped backend and its model per role, so a replay
    computes the same keys without the backend that made the recording.
    """

    def __init__(
        self, directory: str | Path, mode: CacheMode, inner: LLMBackend | None = None
    ) -> None:
        if mode not in CACHE_MODES:
            raise InputError(f"unknown cache mode {mode!r}; use one of "
                             f"{', '.join(CACHE_MODES)}", field="mode")
        self.directory = Path(directory)
        self.mode = mode
        self.inner = inner
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        manifest = self._read_manifest()
        if inner is None:
            if mode != "replay":
                raise InputError(f"cache mode {mode!r} needs a backend to ask", field="inner")
            if manifest is None:
                raise InputError(
                    f"no recording here (missing {MANIFEST}); record one first with "
                    f"--backend record:{self.directory}",
                    file=str(self.directory),
                )
            self._backend_name = str(manifest["backend"])
            self._models: dict[str, str] = dict(manifest["models"])
        else:
            self._backend_name = inner.name
            self._models = {role: inner.model_for(role) for role in ROLES}
            if manifest is not None and manifest.get("backend") != inner.name:
                log.warning("%s was recorded with backend %r; now %r", self.directory,
                            manifest.get("backend"), inner.name)
            if mode != "replay":
                self.directory.mkdir(parents=True, exist_ok=True)
                self._write_manifest()
        self.name = self._backend_name

    # -- LLMBackend -------------------------------------------------------------------

    def model_for(self, role: str) -> str:
        if self.inner is not None:
            return self.inner.model_for(role)
        if role in self._models:
            return self._models[role]
        raise CacheMiss(f"replay {self.directory}: nothing was recorded for role {role!r}")

    @property
    def max_concurrency(self) -> int:
        return int(getattr(self.inner, "max_concurrency", 1) or 1)

    def complete(self, call: AgentCall, schema: type[T]) -> T:
        model = self.model_for(call.role)
        key = exchange_key(self._backend_name, model, call, schema)
        with self._lock:
            index = self._seen[key]
            self._seen[key] += 1
        path = self.directory / f"{key}.json"
        if self.mode != "record":
            entry = self._read_entry(path)
            if entry is None and self.mode == "replay":
                found = self._near_entry(model, call, schema)
                if found is not None:
                    path, entry = found
                    with self._lock:  # the near entry's answers are handed out in order
                        index = self._seen[entry["key"]]
                        self._seen[entry["key"]] += 1
            answers = entry["answers"] if entry else []
            if index < len(answers):
                with self._lock:
                    self.hits += 1
                return self._replay(answers[index], schema, path)
            if self.mode == "replay":
                with self._lock:
                    self.misses += 1
                recorded = f"only {len(answers)} recorded" if answers else "none recorded"
                raise CacheMiss(
                    f"replay {self.directory}: no answer #{index + 1} for {call.role} task "
                    f"{call.task!r} with model {model!r} (key {key[:12]}, {recorded}); "
                    "the request differs from the recorded run — re-record it with "
                    f"record:{self.directory}"
                )
        assert self.inner is not None
        with self._lock:
            self.misses += 1
            if self._models.get(call.role) != model:
                self._models[call.role] = model
                self._write_manifest()
        try:
            value = self.inner.complete(call, schema)
        except BackendError as exc:
            self._store(path, key, index, call, model, schema, {"error": str(exc)})
            raise
        self._store(path, key, index, call, model, schema,
                    {"value": value.model_dump(mode="json")})
        return value

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    # -- storage ----------------------------------------------------------------------

    def _replay(self, answer: dict[str, Any], schema: type[T], path: Path) -> T:
        if "error" in answer:
            raise BackendError(str(answer["error"]))
        try:
            return schema.model_validate(answer["value"])
        except (KeyError, ValueError) as exc:
            raise BackendError(
                f"{path}: the recorded answer no longer fits {schema.__name__}: {exc}"
            ) from exc

    def _store(
        self,
        path: Path,
        key: str,
        index: int,
        call: AgentCall,
        model: str,
        schema: type[BaseModel],
        answer: dict[str, Any],
    ) -> None:
        with self._lock:
            entry = self._read_entry(path) if (self.mode == "auto" or index > 0) else None
            if entry is None:
                entry = {
                    "version": FORMAT_VERSION,
                    "key": key,
                    "backend": self._backend_name,
                    "model": model,
                    "role": call.role,
                    "task": call.task,
                    "schema": schema.__name__,
                    "messages": call.messages,
                    "context": json.loads(canonical_json(call.context)),
                    "answers": [],
                }
            answers = entry["answers"][:index]
            answers.append(answer)
            entry["answers"] = answers
            _atomic_write(path, json.dumps(entry, indent=1, ensure_ascii=False))

    def _near_entry(self, model: str, call: AgentCall, schema: type[BaseModel]
                    ) -> tuple[Path, dict[str, Any]] | None:
        """The one recorded exchange this request matches up to its numbers (module doc)."""
        context = json.loads(canonical_json(call.context))
        messages = json.loads(canonical_json(call.messages))
        found = []
        for path in sorted(self.directory.glob("*.json")):
            if path.name == MANIFEST:
                continue
            entry = self._read_entry(path)
            if entry is None or (entry.get("backend"), entry.get("model"), entry.get("role"),
                                 entry.get("task"), entry.get("schema")) != (
                    self._backend_name, model, call.role, call.task, schema.__name__):
                continue
            if near(entry.get("messages"), messages) and near(entry.get("context"), context):
                found.append((path, entry))
        if len(found) != 1:
            return None
        log.warning("replay %s: %s task %r matched a recorded request whose numbers differ "
                    "by at most %g (%s)", self.directory, call.role, call.task, NEAR_TOL,
                    found[0][0].name)
        return found[0]

    def _read_entry(self, path: Path) -> dict[str, Any] | None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"corrupt cache entry: {exc.msg}", file=str(path),
                             line=exc.lineno, column=exc.colno) from exc
        if not isinstance(entry, dict) or not isinstance(entry.get("answers"), list):
            raise InputError("corrupt cache entry: no 'answers' list", file=str(path),
                             field="answers")
        return entry

    def _read_manifest(self) -> dict[str, Any] | None:
        path = self.directory / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as exc:
            raise InputError(f"corrupt manifest: {exc.msg}", file=str(path), line=exc.lineno,
                             column=exc.colno) from exc
        for name, kind in (("backend", str), ("models", dict)):
            if not isinstance(data.get(name), kind):
                raise InputError(f"missing or not a {kind.__name__}", file=str(path),
                                 field=name)
        return data

    def _write_manifest(self) -> None:
        data = {"version": FORMAT_VERSION, "backend": self._backend_name, "models": self._models}
        _atomic_write(self.directory / MANIFEST, json.dumps(data, indent=1, sort_keys=True))


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
