# `make demo` runs the conv1d example (NumPy, graph + CLI, PyTorch) and the deployment of a PyTorch model
# with a custom op (examples/fused_gate); `make test` runs every test. Each sets
# up what it needs first (Debian packages, .venv, the build) and does only
# what changed when run again.
SHELL := /bin/bash
VENV := .venv
PYTHON := $(VENV)/bin/python
BUILD := build/python
STAMPS := .stamps
export PATH := $(abspath $(VENV))/bin:$(PATH)

SOURCES := $(shell find CMakeLists.txt pyproject.toml cmake include src tools python tests/cpp tests/packages \
             -type f -not -path '*/__pycache__/*')

.PHONY: demo test bench clean

demo: $(STAMPS)/install
	$(PYTHON) examples/conv1d/run.py
	$(PYTHON) examples/conv1d/graph.py
	$(PYTHON) examples/conv1d/torch_op.py
	$(PYTHON) examples/fused_gate/deploy.py

test: $(STAMPS)/install
	ctest --test-dir $(BUILD) --output-on-failure -j2
	$(PYTHON) -m pytest tests/python

bench: $(STAMPS)/install
	$(PYTHON) bench/conv1d.py
	$(PYTHON) bench/ops.py
	$(PYTHON) bench/train_step.py
	$(PYTHON) bench/torch_bridge.py
	$(PYTHON) bench/models.py
	$(PYTHON) bench/runtime.py

$(STAMPS)/apt: scripts/apt-packages.txt scripts/install-apt-packages.sh
	scripts/install-apt-packages.sh scripts/apt-packages.txt
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/venv: requirements.txt $(STAMPS)/apt
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q -r requirements.txt
	touch $@

# One CMake build (build/python) makes the Python package, libopgraph and the
# C++ tests; pip reuses it, so a rebuild only compiles what changed.
$(STAMPS)/install: $(STAMPS)/venv $(SOURCES)
	$(PYTHON) -m pip install -q --no-build-isolation --no-deps .
	touch $@

clean:
	rm -rf build $(STAMPS)
