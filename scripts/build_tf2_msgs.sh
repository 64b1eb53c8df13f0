#!/usr/bin/env bash
# Build interfaces/tf2_msgs (TFMessage, for /tf and /tf_static) into PREFIX with the venv's
# rosidl tooling; `make setup` runs it into the venv. No wheel provides tf2_msgs, but a system
# ROS 2 does: when `tf2_msgs` imports from outside this Python's prefix it is left alone.
# Usage: scripts/build_tf2_msgs.sh PREFIX BUILD_DIR
set -euo pipefail
prefix=$1
build=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python}
system=$("$py" - <<'PY'
import importlib.util, sys
spec = importlib.util.find_spec("tf2_msgs")
where = spec.origin if spec and spec.origin else ""
print(where if where and not where.startswith(sys.prefix) else "")
PY
)
if [ -n "$system" ]; then
  echo "tf2_msgs: using the system's ($system)"
  exit 0
fi
mkdir -p "$build"
export AMENT_PREFIX_PATH="$prefix:$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$prefix:$VIRTUAL_ENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
run() {  # a step's output goes to its log; on failure the log's tail is shown
  local log=$build/$1.log
  shift
  "$@" > "$log" 2>&1 || { tail -30 "$log"; echo "tf2_msgs: failed, see $log" >&2; exit 1; }
}
run configure cmake -S "$repo/interfaces/tf2_msgs" -B "$build" -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_PROJECT_INCLUDE="$repo/cmake/fix_opt_python.cmake" -DBUILD_TESTING=OFF \
  -DPython3_EXECUTABLE="$(command -v "$py")"
run build cmake --build "$build" -j2
run install cmake --install "$build"
echo "tf2_msgs: built into $prefix"
