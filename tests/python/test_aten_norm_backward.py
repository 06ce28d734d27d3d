"""aten native_layer_norm_backward and native_group_norm_backward against the reference and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten
from test_aten_norm import DTYPES, affine, make
from test_aten_norm_group import GROUP_NORM_CASES, group_sizes

import opgraph
from opgraph.ops import call, call_reference

aten = torch.ops.aten

MASKS = [[True, True, True], [True, False, False], [False, True, True], [False, False, True], [False, False, False]]


def test_schemas_are_atens():
    for name, overload in [
        ("native_layer_norm_backward", "default"),
        ("native_group_norm_backward", "default"),
    ]:
        assert_schema_is_aten(name, overload)


def check_gradients(name, torch_fn, inputs, mask, tol, **attrs):
    """The op's three outputs against torch's where output_mask asks for them; empty where it does not."""
    fast = call(name, *inputs, output_mask=mask, **attrs)
    reference = call_reference(name, *inputs, output_mask=mask, **attrs)
    expected = torch_fn(*[torch.from_numpy(t) if t is not None else None for t in inputs], mask)
    for wanted, got, ref, want in zip(mask, fast, reference, expected):
        if not wanted:
            assert want is None and got.shape == ref.shape == (0,)
            continue
        want = want.numpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(ref, want, **tol, err_msg=f"{name}: reference vs torch")
        np.testing.assert_allclose(got, ref, **tol, err_msg=f"{name}: fast kernel vs reference")


def or_ones(weight, shape, like):
    """torch's norm gradients fail without a weight for some masks ("tensor does not have a device"): ones are the
    same."""
    return weight if weight is not None else torch.ones(shape, dtype=like.dtype)


def gradient_tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


LAYER_NORM_BACKWARD_CASES = [
    ((4, 15), [15]),
    ((3, 1001), [1001]),
    ((2, 3, 5, 7), [5, 7]),
    ((1, 1), [1]),
    ((0, 5), [5]),
    ((7,), [7]),
    ((2, 70001), [70001]),
    ((300, 3), [3]),
]


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("shape, normalized", LAYER_NORM_BACKWARD_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_layer_norm_backward(dtype, shape, normalized, with_weight, mask):
    x, grad = make(shape, dtype, "transposed"), make(shape, dtype, seed=5)
    weight, bias = affine(normalized, dtype, "both" if with_weight else "none")
    _, mean, rstd = aten.native_layer_norm(torch.from_numpy(x), normalized, None, None, 1e-5)
    inputs = [grad, x, mean.numpy(), rstd.numpy(), weight, bias]
    check_gradients(
        "aten::native_layer_norm_backward",
        lambda g, t, m, r, w, b, mask: aten.native_layer_norm_backward(
            g, t, normalized, m, r, or_ones(w, normalized, t), or_ones(b, normalized, t), mask
        ),
        inputs,
        mask,
        gradient_tolerance(dtype),
        normalized_shape=normalized,
    )


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("shape, groups", [c for c in GROUP_NORM_CASES if c[0][0] > 0])
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_group_norm_backward(dtype, shape, groups, with_weight, mask):
    x, grad = make(shape, dtype, "sliced"), make(shape, dtype, seed=5)
    weight = make([shape[1]], dtype, seed=1) if with_weight else None
    sizes = group_sizes(shape, groups)
    _, mean, rstd = aten.native_group_norm(torch.from_numpy(x), None, None, *sizes.values(), 1e-5)
    inputs = [grad, x, mean.numpy(), rstd.numpy(), weight]
    check_gradients(
        "aten::native_group_norm_backward",
        lambda g, t, m, r, w, mask: aten.native_group_norm_backward(
            g, t, m, r, or_ones(w, shape[1], t), *sizes.values(), mask
        ),
        inputs,
        mask,
        gradient_tolerance(dtype),
        **sizes,
    )


def test_norm_gradient_errors():
    x = np.ones((2, 6, 4), np.float32)
    stats = np.ones((2, 3), np.float32)
    sizes = dict(N=2, C=6, HxW=4, group=3)
    with pytest.raises(
        opgraph.Error,
        match=r"native_group_norm_backward: mean: expected float32\[2, 3\] like the "
        r"forward's mean \(N, group\), got float32\[2, 2\]",
    ):
        call(
            "aten::native_group_norm_backward",
            x,
            x,
            np.ones((2, 2), np.float32),
            stats,
            None,
            **sizes,
            output_mask=[True, True, True],
        )
    with pytest.raises(
        opgraph.Error,
        match=r"native_group_norm_backward: grad_out: expected float32\[2, 6, 4\] "
        r"like input, got float32\[2, 6, 2\]",
    ):
        call(
            "aten::native_group_norm_backward",
            x[..., :2].copy(),
            x,
            stats,
            stats,
            None,
            **sizes,
            output_mask=[True, True, True],
        )
    with pytest.raises(
        opgraph.Error,
        match=r"native_layer_norm_backward: rstd: expected float32\[2, 6, 1\] \(one "
        r"value per normalized row of input float32\[2, 6, 4\]\), got "
        r"float32\[3\]",
    ):
        call(
            "aten::native_layer_norm_backward",
            x,
            x,
            np.ones((2, 6, 1), np.float32),
            np.ones(3, np.float32),
            None,
            None,
            normalized_shape=[4],
            output_mask=[True, False, False],
        )
    with pytest.raises(opgraph.Error, match=r"output_mask"):
        call(
            "aten::native_layer_norm_backward",
            x,
            x,
            np.ones((2, 6, 1), np.float32),
            np.ones((2, 6, 1), np.float32),
            None,
            None,
            normalized_shape=[4],
            output_mask=[True, False],
        )
