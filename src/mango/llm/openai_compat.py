"""OpenAI-compatible chat backend (OpenAI, vLLM, Ollama, llama.cpp, llama-cpp-python, ...).

Real servers differ in how they enforce structured output, so each call walks down a
ladder until one works and the backend remembers, per model, where it got to:

1. `response_format={"type": "json_schema", ...}` (OpenAI, vLLM, llama.cpp's own server);
2. `response_format={"type": "json_object", "schema": ...}` (llama-cpp-python, Ollama);
3. no response format: the schema goes into the prompt and the answer is validated.

Every answer is validated against the pydantic schema; an invalid one is repaired (code
fences and prose stripped) or re-asked with the validation error, a bounded number of
times. Transport failures (timeouts, refused connections, 429, 5xx) are retried with
exponential backoff that honours `Retry-After`. The `openai` client's own retries are
switched off so that this policy is the only one.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import openai
from pydantic import BaseModel

from mango.errors import InputError
from mango.llm.backend import AgentCall, BackendError
from mango.llm.structured import parse_answer, repair_prompt, schema_instruction

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

StructuredMode = Literal["json_schema", "json_object", "prompt"]
MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "prompt")

# Words in an error body that show the server refused the response format (llama-cpp-python
# answers HTTP 500 "response_format type must be one of ..."), not that it is broken.
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|schema|grammar", re.I)


@dataclass
class OpenAICompatConfig:
    """How to reach one OpenAI-compatible server and how patient to be with it."""

    base_url: str
    model: str
    role_models: dict[str, str] = field(default_factory=dict)
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int | None = 1024
    seed: int | None = None
    timeout_s: float = 120.0
    max_concurrency: int = 4
    max_retries: int = 4
    backoff_s: float = 0.5
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0
    repair_attempts: int = 2
    # frequency_penalty for the re-ask after an answer was cut off at max_tokens (0: none)
    loop_penalty: float = 0.5
    structured: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    extra_body: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        checks: list[tuple[str, bool, str]] = [
            ("base_url", bool(self.base_url), "must not be empty"),
            ("model", bool(self.model), "must not be empty"),
            ("timeout_s", self.timeout_s > 0, "must be > 0"),
            ("max_concurrency", self.max_concurrency >= 1, "must be >= 1"),
            ("max_retries", self.max_retries >= 0, "must be >= 0"),
            ("repair_attempts", self.repair_attempts >= 0, "must be >= 0"),
            ("backoff_s", self.backoff_s >= 0, "must be >= 0"),
            ("loop_penalty", 0.0 <= self.loop_penalty <= 2.0, "must be within [0, 2]"),
            ("temperature", 0.0 <= self.temperature <= 2.0, "must be within [0, 2]"),
            ("max_tokens", self.max_tokens is None or self.max_tokens > 0, "must be > 0"),
            ("structured", self.structured in ("auto", *MODES),
             f"must be one of auto, {', '.join(MODES)}"),
        ]
        for name, ok, msg in checks:
            if not ok:
                raise InputError(f"{msg} (got {getattr(self, name)!r})", field=name)


@dataclass
class BackendStats:
    """Counters for reports and benchmarks (updated under the backend's lock)."""

    calls: int = 0
    requests: int = 0
    retries: int = 0
    repairs: int = 0
    fallbacks: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    modes: dict[str, int] = field(default_factory=dict)


class _FormatRejected(Exception):
    """The server refused this structured-output mode; try the next one."""


@dataclass(frozen=True)
class _Answer:
    text: str | None
    finish_reason: str | None


class OpenAICompatBackend:
    """`LLMBackend` over any OpenAI-compatible chat-completions server.

    Thread-safe: agents may call `complete` from many threads; at most `max_concurrency`
    requests are in flight at once.
    """

    def __init__(self, config: OpenAICompatConfig, *, name: str = "openai") -> None:
        self.config = config
        self.name = name
        self.max_concurrency = config.max_concurrency
        self.stats = BackendStats()
        api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        # Local servers need no key, but the client insists on a non-empty string.
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed",
            base_url=config.base_url,
            max_retries=0,
            timeout=config.timeout_s,
        )
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._lock = threading.Lock()
        self._modes: dict[str, StructuredMode] = {}
        self._rng = random.Random()

    # -- LLMBackend -------------------------------------------------------------------

    def model_for(self, role: str) -> str:
        return self.config.role_models.get(role, self.config.model)

    def complete(self, call: AgentCall, schema: type[T]) -> T:
        model = self.model_for(call.role)
        start = time.perf_counter()
        with self._lock:
            self.stats.calls += 1
        rejections: list[str] = []
        try:
            for mode in self._ladder(model):
                try:
                    value = self._complete_in_mode(call, schema, model, mode)
                except _FormatRejected as exc:
                    rejections.append(f"{mode}: {exc}")
                    log.info("%s rejected %s output (%s); falling back", self._where(model),
                             mode, exc)
                    with self._lock:
                        self.stats.fallbacks += 1
                    continue
                with self._lock:
                    if self._modes.get(model) != mode:
                        log.info("%s: using %s structured output", self._where(model), mode)
                    self._modes[model] = mode
                    self.stats.modes[mode] = self.stats.modes.get(mode, 0) + 1
                return value
        except BackendError:
            with self._lock:
                self.stats.failures += 1
            raise
        finally:
            with self._lock:
                self.stats.seconds += time.perf_counter() - start
        with self._lock:
            self.stats.failures += 1
        raise BackendError(
            f"{self._where(model)}: the server rejected every structured-output mode "
            f"({'; '.join(rejections)})"
        )

    def structured_mode(self, model: str | None = None) -> StructuredMode | None:
        """The mode that last worked for `model` (default model if None), if any."""
        with self._lock:
            return self._modes.get(model or self.config.model)

    def close(self) -> None:
        self._client.close()

    # -- internals --------------------------------------------------------------------

    def _where(self, model: str) -> str:
        return f"{self.name} server {self.config.base_url} (model {model!r})"

    def _ladder(self, model: str) -> tuple[StructuredMode, ...]:
        if self.config.structured != "auto":
            return (self.config.structured,)
        with self._lock:
            known = self._modes.get(model)
        return MODES[MODES.index(known):] if known else MODES

    def _complete_in_mode(
        self, call: AgentCall, schema: type[T], model: str, mode: StructuredMode
    ) -> T:
        messages = _with_schema_note(call.messages, schema) if mode != "json_schema" else [
            dict(m) for m in call.messages
        ]
        response_format = _response_format(mode, schema)
        base_messages = messages
        attempts = 1 + self.config.repair_attempts
        error = ""
        penalty: float | None = None
        for attempt in range(attempts):
            answer = self._request(call, model, messages, response_format, penalty)
            result = parse_answer(answer.text, schema)
            if result.value is not None:
                return result.value
            error = result.error or "invalid answer"
            truncated = answer.finish_reason == "length"
            if truncated:
                error += f" (the answer was cut off at max_tokens={self.config.max_tokens})"
            log.warning("%s: invalid %s for %s/%s (answer %d/%d): %s", self._where(model),
                        schema.__name__, call.role, call.task, attempt + 1, attempts, error)
            if attempt + 1 < attempts:
                with self._lock:
                    self.stats.repairs += 1
                follow_up = repair_prompt(error, truncated=truncated)
                if mode == "json_schema":
                    # The model has not seen the schema as text in this mode.
                    follow_up += "\n" + schema_instruction(schema)
                if truncated:
                    # A cut-off answer is usually a model repeating itself inside a string:
                    # do not show it the loop again, and penalise repetition this time.
                    messages = [*base_messages, {"role": "user", "content": follow_up}]
                    penalty = self.config.loop_penalty
                else:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": answer.text or ""},
                        {"role": "user", "content": follow_up},
                    ]
        raise BackendError(
            f"{self._where(model)}: no valid {schema.__name__} for {call.role} task "
            f"{call.task!r} after {attempts} answer{'s' if attempts > 1 else ''} "
            f"({mode} mode): {error}"
        )

    def _request(
        self,
        call: AgentCall,
        model: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        frequency_penalty: float | None = None,
    ) -> _Answer:
        cfg = self.config
        kwargs: dict[str, Any] = {"model": model, "messages": messages,
                                  "temperature": cfg.temperature}
        if frequency_penalty:
            kwargs["frequency_penalty"] = frequency_penalty
        if cfg.max_tokens is not None:
            kwargs["max_tokens"] = cfg.max_tokens
        if cfg.seed is not None:
            kwargs["seed"] = cfg.seed
        if response_format is not None:
            kwargs["response_format"] = response_format
        if cfg.extra_body:
            kwargs["extra_body"] = cfg.extra_body
        reason = ""
        for attempt in range(cfg.max_retries + 1):
            delay = self._backoff(attempt)
            try:
                with self._slots:
                    with self._lock:
                        self.stats.requests += 1
                    response = self._client.chat.completions.create(**kwargs)
            except openai.APITimeoutError:
                reason = f"request timed out after {cfg.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                reason = f"could not connect ({type(cause).__name__}: {cause})"
            except openai.APIStatusError as exc:
                status = exc.status_code
                detail = _error_detail(exc)
                if response_format is not None and _rejects_format(status, detail):
                    raise _FormatRejected(f"HTTP {status}: {detail}") from exc
                if status not in (408, 409, 429) and status < 500:
                    raise BackendError(
                        f"{self._where(model)}: HTTP {status} for {call.role} task "
                        f"{call.task!r}: {detail}{self._hint(status)}"
                    ) from exc
                reason = f"HTTP {status}: {detail}"
                retry_after = _retry_after(exc.response)
                if retry_after is not None:
                    delay = min(retry_after, cfg.retry_after_max_s)
            else:
                return self._answer(response, model)
            if attempt == cfg.max_retries:
                break
            with self._lock:
                self.stats.retries += 1
            log.warning("%s: %s; retry %d/%d in %.2f s", self._where(model), reason,
                        attempt + 1, cfg.max_retries, delay)
            time.sleep(delay)
        raise BackendError(
            f"{self._where(model)}: {reason} (gave up after {cfg.max_retries + 1} "
            f"attempt{'s' if cfg.max_retries else ''}) for {call.role} task {call.task!r}"
        )

    def _answer(self, response: Any, model: str) -> _Answer:
        choices = getattr(response, "choices", None)
        if not choices:
            raise BackendError(f"{self._where(model)}: the response has no choices")
        usage = getattr(response, "usage", None)
        if usage is not None:
            with self._lock:
                self.stats.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
                self.stats.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        choice = choices[0]
        message = choice.message
        text = message.content
        refusal = getattr(message, "refusal", None)
        if text is None and refusal:
            text = f"(refused: {refusal})"
        return _Answer(text, choice.finish_reason)

    def _backoff(self, attempt: int) -> float:
        base = min(self.config.backoff_max_s, self.config.backoff_s * (2**attempt))
        # Jitter keeps parallel assessors from retrying in lock-step.
        return base * (0.75 + 0.5 * self._rng.random())

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            env = self.config.api_key_env
            if env and not os.environ.get(env):
                return f" (the API key is read from ${env}, which is not set)"
            return f" (check the API key in ${env})" if env else " (the server wants a key)"
        if status == 404:
            return " (check base_url, which usually ends in /v1, and the model name)"
        return ""


def _response_format(mode: StructuredMode, schema: type[BaseModel]) -> dict[str, Any] | None:
    if mode == "prompt":
        return None
    json_schema = schema.model_json_schema()
    if mode == "json_object":
        return {"type": "json_object", "schema": json_schema}
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"
    return {"type": "json_schema",
            "json_schema": {"name": name, "schema": json_schema, "strict": False}}


def _with_schema_note(
    messages: list[dict[str, str]], schema: type[BaseModel]
) -> list[dict[str, str]]:
    """Put the schema instruction into the (single, leading) system message."""
    note = schema_instruction(schema)
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content', '')}\n\n{note}".strip()
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


def _rejects_format(status: int, detail: str) -> bool:
    if status in (400, 415, 422):
        return True
    return status >= 500 and bool(_FORMAT_WORDS.search(detail))


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
        if isinstance(inner, str):
            return inner[:300]
        return json.dumps(body)[:300]
    try:
        text = exc.response.text
    except Exception:
        text = ""
    return (text or str(exc.message))[:300]


def _retry_after(response: Any) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
