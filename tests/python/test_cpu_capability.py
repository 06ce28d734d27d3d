"""The vector code paths of the built-in kernels.

The kernels' loops are compiled for AVX-512, for AVX2 and for baseline x86-64
(SSE2), and run with the widest this CPU has. OPGRAPH_CPU_CAPABILITY lowers
that for a whole process, so each lower level reruns the op families with
vectorized loops in a fresh interpreter: a machine with AVX-512 tests the code
an SSE2-only CPU would run."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opgraph
from opgraph.ops import call

LEVELS = ["default", "avx2", "avx512"]
HERE = Path(__file__).resolve().parent
VECTORIZED_TESTS = [
    "test_aten_activation.py",
    "test_aten_binary.py",
    "test_aten_softmax.py",
    "test_aten_pool.py",
    "test_aten_norm.py",
    "test_cpu_capability.py::test_lengths_around_the_vector_widths",
]


def run_python(args, level=None):
    env = {k: v for k, v in os.environ.items() if k != "OPGRAPH_CPU_CAPABILITY"}
    if level is not None:
        env["OPGRAPH_CPU_CAPABILITY"] = level
    return subprocess.run([sys.executable, *args], cwd=HERE, env=env, capture_output=True, text=True)


def capability(level=None):
    result = run_python(["-c", "import opgraph; print(opgraph.get_cpu_capability())"], level)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="module")
def detected():
    """The widest level this CPU has, whatever this process was started with."""
    return capability()


def test_reports_a_known_level(detected):
    assert detected in LEVELS
    assert opgraph.get_cpu_capability() in LEVELS
    assert LEVELS.index(opgraph.get_cpu_capability()) <= LEVELS.index(detected)


@pytest.mark.parametrize("level", LEVELS)
def test_environment_lowers_but_never_raises_the_level(level, detected):
    expected = LEVELS[min(LEVELS.index(level), LEVELS.index(detected))]
    assert capability(level) == expected


def test_unknown_level_is_an_error_naming_the_variable():
    script = (
        "import numpy as np, opgraph\n"
        "from opgraph.ops import call\n"
        "try:\n"
        "    call('aten::relu', np.ones(3, np.float32))\n"
        "except opgraph.Error as e:\n"
        "    print(e)\n"
    )
    result = run_python(["-c", script], "sse9")
    assert result.returncode == 0, result.stderr
    assert 'OPGRAPH_CPU_CAPABILITY: expected default, avx2 or avx512, got "sse9"' in result.stdout


@pytest.mark.parametrize("level", LEVELS[:-1])
def test_lower_levels_pass_the_family_tests(level, detected):
    if LEVELS.index(level) >= LEVELS.index(detected):
        pytest.skip(f"this CPU runs {detected}: the other tests already cover it")
    result = run_python(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *VECTORIZED_TESTS], level)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


@pytest.mark.parametrize("length", [1, 7, 15, 16, 17, 31, 32, 33, 1001])
def test_lengths_around_the_vector_widths(length):
    # Rows that fill whole vectors (16 floats for AVX-512, 32 lanes for the
    # reductions), fall one short or spill one over.
    x = np.random.default_rng(length).standard_normal((3, length)).astype(np.float32) * 3
    for op, attrs in [
        ("aten::gelu", {}),
        ("aten::silu", {}),
        ("aten::softmax.int", dict(dim=-1)),
        ("aten::layer_norm", dict(normalized_shape=[length])),
    ]:
        np.testing.assert_allclose(
            call(op, x, **attrs), opgraph.ops.call_reference(op, x, **attrs), rtol=1e-5, atol=1e-5, err_msg=op
        )
