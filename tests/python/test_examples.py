"""The example programs run end to end as a user runs them."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_example(*args, cwd=ROOT):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_conv1d_graph_example_runs_in_the_graph_api_and_the_cli():
    result = run_example(ROOT / "examples" / "conv1d" / "graph.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Graph API verification PASSED" in result.stdout
    assert "command line verification PASSED" in result.stdout and "FAILED" not in result.stdout


def test_digits_training_reaches_the_target_accuracy(tmp_path):
    result = run_example(ROOT / "examples" / "digits" / "train.py", "--out", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    accuracy = float(result.stdout.split("test accuracy ")[1].split("%")[0]) / 100
    assert accuracy >= 0.97
    assert (tmp_path / "training_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "weights.safetensors").stat().st_size > 0


def test_fused_gate_deployment_runs_every_step(tmp_path):
    result = run_example(ROOT / "examples" / "fused_gate" / "deploy.py", "--out", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all steps PASSED" in result.stdout and "FAILED" not in result.stdout
    assert "custom::fused_gate" in result.stdout  # inspected by the opgraph tool
    assert (tmp_path / "outputs" / "linear_2.npy").is_file()
