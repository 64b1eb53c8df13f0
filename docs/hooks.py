"""MkDocs hook: a page that holds `<!-- generate: NAME -->` gets, in its place, the page part
NAME generated from the code (scripts/docgen): the reference cannot drift from what it
describes, and every link in it is checked like the rest of the site."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from docgen.bench import benchmarks_page
from docgen.cli import cli_page
from docgen.formats import formats_page
from docgen.interfaces import interfaces_page
from docgen.nodes import nodes_page

GENERATORS: dict[str, Callable[[], str]] = {
    "nodes": nodes_page, "cli": cli_page, "interfaces": interfaces_page,
    "formats": formats_page, "benchmarks": benchmarks_page,
}
MARK = re.compile(r"<!-- generate: (\w+) -->")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    def generated(m: re.Match[str]) -> str:
        if m.group(1) not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: no generator '{m.group(1)}' "
                             f"(known: {', '.join(GENERATORS)})")
        return GENERATORS[m.group(1)]()

    return MARK.sub(generated, markdown)
