"""The backends a generation run may use: the model backends of `mango.llm` and the offline
planner, which is the default and what `record:DIR` wraps unless told otherwise.

The offline planner is generation logic (rules over this package's models), so it is
registered here rather than in `mango.llm`, which knows nothing of generation.
"""

from __future__ import annotations

from typing import Any

from mango.errors import InputError
from mango.generation.fallback import ReaderFirstBackend
from mango.generation.offline.planner import OfflinePlanner
from mango.llm.backend import LLMBackend
from mango.llm.registry import BackendRegistry, model_backends

DEFAULT_BACKEND = "offline"


def _offline(model: str | None, opts: dict[str, Any]) -> LLMBackend:
    """The offline planner; with option `fallback=NAME` (e.g. `local`), the calls it refuses
    go to that backend, built with the remaining options (`generation.fallback`)."""
    fallback = opts.pop("fallback", None)
    if not fallback:
        return OfflinePlanner(**opts)
    if fallback == DEFAULT_BACKEND:
        raise InputError("fallback=offline would hand the offline planner its own refusals; "
                         "name a model backend (local, openai)", field="fallback")
    return ReaderFirstBackend(OfflinePlanner(), generation_backends().make(fallback, model,
                                                                          **opts))


def generation_backends() -> BackendRegistry:
    """`mango.llm`'s model backends plus `offline` (the default inner backend of a cache)."""
    return BackendRegistry({DEFAULT_BACKEND: _offline, **model_backends().factories},
                           default_inner=DEFAULT_BACKEND)


def make_backend(name: str = DEFAULT_BACKEND, model: str | None = None,
                 **opts: Any) -> LLMBackend:
    """Build a generation backend by name (`offline`, `openai`, `local`, `record:DIR`, ...)."""
    return generation_backends().make(name, model, **opts)


def backend_names() -> list[str]:
    """Every name `make_backend` accepts."""
    return generation_backends().names()
