"""`mango.llm` holds model backends only: it imports nothing from `mango.generation`.

Every import is checked, the ones inside functions included, and no module name is built
from a string (importlib), so the generation layer can plug the offline planner in without
`llm` depending on it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mango.llm

LLM = Path(mango.llm.__file__).parent
ALLOWED = ("mango.errors", "mango.json_files", "mango.yaml_files", "mango.oracle", "mango.llm")


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}:{node.lineno}: relative import"
            out.append((node.lineno, node.module or ""))
    return out


def test_llm_imports_only_base_modules_and_oracle():
    files = sorted(LLM.rglob("*.py"))
    assert {p.name for p in files} >= {"backend.py", "registry.py", "cache.py"}
    bad = [f"{p.name}:{line}: {name}" for p in files for line, name in _imports(p)
           if (name == "mango" or name.startswith("mango."))
           and not name.startswith(ALLOWED)]
    assert not bad, bad


def test_llm_builds_no_module_names_from_strings():
    for p in sorted(LLM.rglob("*.py")):
        names = {n for _, n in _imports(p)}
        assert "importlib" not in names, p.name
        assert "__import__(" not in p.read_text(encoding="utf-8"), p.name
