"""Append the project's environment block to a venv's activate script (idempotent)."""

from __future__ import annotations

import sys
from pathlib import Path

BEGIN = "# >>> mango_ros >>>"
END = "# <<< mango_ros <<<"


def main(venv: str, env_file: str) -> None:
    repo = Path(env_file).resolve().parent.parent
    block = Path(env_file).read_text().replace("@REPO@", str(repo))
    activate = Path(venv) / "bin" / "activate"
    text = activate.read_text()
    if BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        text = head.rstrip("\n") + "\n" + tail.lstrip("\n")
    activate.write_text(f"{text.rstrip()}\n{BEGIN}\n{block.rstrip()}\n{END}\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
