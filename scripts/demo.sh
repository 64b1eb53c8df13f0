#!/usr/bin/env bash
# The main job on the embedded default. Run through `make demo` (which sets up the venv).
set -euo pipefail
cd "$(dirname "$0")/.."
mango doctor
