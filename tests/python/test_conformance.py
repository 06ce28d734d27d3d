"""The front-end conformance suite (opgraph.testing) and `opgraph test-package`
on the example packages, which declare samples, and on a package that does not."""

import subprocess

import pytest

import opgraph
from opgraph import testing


@pytest.mark.parametrize("package", ["conv1d_package", "warp_perspective_package"])
def test_example_packages_pass_every_front_end(package, request):
    report = testing.test_package(request.getfixturevalue(package))
    assert report.ok, report.table()
    for op, columns in report.ops.items():
        assert columns["native"].passed > 0 and columns["numpy"].passed >= 5, (op, report.table())


def test_fused_gate_passes_every_front_end():
    from conftest import ROOT

    # Built where the example's own model builds it, so that both load one library.
    report = testing.test_package(opgraph.build_package(ROOT / "examples" / "fused_gate", target="fused_gate"))
    assert report.ok, report.table()


def test_a_package_without_samples_fails_saying_so(test_ops):
    report = testing.test_package(test_ops, front_ends=["numpy"])
    assert not report.ok
    assert "FAIL test_ops::scale, native: the op declares no samples" in report.table()


def test_built_in_ops_run_through_the_graph_front_ends():
    results = testing.check_op("aten::softmax.int", front_ends=["numpy", "torch", "graph"])
    assert all(not outcome.failures for outcome in results.values()), results
    assert results["graph"].passed >= 12


def test_cli_prints_the_table_and_fails_on_a_failing_package(opgraph_cli, conv1d_package, test_ops):
    result = subprocess.run([str(opgraph_cli), "test-package", str(conv1d_package)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "examples::conv1d " in result.stdout and "front ends" in result.stdout
    result = subprocess.run(
        [str(opgraph_cli), "test-package", "--native-only", str(test_ops)], capture_output=True, text=True
    )
    assert result.returncode == 1 and "no samples" in result.stdout, result.stdout


def test_cli_names_a_missing_package(opgraph_cli, tmp_path):
    result = subprocess.run(
        [str(opgraph_cli), "test-package", str(tmp_path / "nope.so")], capture_output=True, text=True
    )
    assert result.returncode == 1 and "no such file" in result.stderr, result.stderr
