# `make demo` runs the conv1d example (NumPy, graph + CLI, PyTorch) and the deployment of a PyTorch model
# with a custom op (examples/fused_gate); `make test` runs every test (the C++ ones a second time under
# AddressSanitizer + UBSan); `make fuzz` fuzzes the .opg loader for FUZZ_SECONDS. Each sets
# up what it needs first (Debian packages, .venv, the build) and does only
# what changed when run again.
SHELL := /bin/bash
VENV := .venv
PYTHON := $(VENV)/bin/python
BUILD := build/python
STAMPS := .stamps
export PATH := $(abspath $(VENV))/bin:$(PATH)
# ON makes compiler warnings in opgraph's own code errors, in the build pip
# makes (pyproject.toml reads it from the environment) and in test-asan's;
# .ci/run turns it on.
export OPGRAPH_WERROR ?= OFF

SOURCES := $(shell find CMakeLists.txt pyproject.toml cmake include src tools python tests/cpp tests/packages fuzz \
             -type f -not -path '*/__pycache__/*')

.PHONY: demo test lint format stubs test-asan test-tsan test-gpu fuzz soak bench bench-generate clean

demo: $(STAMPS)/install
	$(PYTHON) examples/conv1d/run.py
	$(PYTHON) examples/conv1d/graph.py
	$(PYTHON) examples/conv1d/torch_op.py
	$(PYTHON) examples/fused_gate/deploy.py

test: $(STAMPS)/install
	ctest --test-dir $(BUILD) --output-on-failure -j2
	$(PYTHON) -m pytest tests/python
	$(MAKE) --no-print-directory test-asan

# bench/generate.py, apart: its peers (bench/requirements-generate.txt) take
# minutes to build, and its rows half an hour to run.
bench-generate: $(STAMPS)/install $(STAMPS)/bench-peers
	$(PYTHON) bench/generate.py

$(STAMPS)/bench-peers: bench/requirements-generate.txt $(STAMPS)/venv
	$(VENV)/bin/pip install -q -r bench/requirements-generate.txt
	touch $@

bench: $(STAMPS)/install
	$(PYTHON) bench/conv1d.py
	$(PYTHON) bench/ops.py
	$(PYTHON) bench/train_step.py
	$(PYTHON) bench/torch_bridge.py
	$(PYTHON) bench/models.py
	$(PYTHON) bench/runtime.py

# The style checks CI runs before the tests: ruff (lint and format, configured
# in pyproject.toml) on the Python, clang-format (.clang-format) on the C++ and
# CUDA sources. `make format` applies both.
# (tests/python/seeds holds the seeds' sources as they were written.)
CXX_SOURCES = $(shell git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' ':!:tests/python/seeds')
lint: $(STAMPS)/venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@echo 'clang-format --dry-run --Werror ($(words $(CXX_SOURCES)) C++ and CUDA files)'
	@$(VENV)/bin/clang-format --dry-run --Werror $(CXX_SOURCES)

format: $(STAMPS)/venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .
	$(VENV)/bin/clang-format -i $(CXX_SOURCES)

# python/opgraph/_C.pyi, the type stub of opgraph._C that editors and type
# checkers read, as nanobind's stubgen writes it from the built module; run
# after changing the bindings (python/src/), which tests/python/test_stubs.py
# otherwise reports.
stubs: $(STAMPS)/install
	$(PYTHON) -m nanobind.stubgen -q -m opgraph._C -o python/opgraph/_C.pyi

# The GPU tests, where an NVIDIA GPU is (they skip, saying why, elsewhere),
# then again under compute-sanitizer's memcheck, which fails on any report.
# (scripts/gpu-check.sh also runs them, with the benchmarks, on a GPU machine
# that can install nothing itself.)
test-gpu: $(STAMPS)/install
	PYTHON=$(abspath $(PYTHON)) scripts/gpu-check.sh test

# The C++ tests built apart (build/asan, Debug) with AddressSanitizer and
# UndefinedBehaviorSanitizer; any report fails the test, a leak that
# LeakSanitizer finds at exit included (its default on Linux, said here so
# that an ASAN_OPTIONS from outside does not turn it off). No Python module.
ASAN_BUILD := build/asan
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
test-asan: $(STAMPS)/venv
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOPGRAPH_BUILD_PYTHON=OFF \
	  -DOPGRAPH_WERROR=$(OPGRAPH_WERROR) -DCMAKE_C_FLAGS="$(SANITIZE)" -DCMAKE_CXX_FLAGS="$(SANITIZE)" > /dev/null
	cmake --build $(ASAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j2

# What names the frames in the sanitizers' reports, by its resolved path:
# they fail to start bookworm's llvm-symbolizer (a link into llvm-14) from PATH.
SYMBOLIZER := $(realpath $(shell command -v llvm-symbolizer || command -v addr2line))

# The C++ tests and the conformance suite built apart (build/tsan,
# RelWithDebInfo, no Python module, no CUDA) with ThreadSanitizer; any report
# fails the test. Those with threads of their own (Concurrency.*,
# ThreadPoolTest.*, the Session's and the registry's concurrent runs, and the
# conformance suite's every sample from four threads at once) are what it is
# for; the rest cost seconds.
# Built with clang: GCC instruments the resolvers of target_clones functions,
# which run while libopgraph is relocated, before ThreadSanitizer is set up,
# and crash. clang links its own OpenMP runtime (libomp), whose Archer tool
# tells ThreadSanitizer where parallel regions start, end and wait at
# barriers: synchronization inside an uninstrumented runtime, which it
# cannot see otherwise and reports every value a region shares as raced.
# ignore_noninstrumented_modules leaves out accesses inside the runtimes
# themselves (libomp, oneDNN), as Archer asks; no suppressions are needed.
TSAN_BUILD := build/tsan
TSAN_RUN_OPTIONS := halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1 \
  external_symbolizer_path=$(SYMBOLIZER)
ARCHER := /usr/lib/llvm-16/lib/libarcher.so
test-tsan: $(STAMPS)/apt-fuzz $(STAMPS)/venv
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPGRAPH_BUILD_PYTHON=OFF \
	  -DOPGRAPH_CUDA=OFF -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
	  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread > /dev/null
	cmake --build $(TSAN_BUILD) --target opgraph_tests opgraph_conformance
	OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="$(TSAN_RUN_OPTIONS)" \
	  ctest --test-dir $(TSAN_BUILD) --output-on-failure -j2 --exclude-regex '_corpus\.'

# libFuzzer on the .opg loader and on the schema parser (build/fuzz, clang
# with ASan + UBSan), FUZZ_SECONDS each, from the corpora of fuzz/make_corpus.py
# and schema_corpus and from fuzz/regressions; new inputs each finds stay in
# build/fuzz/TARGET/corpus, a crashing one is written to
# build/fuzz/TARGET/crash-* (once fixed, it joins fuzz/regressions/TARGET).
# fuzz/run.sh prints each target's executions and crashes.
FUZZ_SECONDS ?= 60
FUZZ_BUILD := build/fuzz
fuzz: $(STAMPS)/apt-fuzz $(STAMPS)/venv
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPGRAPH_BUILD_TESTS=OFF \
	  -DOPGRAPH_BUILD_FUZZER=ON -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" > /dev/null
	cmake --build $(FUZZ_BUILD) --target opg_loader_fuzzer schema_parser_fuzzer schema_corpus
	python3 fuzz/make_corpus.py $(FUZZ_BUILD)/opg_loader/seeds
	$(FUZZ_BUILD)/fuzz/schema_corpus $(FUZZ_BUILD)/schema_parser/seeds
	ASAN_OPTIONS=external_symbolizer_path=$(SYMBOLIZER) \
	  fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) opg_loader:fuzz/opg.dict schema_parser:fuzz/schema.dict

# Sessions run 10,000 times and ops called 100,000 times, resident memory
# flat once warm (tests/soak/soak.py; seconds, more with --runs and --calls).
soak: $(STAMPS)/install
	$(PYTHON) tests/soak/soak.py

$(STAMPS)/apt: scripts/apt-packages.txt scripts/install-apt-packages.sh
	scripts/install-apt-packages.sh scripts/apt-packages.txt
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/apt-fuzz: scripts/apt-packages-fuzz.txt scripts/install-apt-packages.sh $(STAMPS)/apt
	scripts/install-apt-packages.sh scripts/apt-packages-fuzz.txt
	touch $@

# Where nvcc is found, the CUDA backend is built too (OPGRAPH_CUDA=AUTO) and
# needs cuBLASLt from requirements-cuda.txt.
NVCC := $(shell command -v nvcc 2> /dev/null)
$(STAMPS)/venv: requirements.txt requirements-cuda.txt $(STAMPS)/apt
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q -r requirements.txt $(if $(NVCC),-r requirements-cuda.txt)
	touch $@

# One CMake build (build/python) makes the Python package, libopgraph and the
# C++ tests; pip reuses it, so a rebuild only compiles what changed.
$(STAMPS)/install: $(STAMPS)/venv $(SOURCES)
	$(PYTHON) -m pip install -q --no-build-isolation --no-deps -Cbuild-dir=$(BUILD) \
	  -Ccmake.define.OPGRAPH_BUILD_TESTS=ON .
	touch $@

clean:
	rm -rf build $(STAMPS)
