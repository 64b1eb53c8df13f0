"""Language backends behind one small interface (`mango.llm.backend`).

- `openai_compat`: any OpenAI-compatible server, with structured-output fallback;
- `local`: GGUF models served by llama.cpp on loopback (`mango llm serve`);
- `cache`: record/replay of every exchange;
- `registry`: backends by name (`BackendRegistry`, `model_backends()`); the generation
  layer adds the offline planner (`mango.generation.backends`).

Nothing here imports `mango.generation`: the layers above plug their backends in.

Submodules import their heavy dependencies themselves, so importing this package is cheap.
"""
