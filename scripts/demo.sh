#!/usr/bin/env bash
# The main job on the embedded default: a LIBERO-10 task in the MuJoCo sim, run by the
# scripted expert, judged live by the oracle node, recorded to an MCAP bag.
# `make demo` runs it; `make demo FAULT=drop@0.5` (or SCENE=..., SEED=...) shows a localized
# failure; `make demo VIEWS=1` also records what the rviz/Foxglove layouts show.
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--scene "${SCENE:-libero10_soup_sauce_basket}" --seed "${SEED:-0}")
[ -n "${FAULT:-}" ] && args+=(--fault "$FAULT")
[ -n "${VIEWS:-}" ] && args+=(--record-views)
exec mango demo "${args[@]}"
