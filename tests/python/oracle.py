"""Holding a built-in op to its reference implementation and to PyTorch; the inputs, attributes and cases that
several test files share."""

import re

import numpy as np
import pytest
import torch

import opgraph
from opgraph.ops import call, call_reference

TOLERANCE = {
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5),
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
    np.dtype(np.complex64): dict(rtol=1e-5, atol=1e-5),
    np.dtype(np.complex128): dict(rtol=1e-12, atol=1e-12),
}


def as_torch(value):
    if isinstance(value, (list, tuple)):  # a Tensor[] input
        return [as_torch(item) for item in value]
    return torch.from_numpy(value) if isinstance(value, np.ndarray) else value


def check_op(name, torch_fn, *inputs, tolerance=None, **attrs):
    """Runs `name` on `inputs` (NumPy arrays, possibly strided views, or lists
    of them for a Tensor[]) with the fast kernel and the reference implementation, and torch_fn on the same
    values as torch tensors; asserts all three agree. Returns the fast result."""
    fast = call(name, *inputs, **attrs)
    reference = call_reference(name, *inputs, **attrs)
    expected = torch_fn(*[as_torch(x) for x in inputs])
    fast_list = fast if isinstance(fast, tuple) else (fast,)
    reference_list = reference if isinstance(reference, tuple) else (reference,)
    expected_list = expected if isinstance(expected, (tuple, list)) else (expected,)
    assert len(fast_list) == len(reference_list) == len(expected_list)
    for got, ref, want in zip(fast_list, reference_list, expected_list):
        want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
        tol = tolerance or TOLERANCE.get(want.dtype, dict(rtol=0, atol=0))
        assert got.shape == want.shape, f"{name}: shape {got.shape}, torch gives {want.shape}"
        assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, torch gives {want.dtype}"
        np.testing.assert_allclose(ref, want, **tol, err_msg=f"{name}: reference vs torch")
        np.testing.assert_allclose(got, ref, **tol, err_msg=f"{name}: fast kernel vs reference")
    return fast


def aten_schema(overload):
    """ATen's schema of a torch.ops.aten overload as opgraph writes it: floats
    keep a digit after the point (0.0, where ATen prints 0.) and MemoryFormat
    defaults are names (contiguous_format, where ATen prints the enum's 0)."""
    text = re.sub(r"=(-?\d+)\.(?=[,)])", r"=\1.0", str(overload._schema))
    return text.replace("memory_format=0", "memory_format=contiguous_format")


def assert_schema_is_aten(name, overload="default"):
    """The registry's aten::<name>[.<overload>] has ATen's schema."""
    qualified = f"aten::{name}" if overload == "default" else f"aten::{name}.{overload}"
    assert str(opgraph.op_schema(qualified)) == aten_schema(getattr(getattr(torch.ops.aten, name), overload))


# ---- inputs ------------------------------------------------------------------------


def random(shape, dtype, seed=0, layout="contiguous"):
    """Standard normal values; "transposed": the same values, laid out with the dims reversed."""
    rng = np.random.default_rng(seed)
    if layout == "transposed":
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    return rng.standard_normal(shape).astype(dtype)


# ---- convolutions --------------------------------------------------------------------


def sums_tolerance(dtype):
    """float32 sums of many products (PyTorch adds them in another order): 1e-4; float64: check_op's own."""
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else None


def listed(value, spatial):
    """An int-or-tuple convolution attribute as aten::convolution's int[] takes it."""
    return list(value) if isinstance(value, tuple) else [value] * spatial


def convolution_attrs(spatial, transposed=False, **given):
    """aten::convolution's attributes for a plain convolution of `spatial` dims, with `given` replacing some."""
    attrs = dict(
        stride=[1] * spatial,
        padding=[0] * spatial,
        dilation=[1] * spatial,
        transposed=transposed,
        output_padding=[0] * spatial,
        groups=1,
    )
    attrs.update(given)
    return attrs


# ---- reductions ----------------------------------------------------------------------
# A table of reductions maps each op (name[.overload]) to (overload, how the schema takes dim, dtypes beyond the
# floats, whether no elements is an error).

FLOATS = [np.float32, np.float64]
INTEGERS = [np.int32, np.int64, np.bool_]
REDUCTION_SHAPES = [(), (0, 5), (1, 1), (7,), (3, 257), (2, 3, 5, 7), (70001,), (5, 20011)]
# float32 over long rows: PyTorch accumulates in float32, opgraph in double.
LONG_TOLERANCE = dict(rtol=2e-4, atol=1e-4)


def dim_attrs(kind, rank):
    """The dim arguments a schema of this kind takes, for a tensor of this rank."""
    singles = list(range(rank)) + [-1] if rank else [0, -1]
    multi = [[0, -1]] if rank >= 2 else []
    multi += [[1, 3]] if rank == 4 else []
    return {
        "none": [{}],
        "int": [dict(dim=d) for d in singles],
        "optint": [dict(dim=None)] + [dict(dim=d) for d in singles],
        "list": [dict(dim=[])] + [dict(dim=[d]) for d in singles] + [dict(dim=m) for m in multi],
        "optlist": [dict(dim=None), dict(dim=[])] + [dict(dim=[d]) for d in singles] + [dict(dim=m) for m in multi],
    }[kind]


def reduced(shape, op, dim):
    """The dims the call reduces."""
    if dim is None or (dim == [] and op != "any.dims"):
        return list(range(len(shape)))
    return [d % len(shape) for d in (dim if isinstance(dim, list) else [dim])] if shape else []


def reduction_sample(shape, dtype, layout="contiguous", seed=0):
    """Floats around 1 (products stay finite), small integers (ties for the arg ops), half-true bools."""
    rng = np.random.default_rng(seed)
    full = {"transposed": shape[::-1], "sliced": (*shape[:-1], 2 * shape[-1]) if shape else ()}.get(layout, shape)
    if dtype in FLOATS:
        values = 1 + 0.05 * rng.standard_normal(full)
    elif dtype == np.bool_:
        values = rng.random(full) < 0.5
    else:
        values = rng.integers(-3, 4, full)
    x = np.asarray(values, dtype=dtype)
    if layout == "transposed":
        return x.T
    return x[..., ::2] if layout == "sliced" and shape else x


def reduction_cases(ops, dtypes):
    """pytest params (op, dtype, shape, attrs): each op of the table on each of its dtypes, shapes and dims."""
    for op, (_, kind, extra, needs_elements) in ops.items():
        for dtype in [d for d in dtypes if d in FLOATS + extra]:
            for shape in REDUCTION_SHAPES:
                for attrs in dim_attrs(kind, len(shape)):
                    if needs_elements and any(shape[d] == 0 for d in reduced(shape, op, attrs.get("dim"))):
                        continue
                    yield pytest.param(op, dtype, shape, attrs, id=f"{op}-{np.dtype(dtype).name}-{shape}-{attrs}")


def check_reduction(ops, op, x, attrs, keepdim=None, **extra):
    """check_op on the table's op, with keepdim where its schema takes one."""
    overload, kind = ops[op][:2]
    attrs = dict(attrs, **extra)
    if keepdim is not None and kind != "none":
        attrs["keepdim"] = keepdim
    tolerance = LONG_TOLERANCE if x.dtype == np.float32 and x.size > 10_000 else None
    aten_op = getattr(getattr(torch.ops.aten, op.split(".")[0]), overload)
    check_op("aten::" + op, lambda t: aten_op(t, **attrs), x, tolerance=tolerance, **attrs)


def reduction_tests(ops):
    """The tests each table of reductions gets, for its test file to take as its own
    (`test_matches_torch, test_strided_inputs, test_schema_is_aten = reduction_tests(OPS)`): every case against
    PyTorch with and without keepdim, the cases on strided inputs, and each op's schema."""

    @pytest.mark.parametrize("keepdim", [False, True])
    @pytest.mark.parametrize("op, dtype, shape, attrs", list(reduction_cases(ops, FLOATS + INTEGERS)))
    def test_matches_torch(op, dtype, shape, attrs, keepdim):
        check_reduction(ops, op, reduction_sample(shape, dtype), attrs, keepdim)

    @pytest.mark.parametrize("layout", ["transposed", "sliced"])
    @pytest.mark.parametrize("op, dtype, shape, attrs", list(reduction_cases(ops, [np.float64, np.int32])))
    def test_strided_inputs(op, dtype, shape, attrs, layout):
        check_reduction(ops, op, reduction_sample(shape, dtype, layout), attrs, keepdim=False)

    @pytest.mark.parametrize("op", ops)
    def test_schema_is_aten(op):
        assert_schema_is_aten(op.split(".")[0], ops[op][0])

    return test_matches_torch, test_strided_inputs, test_schema_is_aten
