"""Shapes that depend on the data: aten::nonzero and the scalar size ops
(sym_size.int, sym_numel, sym_stride.int, sym_storage_offset,
_local_scalar_dense) against their references and PyTorch, and models
exported with torch.export whose sizes a run finds (torch's unbacked u0) run
on a Session."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op
from torch import nn

import opgraph
from opgraph.ir.convert import convert_program
from opgraph.ops import call, call_reference

OVERLOADS = [
    ("nonzero", "default"),
    ("sym_size", "int"),
    ("sym_numel", "default"),
    ("sym_stride", "int"),
    ("sym_storage_offset", "default"),
    ("sym_is_contiguous", "default"),
    ("_local_scalar_dense", "default"),
]


@pytest.mark.parametrize("name,overload", OVERLOADS)
def test_schemas_are_atens(name, overload):
    assert_schema_is_aten(name, overload)


def sparse(shape, dtype, seed=0, density=0.4):
    """Values with about `density` of them nonzero, -0.0 among the zeros of floats."""
    rng = np.random.default_rng(seed)
    values = np.asarray(rng.integers(1, 9, size=shape) * (rng.random(shape) < density))
    if dtype == np.bool_:
        return np.asarray(values != 0)
    values = values.astype(dtype)
    if np.issubdtype(dtype, np.floating):
        values[values == 0] = -0.0
    return values


SHAPES = {"0-d": (), "empty": (3, 0, 2), "one": (1,), "primes": (7, 11), "3d": (2, 3, 5), "4d": (2, 1, 3, 4)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("shape", SHAPES)
def test_nonzero_matches_torch(shape, dtype):
    fast = check_op("aten::nonzero", torch.nonzero, sparse(SHAPES[shape], dtype))
    assert fast.dtype == np.int64 and fast.shape[1] == len(SHAPES[shape])


@pytest.mark.parametrize("density", [0.0, 1.0])
def test_nonzero_of_none_and_of_all(density):
    x = sparse((4, 6), np.float32, density=density)
    assert check_op("aten::nonzero", torch.nonzero, x).shape == (int(density * 24), 2)


def test_nonzero_of_a_0d_zero_has_no_rows():
    assert check_op("aten::nonzero", torch.nonzero, np.array(0.0, np.float32)).shape == (0, 0)


def test_nonzero_of_a_strided_input():
    x = sparse((6, 9), np.float64, seed=3)
    check_op("aten::nonzero", torch.nonzero, x.T)
    check_op("aten::nonzero", torch.nonzero, x[::2, 1::3])


def test_nonzero_splits_large_inputs_between_threads_in_order():
    x = sparse((300, 517), np.float32, seed=5, density=0.05)  # above the parallel threshold
    check_op("aten::nonzero", torch.nonzero, x)


def test_nonzero_rejects_a_dtype_it_does_not_take():
    with pytest.raises(
        opgraph.Error,
        match=r"aten::nonzero: self: expected float32, float64, int64, int32 or bool, "
        r"got float16",
    ):
        call("aten::nonzero", np.zeros(3, np.float16))


def int_scalar(name, x, **attrs):
    fast, reference = call(name, x, **attrs), call_reference(name, x, **attrs)
    assert fast.shape == () and fast.dtype == np.int64
    assert reference == fast
    return int(fast)


@pytest.mark.parametrize("shape", [(1,), (3, 0, 2), (7, 11), (2, 3, 5)])
def test_size_ops_match_torch(shape):
    x = np.zeros(shape, np.float32)
    t = torch.from_numpy(x)
    for dim in range(-len(shape), len(shape)):
        assert int_scalar("aten::sym_size.int", x, dim=dim) == torch.ops.aten.sym_size.int(t, dim)
        assert int_scalar("aten::sym_stride.int", x, dim=dim) == torch.ops.aten.sym_stride.int(t, dim)
    assert int_scalar("aten::sym_numel", x) == torch.ops.aten.sym_numel(t)
    assert int_scalar("aten::sym_storage_offset", x) == torch.ops.aten.sym_storage_offset(t)


def test_sym_stride_reads_the_strides_it_is_given():
    x = np.zeros((4, 6), np.float32).T
    for dim in (0, 1):
        assert int_scalar("aten::sym_stride.int", x, dim=dim) == torch.from_numpy(x).stride(dim)


def test_size_ops_of_a_0d_tensor():
    x = np.array(2.5, np.float32)
    assert int_scalar("aten::sym_numel", x) == 1
    with pytest.raises(opgraph.Error, match=r"aten::sym_size.int: self: expected a tensor with dims, got float32\[\]"):
        call("aten::sym_size.int", x, dim=0)
    with pytest.raises(opgraph.Error, match=r"aten::sym_stride.int: dim: expected a dim in \[-2, 1\]"):
        call("aten::sym_stride.int", np.zeros((2, 3), np.float32), dim=2)


def test_sym_is_contiguous_is_true_for_what_the_kernels_see():
    x = np.ones((3, 4), np.float32)
    assert call("aten::sym_is_contiguous", x).dtype == np.bool_
    assert bool(call("aten::sym_is_contiguous", x)) and bool(call("aten::sym_is_contiguous", x.T))
    with pytest.raises(opgraph.Error, match=r"memory_format: opgraph tensors are row-major"):
        call("aten::sym_is_contiguous", x, memory_format="channels_last")


@pytest.mark.parametrize(
    "value",
    [
        np.array(-2.5, np.float32),
        np.array([7.25], np.float64),
        np.array([[-3]], np.int32),
        np.array(2**40, np.int64),
        np.array([True]),
    ],
)
def test_local_scalar_dense_keeps_the_value_and_dtype(value):
    fast, reference = call("aten::_local_scalar_dense", value), call_reference("aten::_local_scalar_dense", value)
    assert fast.shape == reference.shape == () and fast.dtype == reference.dtype == value.dtype
    assert fast == reference == torch.ops.aten._local_scalar_dense(torch.from_numpy(value))


def test_local_scalar_dense_needs_one_element():
    with pytest.raises(
        opgraph.Error,
        match=r"aten::_local_scalar_dense: self: expected a tensor with one element, "
        r"got float32\[2\]",
    ):
        call("aten::_local_scalar_dense", np.zeros(2, np.float32))


# ---- models exported with torch.export --------------------------------------------------------------------------


class NonzeroRows(nn.Module):
    """Sums the rows of x that hold a positive value, once per positive value."""

    def forward(self, x):
        rows = torch.nonzero(torch.relu(x))[:, 0]
        return torch.index_select(x, 0, rows).sum(0), torch.nonzero(x > 0)


class MaskedSum(nn.Module):
    def forward(self, x):
        return x[x > 0].sum(0)


def export_without_size_checks(model, x, dynamic_shapes=None):
    """torch.export's program less the checks it adds on the sizes it cannot know (u0 >= 0, u0 <= numel), which
    compute Python ints the IR does not hold; the runtime's kernels hold to those bounds themselves."""
    exported = torch.export.export(model, (x,), dynamic_shapes=dynamic_shapes)
    graph = exported.graph
    for node in list(graph.nodes):
        if node.target is torch.ops.aten._assert_scalar.default:
            graph.erase_node(node)
    graph.eliminate_dead_code()
    return exported


def test_unbacked_sizes_become_symbols_of_their_own():
    x = torch.randn(4, 5)
    exported = export_without_size_checks(NonzeroRows(), x, dynamic_shapes=({0: torch.export.Dim("batch")},))
    model_ir = convert_program(exported)
    assert model_ir.inputs[0].shape == ("s0", 5)
    shapes = {name: model_ir.values[name].shape for node in model_ir.nodes for name in node.outputs}
    assert shapes["nonzero"] == ("u0", 2)
    assert shapes["index_select"] == ("u0", 5)
    assert shapes["nonzero_1"] == ("u1", 2)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_model_with_nonzero_runs_on_a_session_as_in_torch(tmp_path, dynamic):
    x = torch.randn(6, 5)
    dynamic_shapes = ({0: torch.export.Dim("batch")},) if dynamic else None
    model_ir = convert_program(export_without_size_checks(NonzeroRows(), x, dynamic_shapes), "NonzeroRows")
    model_ir.save(tmp_path / "nonzero.opg")
    session = opgraph.Session(tmp_path / "nonzero.opg")
    # Every count of positive values, none and all included, from one session.
    for values in [x, -x.abs(), x.abs() + 1, torch.zeros(6, 5), torch.randn(6, 5)]:
        if dynamic:
            values = torch.cat([values, values[:2]])
        sums, indices = session.run(values.numpy())
        expected_sums, expected_indices = NonzeroRows()(values)
        np.testing.assert_allclose(np.asarray(sums), expected_sums.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(np.asarray(indices), expected_indices.numpy())


def test_a_boolean_mask_the_runtime_cannot_size_names_the_node_and_op(tmp_path):
    model_ir = convert_program(export_without_size_checks(MaskedSum(), torch.randn(3, 4)), "MaskedSum")
    model_ir.save(tmp_path / "masked.opg")
    with pytest.raises(
        opgraph.Error,
        match=r"node 'index' \(aten::index.Tensor\): .*boolean masks give a "
        r"data-dependent shape",
    ):
        opgraph.Session(tmp_path / "masked.opg")
