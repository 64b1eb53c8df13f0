# mango_ros local environment (sourced by .venv/bin/activate; written by `make setup`).
# The DDS profile keeps traffic on this machine (shared memory + UDP on 127.0.0.1): unset
# FASTDDS_DEFAULT_PROFILES_FILE to talk to a robot on another host.
export AMENT_PREFIX_PATH="$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VIRTUAL_ENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
export FASTDDS_DEFAULT_PROFILES_FILE="${FASTDDS_DEFAULT_PROFILES_FILE:-@REPO@/config/dds/fastdds_local_shm.xml}"
export MUJOCO_GL="${MUJOCO_GL:-egl}"
