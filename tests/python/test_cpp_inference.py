"""examples/cpp_inference: a C++ program built with find_package(opgraph)
against this installation runs a model saved from Python."""

import hashlib
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from torch_models import save_cnn, torch_forward

import opgraph
from opgraph.build import build_cmake_project

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cpp_inference():
    # One build folder per installation, kept between runs.
    key = hashlib.sha1(opgraph.cmake_prefix_path.encode()).hexdigest()[:12]
    build = build_cmake_project(ROOT / "examples" / "cpp_inference", ROOT / "build" / f"cpp_inference-{key}")
    return build / "cpp_inference"


def run(program, *args):
    result = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def printed_output(stdout, name):
    """The type and first values printed for output `name`."""
    match = re.search(rf"^output {name}: (\S+\[[0-9, ]*\])\n  first values:((?: \S+)+)$", stdout, re.M)
    assert match, stdout
    return match.group(1), np.array(match.group(2).split(), np.float32)


def test_runs_a_saved_model_on_an_npy_input(cpp_inference, tmp_path):
    module = save_cnn(tmp_path / "cnn.opg")
    x = np.random.default_rng(3).standard_normal((3, 3, 12, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    stdout = run(cpp_inference, tmp_path / "cnn.opg", tmp_path / "x.npy")
    assert f"input x: float32[3, 3, 12, 12] from {tmp_path / 'x.npy'}\n" in stdout
    kind, values = printed_output(stdout, "logits")
    assert kind == "float32[3, 10]"
    np.testing.assert_allclose(values, torch_forward(module, x).reshape(-1)[:8], rtol=1e-4, atol=1e-5)


def test_generates_an_input_when_none_is_given(cpp_inference, tmp_path):
    module = save_cnn(tmp_path / "cnn.opg", seed=1)
    stdout = run(cpp_inference, tmp_path / "cnn.opg")
    assert "input x: float32[1, 3, 12, 12] (generated)\n" in stdout
    # The program's input: (i % 17) / 8 - 1, batch 1.
    x = ((np.arange(3 * 12 * 12) % 17) / 8 - 1).astype(np.float32).reshape(1, 3, 12, 12)
    kind, values = printed_output(stdout, "logits")
    assert kind == "float32[1, 10]"
    np.testing.assert_allclose(values, torch_forward(module, x).reshape(-1)[:8], rtol=1e-4, atol=1e-5)


def test_errors_go_to_stderr(cpp_inference, tmp_path):
    result = subprocess.run([str(cpp_inference), tmp_path / "missing.opg"], capture_output=True, text=True)
    assert result.returncode == 1
    assert (
        result.stderr == f"cpp_inference: load_opg '{tmp_path / 'missing.opg'}': cannot open "
        f"'{tmp_path / 'missing.opg'}': No such file or directory\n"
    )
