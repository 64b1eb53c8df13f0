"""The interface files under msg/, srv/ and action/, as they are: the page shows each file's
text, so a field documented here is a field the package builds."""

from __future__ import annotations

from pathlib import Path

from docgen.nodes import ROOT

KINDS = (("msg", "Messages"), ("srv", "Services"), ("action", "Actions"))


def interface_files(root: Path = ROOT) -> list[Path]:
    return [f for kind, _ in KINDS for f in sorted((root / kind).glob(f"*.{kind}"))]


def interfaces_page(root: Path = ROOT) -> str:
    """Every interface file's text, one section per kind."""
    lines = ["The definitions below are read from the package's interface files when the site "
             "is built.", ""]
    for kind, title in KINDS:
        lines += [f"## {title}", ""]
        for f in sorted((root / kind).glob(f"*.{kind}")):
            lines += [f"### `mango_ros/{kind}/{f.stem}`", "", "```text",
                      f.read_text().rstrip(), "```", ""]
    return "\n".join(lines)
