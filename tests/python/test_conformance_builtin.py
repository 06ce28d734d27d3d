"""Every built-in op's samples (src/kernels/samples) through the front ends
(opgraph.testing): every sample from NumPy, from torch and in a one-node
Graph on InferenceSession; the first good and bad sample through torch.export
+ extract_ir on the Session and as an .opg run by the `opgraph run` command,
each of which costs an export or a process; and the opgraph:: ops, which
PyTorch does not have, through torch.library (eager, opcheck, torch.compile,
gradcheck) on every sample. The native checks (kernel against reference,
determinism, threads, bad samples) are the C++ suite's, tests/conformance."""

import pytest

from opgraph import _C, testing

BUILT_IN = [op for op in _C.list_ops() if op.split("::")[0] in ("aten", "opgraph") and _C.op_samples(op)]
TORCH_SIDE = [op for op in BUILT_IN if op.startswith("opgraph::")]


def _failures(results):
    return [f"{front_end}: {failure}" for front_end, outcome in results.items() for failure in outcome.failures]


def test_the_built_in_ops_are_found():
    assert len(BUILT_IN) >= 300 and len(TORCH_SIDE) >= 15, (len(BUILT_IN), len(TORCH_SIDE))


@pytest.mark.parametrize("op", BUILT_IN)
def test_every_sample_from_numpy_torch_and_a_graph(op):
    results = testing.check_op(op, front_ends=["numpy", "torch", "graph"], native=False)
    assert not _failures(results), "\n".join(_failures(results))
    assert results["numpy"].passed == results["torch"].passed == len(_C.op_samples(op))
    assert results["graph"].passed or results["graph"].skipped


@pytest.mark.parametrize("op", BUILT_IN)
def test_first_samples_through_export_and_the_cli(op):
    results = testing.check_op(op, front_ends=["export", "opg"], native=False, limit=1)
    assert not _failures(results), "\n".join(_failures(results))
    assert all(outcome.passed or outcome.skipped for outcome in results.values()), results


@pytest.mark.parametrize("op", TORCH_SIDE)
def test_opgraph_ops_through_torch_library(op):
    results = testing.check_op(op, front_ends=["eager", "opcheck", "compile", "gradcheck"], native=False)
    assert not _failures(results), "\n".join(_failures(results))
    assert results["eager"].passed
