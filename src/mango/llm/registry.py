"""Choosing a model backend by configuration — backends are registered by name.

A `BackendRegistry` maps names to factories; `model_backends()` holds the language-model
backends of this package:
- `openai`: any OpenAI-compatible server (`base_url` option, else `$MANGO_LLM_BASE_URL`,
  else api.openai.com; the key from `$OPENAI_API_KEY` or the variable named by
  `api_key_env`);
- `local`: a GGUF model (`qwen0.5b` by default, or a path) served by llama.cpp on loopback.
Any registry also accepts the record/replay cache around one of its names:
`record:DIR[@NAME]`, `auto:DIR[@NAME]` (NAME defaults to the `inner` option, else the
registry's `default_inner`); `replay:DIR` replays DIR without any backend. Layers above add
their own names (the generation layer adds the offline planner and makes it the default).

Options may arrive as strings (command line, environment); they are converted to the
types of `OpenAICompatConfig` with errors naming the option.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mango.errors import InputError
from mango.llm.backend import ROLES, LLMBackend
from mango.llm.cache import CACHE_MODES, CachedBackend

BackendFactory = Callable[[str | None, dict[str, Any]], LLMBackend]

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"


def _openai(model: str | None, opts: dict[str, Any]) -> LLMBackend:
    from mango.llm.openai_compat import OpenAICompatBackend, OpenAICompatConfig

    opts = dict(opts)
    base_url = opts.pop("base_url", None) or os.environ.get("MANGO_LLM_BASE_URL")
    model = model or opts.pop("model", None) or os.environ.get("MANGO_LLM_MODEL")
    if not model:
        raise InputError("the openai backend needs a model (--model or $MANGO_LLM_MODEL)",
                         field="model")
    if "role_models" not in opts and os.environ.get("MANGO_LLM_ROLE_MODELS"):
        opts["role_models"] = os.environ["MANGO_LLM_ROLE_MODELS"]
    config = _build(OpenAICompatConfig, {"base_url": base_url or DEFAULT_OPENAI_URL,
                                         "model": model, **opts})
    return OpenAICompatBackend(config)


def _local(model: str | None, opts: dict[str, Any]) -> LLMBackend:
    from mango.llm.local import LocalBackend
    from mango.llm.openai_compat import OpenAICompatConfig

    opts = dict(opts)
    server_opts = {k: _coerce(k, opts.pop(k), int) for k in ("n_ctx", "threads", "parallel")
                   if k in opts}
    spec = model or os.environ.get("MANGO_LLM_LOCAL_MODEL") or "qwen0.5b"
    fields = {f.name for f in dataclasses.fields(OpenAICompatConfig)} - {"base_url", "model"}
    _reject_unknown(opts, fields | {"n_ctx", "threads", "parallel"}, "local")
    config = {k: v for k, v in _build(OpenAICompatConfig, {"base_url": "-", "model": "-",
                                                           **opts}).__dict__.items()
              if k in opts}
    return LocalBackend(spec, **server_opts, **config)


@dataclass
class BackendRegistry:
    """Backend names and their factories, plus the cache wrappers around any of them."""

    factories: dict[str, BackendFactory] = field(default_factory=dict)
    # what `record:DIR` / `auto:DIR` wrap when neither `@NAME` nor the `inner` option says
    default_inner: str | None = None

    def register(self, name: str, factory: BackendFactory) -> None:
        """Add a backend name; `factory(model, opts)` builds it."""
        if ":" in name or "@" in name or not name:
            raise ValueError(f"backend names may not contain ':' or '@' (got {name!r})")
        self.factories[name] = factory

    def names(self) -> list[str]:
        """Every name `make` accepts (cache wrappers shown as patterns)."""
        return [*self.factories, "record:DIR[@NAME]", "auto:DIR[@NAME]", "replay:DIR"]

    def knows(self, name: str) -> bool:
        """Whether `make` accepts `name` (checked before a campaign runs, without building)."""
        prefix, sep, _ = name.partition(":")
        return (bool(sep) and prefix in CACHE_MODES) or name in self.factories

    def make(self, name: str, model: str | None = None, **opts: Any) -> LLMBackend:
        """Build the backend `name` (see the module docstring) with `model` and options."""
        prefix, sep, rest = name.partition(":")
        if sep and prefix in CACHE_MODES:
            return self._cached(prefix, rest, model, opts)
        factory = self.factories.get(name)
        if factory is None:
            raise InputError(f"unknown backend {name!r}; use one of {', '.join(self.names())}",
                             field="backend")
        return factory(model, opts)

    def _cached(self, mode: str, rest: str, model: str | None, opts: dict[str, Any]
                ) -> LLMBackend:
        directory, inner_name = self._split_inner(rest, opts.pop("inner", None))
        if not directory:
            raise InputError(f"{mode}: needs a directory, e.g. {mode}:runs/cache",
                             field="backend")
        if mode == "replay" and inner_name is None:
            cached = CachedBackend(directory, "replay")
            if model is not None:
                recorded = {cached.model_for(r) for r in ROLES}
                if model not in recorded:
                    raise InputError(
                        f"{directory} was recorded with model(s) {', '.join(sorted(recorded))}, "
                        f"not {model!r}; drop --model to replay it", field="model")
            return cached
        inner_name = inner_name or self.default_inner
        if inner_name is None:
            raise InputError(f"{mode}:DIR needs the backend it wraps: {mode}:DIR@NAME with "
                             f"NAME one of {', '.join(self.factories)}", field="backend")
        inner = self.make(inner_name, model, **opts)
        return CachedBackend(directory, mode, inner)  # type: ignore[arg-type]

    def _split_inner(self, rest: str, inner_opt: str | None) -> tuple[str, str | None]:
        directory, at, tail = rest.rpartition("@")
        if at and tail in self.factories:
            return directory, tail
        if inner_opt is not None and inner_opt not in self.factories:
            raise InputError(f"unknown inner backend {inner_opt!r}; use one of "
                             f"{', '.join(self.factories)}", field="inner")
        return rest, inner_opt


def model_backends() -> BackendRegistry:
    """A registry of the language-model backends of this package: openai and local."""
    return BackendRegistry({"openai": _openai, "local": _local})


def make_backend(name: str, model: str | None = None, **opts: Any) -> LLMBackend:
    """Build one of `model_backends()` (or a cache around one) by name."""
    return model_backends().make(name, model, **opts)


def backend_names() -> list[str]:
    """Every name `make_backend` accepts."""
    return model_backends().names()


def _reject_unknown(opts: dict[str, Any], known: set[str], backend: str) -> None:
    unknown = sorted(set(opts) - known)
    if unknown:
        raise InputError(f"unknown option(s) {', '.join(unknown)} for the {backend} backend; "
                         f"known: {', '.join(sorted(known))}", field=unknown[0])


def _build(cls: type, values: dict[str, Any]) -> Any:
    """Instantiate a config dataclass from loosely typed values (strings from a CLI)."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    _reject_unknown(values, known, cls.__name__)
    converted = {k: _coerce(k, v, hints[k]) for k, v in values.items()}
    return cls(**converted)


def _coerce(name: str, value: Any, hint: Any) -> Any:
    if not isinstance(value, str):
        return value
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        if value.lower() in ("", "none", "null"):
            return None
        hint, origin = args[0], typing.get_origin(args[0])
    try:
        if hint is int:
            return int(value)
        if hint is float:
            return float(value)
        if hint is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if origin is dict:
            # "generator=gpt-4o,judge=gpt-4o-mini"
            pairs = [p.split("=", 1) for p in value.split(",") if p.strip()]
            if any(len(p) != 2 for p in pairs):
                raise ValueError(value)
            return {k.strip(): v.strip() for k, v in pairs}
    except ValueError:
        raise InputError(f"cannot read {value!r} as {getattr(hint, '__name__', hint)}",
                         field=name) from None
    return value
