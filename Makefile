# mango_ros — one command each: `make demo` (main job), `make test`, `make bench`.
# `make setup` builds .venv with pinned ROS 2 Kilted wheels, this package's interfaces and the
# library; every step is stamped so a second run takes seconds.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMPS := $(VENV)/.mango
BUILD  := build/cmake
ENV    := . $(BIN)/activate &&

REQS       := requirements/ros-runtime.txt requirements/ros-build.txt requirements/python.txt \
              requirements/constraints.txt $(wildcard requirements/extra.txt)
# Wheels whose declared dependencies we do not want (franky-sim's simulator needs `pin`; we
# only read its robot files).
NODEPS     := requirements/no-deps.txt
INTERFACES := $(wildcard msg/*.msg srv/*.srv action/*.action) CMakeLists.txt package.xml

.PHONY: setup test lint demo bench docs clean doctor openpi-venv libero-venv perception-deps browser
.DEFAULT_GOAL := help

help:
	@echo "make demo   run the main job (sim + offline backend)"
	@echo "make test   run the whole test suite (sets itself up)"
	@echo "make bench  print the benchmark figures"
	@echo "make docs   build the documentation site into site/ (strict)"
	@echo "make setup  create .venv (ROS 2 wheels, interfaces, the library) and .venv-libero"

# LIBERO's own runtime is part of the set-up: a `libero/...` scene works after it
setup: $(STAMPS)/env libero-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --upgrade pip==25.3

$(STAMPS)/deps: $(BIN)/python $(REQS) $(NODEPS)
	@mkdir -p $(STAMPS)
	$(BIN)/pip install -q --disable-pip-version-check -c requirements/constraints.txt \
	  $(foreach r,$(filter-out requirements/constraints.txt,$(REQS)),-r $(r))
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -c requirements/constraints.txt \
	  -r $(NODEPS)
	@touch $@

# The interfaces are generated with the wheels' rosidl/ament tooling into the venv prefix.
$(STAMPS)/interfaces: $(STAMPS)/deps $(INTERFACES)
	$(ENV) export AMENT_PREFIX_PATH=$$VIRTUAL_ENV CMAKE_PREFIX_PATH=$$VIRTUAL_ENV && \
	  cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$$VIRTUAL_ENV \
	    -DCMAKE_PROJECT_INCLUDE=$(CURDIR)/cmake/fix_opt_python.cmake \
	    -DMANGO_INTERFACES_ONLY=ON -DBUILD_TESTING=OFF \
	    -DPython3_EXECUTABLE=$$VIRTUAL_ENV/bin/python > build/cmake-configure.log 2>&1 \
	  || { tail -30 build/cmake-configure.log; exit 1; }
	$(ENV) cmake --build $(BUILD) -j2 > build/cmake-build.log 2>&1 \
	  || { tail -40 build/cmake-build.log; exit 1; }
	$(ENV) cmake --install $(BUILD) > build/cmake-install.log 2>&1 \
	  || { tail -20 build/cmake-install.log; exit 1; }
	@touch $@

# tf2_msgs (TFMessage, for /tf) has no wheel: built from interfaces/tf2_msgs into the venv,
# unless a system ROS 2 provides it.
TF2_MSGS := $(wildcard interfaces/tf2_msgs/*.* interfaces/tf2_msgs/msg/*.msg)
$(STAMPS)/tf2_msgs: $(STAMPS)/deps $(TF2_MSGS) scripts/build_tf2_msgs.sh
	$(ENV) bash scripts/build_tf2_msgs.sh $$VIRTUAL_ENV build/tf2_msgs
	@touch $@

$(STAMPS)/lib: $(STAMPS)/deps pyproject.toml
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

# Environment for local runs and tests: ament index, loopback DDS profile, offscreen GL.
$(STAMPS)/env: $(STAMPS)/interfaces $(STAMPS)/tf2_msgs $(STAMPS)/lib scripts/venv-env.sh
	$(BIN)/python scripts/patch_activate.py $(VENV) scripts/venv-env.sh
	@touch $@

build/cmake-configure.log: ; @mkdir -p build

$(STAMPS)/interfaces: | build/cmake-configure.log

doctor: setup
	$(ENV) mango doctor

lint: setup
	$(ENV) ruff check src test bench scripts

# openpi's own policy server for the openpi tests (test/policy/test_openpi_server.py), in
# its own venv: openpi-client pins numpy<2.
OPENPI_VENV := .venv-openpi
openpi-venv: $(OPENPI_VENV)/.stamp

$(OPENPI_VENV)/.stamp: requirements/openpi-server.txt
	$(PYTHON) -m venv $(OPENPI_VENV)
	$(OPENPI_VENV)/bin/pip install -q --disable-pip-version-check --no-deps \
	  -r requirements/openpi-server.txt
	$(OPENPI_VENV)/bin/python -c "import openpi_server, openpi_client"
	@touch $@

# LIBERO itself (hf-libero + robosuite 1.4 + MuJoCo 3.3.2 + its meshes) in its own venv, run
# behind a process boundary (src/mango/sim/libero/): its MuJoCo pin collides with .venv's.
# --no-deps: requirements/libero.txt pins what LIBERO imports, with a CPU torch. Its
# config.yaml lives in the venv (LIBERO prompts on stdin without one).
LIBERO_VENV := .venv-libero
libero-venv: $(LIBERO_VENV)/.stamp

$(LIBERO_VENV)/.stamp: requirements/libero.txt scripts/libero_setup.py
	$(PYTHON) -m venv $(LIBERO_VENV)
	$(LIBERO_VENV)/bin/pip install -q --disable-pip-version-check --no-deps \
	  -r requirements/libero.txt
	$(LIBERO_VENV)/bin/python scripts/libero_setup.py $(LIBERO_VENV)/libero-config
	LIBERO_CONFIG_PATH=$(CURDIR)/$(LIBERO_VENV)/libero-config \
	  $(LIBERO_VENV)/bin/python -c "import libero.libero.benchmark, robosuite, mujoco"
	@touch $@

# transformers 5 for the open-vocabulary detectors' tests, beside the venv, not in it: it
# breaks lerobot 0.4.4's import (requirements/perception-transformers.txt)
PERCEPTION_DEPS := .deps/transformers
perception-deps: $(PERCEPTION_DEPS)/.stamp

$(PERCEPTION_DEPS)/.stamp: requirements/perception-transformers.txt
	rm -rf $(PERCEPTION_DEPS)
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-deps --target $(PERCEPTION_DEPS) \
	  -r requirements/perception-transformers.txt
	@touch $@

# headless Chromium (a Debian package) for the HTML report's browser test
browser:
	@bash scripts/ensure_chromium.sh

test: setup openpi-venv perception-deps browser
	$(ENV) ruff check src test bench scripts
	$(ENV) python -m pytest -q -n 2 -m "not serial" --durations=25
	$(ENV) python -m pytest -q -m serial --durations=25

demo: setup  ## SCENE=, SEED=, FAULT=KIND@WHEN, VIEWS=1
	$(ENV) bash scripts/demo.sh

# every bench's tables also go to out/bench/tables.jsonl, collected into bench/results.json
# (the Benchmarks page: `make docs`)
bench: setup
	@mkdir -p out/bench && rm -f out/bench/tables.jsonl
	$(ENV) export MANGO_BENCH_JSON=$(CURDIR)/out/bench/tables.jsonl && \
	  for b in bench/bench_*.py; do echo "== $$b"; python "$$b" || exit 1; done
	$(ENV) python scripts/bench_results.py out/bench/tables.jsonl

# the documentation site (mkdocs.yml): strict, so a warning or a broken link fails the build;
# the reference pages are generated from the code by docs/hooks.py
docs: setup
	$(ENV) NO_MKDOCS_2_WARNING=1 mkdocs build --strict

clean:
	rm -rf site build $(VENV) $(OPENPI_VENV) $(LIBERO_VENV) .pytest_cache .ruff_cache .hypothesis .deps
