"""Language backends behind one small interface (`mango.llm.backend`).

- `openai_compat`: any OpenAI-compatible server, with structured-output fallback;
- `local`: GGUF models served by llama.cpp on loopback (`mango llm serve`);
- `offline`: the deterministic offline planner (rules, not a language model);
- `cache`: record/replay of every exchange;
- `registry.make_backend(name, model, **opts)`: the one place that picks a backend.

Submodules import their heavy dependencies themselves, so importing this package is cheap.
"""
