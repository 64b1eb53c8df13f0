"""Reference pages of the documentation site, generated from the code when it is built
(`docs/hooks.py`): node parameters and endpoints, the interfaces, the CLI, the benchmarks."""
