"""aten::cat and aten::stack: Tensor[] inputs, against PyTorch and the reference."""

import numpy as np
import pytest
import torch
from oracle import check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64, np.int64]
LAYOUTS = ["contiguous", "transposed", "sliced", "mixed"]
EXACT = dict(rtol=0, atol=0)  # a copy is exact

# (shapes of the inputs, dim)
CAT_CASES = [
    ([(3, 5)], 0),
    ([(3, 5)], -1),
    ([(2, 3), (4, 3), (1, 3), (7, 3)], 0),
    ([(5,), (1,), (13,)], 0),
    ([(2, 3, 5), (2, 1, 5), (2, 7, 5)], 1),
    ([(2, 3, 5), (2, 1, 5), (2, 7, 5)], -2),
    ([(3, 1), (3, 4), (3, 2)], -1),
    ([(1, 1, 1), (1, 1, 1)], 2),
    ([(2, 0, 5), (2, 3, 5), (2, 0, 5)], 1),
    ([(0, 3), (0, 3)], 0),
    ([(0, 3), (0, 4)], 1),
    ([(3, k) for k in range(17)], 1),
    ([(0,), (2, 3), (0,)], 1),
    ([(0,), (4,)], 0),
    ([(0,), (0,)], -1),
    ([(11, 7, 3), (11, 7, 2)], -1),
    ([(64, 1000), (64, 1001)], 1),  # big enough to split over threads
    ([(300, 517), (211, 517)], 0),
    ([(2, 65537, 2), (2, 1, 2)], 1),
]

# (shape of every input, number of inputs)
STACK_CASES = [
    ((), 3),
    ((5,), 1),
    ((5,), 4),
    ((2, 3), 3),
    ((0, 3), 2),
    ((3, 0), 5),
    ((7, 11, 13), 2),
    ((1, 1), 6),
    ((128, 1031), 3),
]


def make(shape, dtype, layout="contiguous", seed=0):
    """Random values of `shape`, laid out as asked (views share a larger base)."""
    rng = np.random.default_rng(seed)

    def values(shape):
        if np.issubdtype(dtype, np.floating):
            return rng.standard_normal(shape).astype(dtype)
        return rng.integers(0, 100, shape).astype(dtype)

    if layout == "transposed":
        return values(shape[::-1]).T
    if layout == "sliced" and len(shape) > 0:
        return values((*shape[:-1], 2 * shape[-1]))[..., ::2]
    return values(shape)


def make_list(shapes, dtype, layout):
    """One tensor per shape; "mixed" alternates contiguous and strided inputs."""
    layouts = {"mixed": ["contiguous", "transposed", "sliced"]}.get(layout, [layout])
    return [make(shape, dtype, layouts[i % len(layouts)], seed=i) for i, shape in enumerate(shapes)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shapes, dim", CAT_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cat(shapes, dim, dtype, layout):
    tensors = make_list(shapes, dtype, layout)
    check_op("aten::cat", lambda ts: torch.cat(ts, dim), tensors, dim=dim, tolerance=EXACT)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, count", STACK_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_stack(shape, count, dtype, layout):
    tensors = make_list([shape] * count, dtype, layout)
    for dim in range(-len(shape) - 1, len(shape) + 1):
        check_op("aten::stack", lambda ts: torch.stack(ts, dim), tensors, dim=dim, tolerance=EXACT)


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8, np.int32, np.bool_])
def test_every_numpy_dtype(dtype):
    tensors = [make((2, 3), dtype, seed=0), make((2, 5), dtype, "sliced", seed=1)]
    check_op("aten::cat", lambda ts: torch.cat(ts, 1), tensors, dim=1, tolerance=EXACT)
    check_op("aten::stack", lambda ts: torch.stack(ts, 1), tensors[:1] * 3, dim=1, tolerance=EXACT)


def test_bfloat16_through_torch():
    tensors = [torch.randn(3, 4).to(torch.bfloat16), torch.randn(3, 2).to(torch.bfloat16)]
    out = torch.empty(3, 6, dtype=torch.bfloat16)
    assert call("aten::cat", tensors, dim=-1, out=out) is out
    assert torch.equal(out, torch.cat(tensors, -1))


def test_list_or_tuple_of_any_arrays():
    a, b = make((2, 3), np.float32), torch.arange(6, dtype=torch.float32).reshape(2, 3)
    expected = torch.cat([torch.from_numpy(a), b], 0).numpy()
    np.testing.assert_array_equal(call("aten::cat", [a, b]), expected)
    np.testing.assert_array_equal(call("aten::cat", (a, opgraph.from_dlpack(b)), dim=0), expected)


def test_out_is_filled_in_place():
    tensors = [make((2, 3), np.float64), make((2, 4), np.float64, seed=1)]
    out = np.full((2, 7), np.nan)
    assert call("aten::cat", tensors, dim=1, out=out) is out
    np.testing.assert_array_equal(out, np.concatenate(tensors, 1))
    with pytest.raises(opgraph.Error, match=r"aten::cat: output 0 must be float64\[2, 7\], got float64\[2, 8\]"):
        call("aten::cat", tensors, dim=1, out=np.empty((2, 8)))


def test_schemas_round_trip():
    for name, aten in [("aten::cat", torch.ops.aten.cat.default), ("aten::stack", torch.ops.aten.stack.default)]:
        schema = opgraph.op_schema(name)
        assert str(schema) == str(aten._schema) == f"{name}(Tensor[] tensors, int dim=0) -> Tensor"
        assert opgraph.parse_schema(str(schema)) == schema
        tensors, dim = schema.arguments
        assert tensors.is_tensor and tensors.type == "Tensor[]" and not tensors.optional
        assert not dim.is_tensor and dim.type == "int" and dim.default == 0
        assert opgraph.op_backward(name) == ""


def floats(*shape):
    return np.zeros(shape, np.float32)


@pytest.mark.parametrize(
    "op, tensors, dim, message",
    [
        ("aten::cat", [], 0, "tensors: expected a non-empty list of tensors"),
        ("aten::stack", [], 0, "tensors: expected a non-empty list of tensors"),
        (
            "aten::cat",
            [floats(2, 3), np.zeros((2, 3))],
            0,
            r"tensors\[1\]: expected float32 like tensors\[0\], got float64\[2, 3\] \(dtypes are not promoted\)",
        ),
        (
            "aten::cat",
            [floats(0), floats(2), np.zeros(2, np.int64)],
            0,
            r"tensors\[2\]: expected float32 like tensors\[0\], got int64\[2\]",
        ),
        (
            "aten::cat",
            [floats(2, 3), floats(3)],
            0,
            r"tensors\[1\]: expected rank 2 like tensors\[0\], got float32\[3\]",
        ),
        (
            "aten::cat",
            [floats(2, 3), floats(2, 4), floats(3, 3)],
            1,
            r"tensors\[2\]: expected size 2 in dimension 0 like tensors\[0\], got float32\[3, 3\] \(sizes must match "
            r"except in dim 1\)",
        ),
        (
            "aten::cat",
            [floats(0), floats(2, 3), floats(2, 4)],
            0,
            r"tensors\[2\]: expected size 3 in dimension 1 like tensors\[1\], got float32\[2, 4\]",
        ),
        ("aten::cat", [floats(2), floats()], 0, r"tensors\[1\]: expected a tensor of rank 1 or more, got float32\[\]"),
        ("aten::cat", [floats(2, 3)], 2, r"dim: expected a dim in \[-2, 1\] for a tensor of rank 2, got 2"),
        ("aten::cat", [floats(2, 3)], -3, r"dim: expected a dim in \[-2, 1\] for a tensor of rank 2, got -3"),
        (
            "aten::stack",
            [floats(2, 3), floats(2, 4)],
            0,
            r"tensors\[1\]: expected shape \[2, 3\] like tensors\[0\], got float32\[2, 4\]",
        ),
        (
            "aten::stack",
            [floats(2, 3), np.zeros((2, 3), np.int32)],
            0,
            r"tensors\[1\]: expected float32 like tensors\[0\], got int32\[2, 3\]",
        ),
        ("aten::stack", [floats(2, 3)], 3, r"dim: expected a dim in \[-3, 2\] for a tensor of rank 3, got 3"),
    ],
)
def test_bad_tensors(op, tensors, dim, message):
    for run in (call, opgraph.ops.call_reference):
        with pytest.raises(opgraph.Error, match=f"^{op}: {message}"):
            run(op, tensors, dim=dim)


@pytest.mark.parametrize(
    "args, message",
    [
        ((), r"input 'tensors' \(Tensor\[\]\) was not given"),
        ((floats(3),), r"input 'tensors' must be a list or tuple of arrays \(Tensor\[\]\), got ndarray"),
        ((floats(3), floats(3)), r"input 'tensors' must be a list or tuple of arrays"),
        (
            ([floats(3), 2.0],),
            r"input 'tensors\[1\]' must be an array \(NumPy, PyTorch or any DLPack or buffer "
            r"producer\), got float",
        ),
        (([floats(3), None],), r"input 'tensors\[1\]' must be an array .*, got NoneType"),
        (([floats(3)], floats(3)), r"expected 1 tensor inputs \(tensors \(1 tensor\)\), got 2"),
        (([floats(3), np.ones(2, np.uint16)],), r"input 'tensors\[1\]': unsupported array dtype"),
    ],
)
def test_bad_calls_name_the_argument(args, message):
    with pytest.raises(opgraph.Error, match=f"^aten::cat: {message}"):
        call("aten::cat", *args)
