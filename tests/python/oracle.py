"""Holding a built-in op to its reference implementation and to PyTorch."""

import re

import numpy as np
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
