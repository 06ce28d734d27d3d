#!/bin/bash
# opgraph's checks on an NVIDIA GPU, also for a GPU machine that can install
# nothing itself (no network, no Debian packages, its own Python and PyTorch):
#
#   scripts/gpu-check.sh prepare [PYTHON]
#       On a build machine with nvcc: builds opgraph's wheel with the CUDA
#       backend for PYTHON's version (default python3.12, the GPU machine's),
#       and gathers it with the shared libraries it needs beyond CUDA's
#       (oneDNN, and the OpenCL loader oneDNN links) into .gpu/. CuPy,
#       cuBLASLt and PyTorch come from the GPU machine's Python environment.
#   scripts/gpu-check.sh run [LOG]
#       On the GPU machine, in a copy of the repository with .gpu/: installs
#       the wheel into python3's environment, then runs the GPU tests, the
#       digits example on the GPU, bench/gpu.py and the GPU tests under
#       compute-sanitizer, logging everything to LOG (default
#       out/gpu-check.log). Fails if any step does.
#   scripts/gpu-check.sh test
#       The GPU tests (tests/python/test_cuda.py, tests/python/test_layers_cuda.py),
#       then test_cuda.py again under compute-sanitizer's memcheck, which fails
#       on any report. `make test-gpu` runs this with the project's venv.
set -o pipefail
cd "$(dirname "$0")/.."
GPU_DIR=.gpu
PYTHON=${PYTHON:-python3}

# The venv that builds the wheel and the build folder, kept for rebuilds.
GPU_VENV=${GPU_VENV:-build/gpu-venv}
GPU_BUILD=${GPU_BUILD:-build/gpu}

prepare() {
  local python=${1:-python3.12} venv=$GPU_VENV
  set -e
  test -x $venv/bin/python || "$python" -m venv $venv
  # What building takes, at the versions requirements.txt pins.
  $venv/bin/python -m pip install -q -r requirements-cuda.txt \
    $(grep -E '^(scikit-build-core|nanobind|numpy|cmake|ninja)==' requirements.txt)
  rm -rf $GPU_DIR && mkdir -p $GPU_DIR/wheels $GPU_DIR/lib
  # oneDNN's float32 products stand in for MKL's there: the wheel stays small.
  PATH=$(realpath $venv)/bin:$PATH $venv/bin/python -m pip wheel . --no-build-isolation --no-deps -w $GPU_DIR/wheels \
    -Cbuild-dir=$GPU_BUILD -Ccmake.define.OPGRAPH_CUDA=ON -Ccmake.define.OPGRAPH_MKL=OFF
  for library in libdnnl.so.2 libOpenCL.so.1; do
    cp -L "$(ldconfig -p | awk -v name=$library '$1 == name { print $NF; exit }')" $GPU_DIR/lib/
  done
  du -sh $GPU_DIR/*
}

# Runs one named step under a time limit; remembers a failure and goes on.
failed=()
step() {
  local name=$1 limit=$2
  shift 2
  echo "=== $name ($(date +%T), limit ${limit}s): $*"
  local start=$SECONDS
  timeout "$limit" "$@"
  local status=$?
  echo "=== $name: exit $status after $((SECONDS - start))s"
  [ $status -eq 0 ] || failed+=("$name (exit $status)")
}

gpu_tests() {
  step "GPU tests" 240 "$PYTHON" -m pytest -rs tests/python/test_cuda.py tests/python/test_layers_cuda.py
}

# The layers' tests are left out under compute-sanitizer: their kernels are
# the ones test_cuda.py checks, and memcheck slows training many times.
sanitized_gpu_tests() {
  if ! "$PYTHON" -c "import opgraph, sys; sys.exit(not opgraph.cuda.is_available())"; then
    echo "=== compute-sanitizer: skipped, no CUDA device here"
    return
  fi
  step "GPU tests under compute-sanitizer" 300 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$PYTHON" -m pytest -q -rs tests/python/test_cuda.py
}

summary() {
  if [ ${#failed[@]} -eq 0 ]; then
    echo "gpu-check: every step passed"
  else
    printf 'gpu-check: FAILED: %s\n' "${failed[@]}"
    return 1
  fi
}

run() {
  local log=${1:-out/gpu-check.log}
  mkdir -p "$(dirname "$log")"
  export LD_LIBRARY_PATH=$PWD/$GPU_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    "$PYTHON" -m pip install -q --no-index --no-deps --force-reinstall $GPU_DIR/wheels/opgraph-*.whl || exit 1
    "$PYTHON" -c "import opgraph, torch, cupy; print('opgraph CUDA:', opgraph.cuda.is_available() or \
opgraph.cuda.unavailable_reason(), '| torch', torch.__version__, '| cupy', cupy.__version__)"
    gpu_tests
    step "digits example on the GPU" 120 "$PYTHON" examples/digits/train.py --device cuda --out out/digits-cuda
    step "bench/gpu.py" 180 "$PYTHON" bench/gpu.py
    sanitized_gpu_tests
    summary
  } 2>&1 | tee "$log"
}

case "$1" in
  prepare) prepare "${@:2}" ;;
  run) run "${@:2}" ;;
  test)
    gpu_tests
    sanitized_gpu_tests
    summary
    ;;
  *)
    sed -n '2,20p' "$0" >&2
    exit 2
    ;;
esac
