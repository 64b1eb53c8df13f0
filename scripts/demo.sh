#!/usr/bin/env bash
# The main job on the embedded default, in two parts:
# 1. an orchestrated LIBERO-10 task (`mango task run`, mode full, the fine-grained oracle as
#    the completion monitor, the offline decider) whose VLA picks the wrong object: the
#    timeline shows the mistake, the halt, the recovery decision and the oracle's steps;
# 2. the robot stack on the MuJoCo sim, the scripted expert run through RunPolicy, judged
#    live by the oracle node and recorded to an MCAP bag (`mango demo`).
# `make demo FAULT=drop@0.5` (or SCENE=..., SEED=...) puts that fault in both; `VIEWS=1` also
# records what the rviz/Foxglove layouts show.
set -euo pipefail
cd "$(dirname "$0")/.."
scene="${SCENE:-libero10_soup_sauce_basket}"
args=(--scene "$scene" --seed "${SEED:-0}")
task_fault="${FAULT:-}"
# the default task's first step picks an object, so its VLA can pick the wrong one
[ -z "$task_fault" ] && [ -z "${SCENE:-}" ] && task_fault="wrong_object@1"
task_args=("${args[@]}" --mode full --monitor oracle --decider offline)
[ -n "$task_fault" ] && task_args+=(--fault "$task_fault")
echo "== 1. orchestrated run: mango task run ${task_args[*]}"
mango task run "${task_args[@]}"
echo
echo "== 2. the robot stack, judged live: mango demo"
[ -n "${FAULT:-}" ] && args+=(--fault "$FAULT")
[ -n "${VIEWS:-}" ] && args+=(--record-views)
exec mango demo "${args[@]}"
