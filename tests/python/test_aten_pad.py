"""constant_pad_nd and the reflection and replication pads against their
references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

aten = torch.ops.aten


def tensor(shape, dtype=np.float32, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) * 10
    return np.asarray(values > 0 if dtype == np.bool_ else values, dtype)


CONSTANT_PADS = {
    "last-dim": ((3, 5), [1, 2]),
    "two-dims": ((2, 3, 5), [2, 0, 1, 3]),
    "every-dim": ((2, 3, 7), [1, 1, 0, 2, 3, 0]),
    "crop": ((4, 7), [-2, -1, 1, -3]),
    "crop-to-nothing": ((4, 7), [-3, -4]),
    "crop-and-pad-one-dim": ((4, 7), [-2, 3]),
    "none": ((3, 2), []),
    "zero-pads": ((3, 2), [0, 0]),
    "empty-dim": ((0, 3), [0, 0, 2, 1]),
    "pad-an-empty-dim": ((2, 0), [2, 1]),
    "scalar": ((), []),
    "rank-5": ((1, 2, 3, 2, 5), [1, 0, 0, 1, 2, 2, 0, 0, 1, 1]),
    "wide": ((1, 3, 67, 131), [3, 5, 7, 2]),  # past the threading threshold
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("case", CONSTANT_PADS)
def test_constant_pad_nd(case, dtype):
    shape, pad = CONSTANT_PADS[case]
    value = 1 if dtype == np.bool_ else 3  # a Scalar attribute holds no bool: 1 stands for True
    check_op(
        "aten::constant_pad_nd",
        lambda t: aten.constant_pad_nd(t, pad, value),
        tensor(shape, dtype),
        pad=pad,
        value=value,
    )


def test_constant_pad_nd_float_value_and_default():
    x = tensor((2, 3))
    check_op("aten::constant_pad_nd", lambda t: aten.constant_pad_nd(t, [1, 1], -2.5), x, pad=[1, 1], value=-2.5)
    check_op("aten::constant_pad_nd", lambda t: aten.constant_pad_nd(t, [0, 1, 1, 0]), x, pad=[0, 1, 1, 0])


def test_constant_pad_nd_strided_input():
    x = tensor((6, 8))[::2, 1::3].T
    check_op(
        "aten::constant_pad_nd", lambda t: aten.constant_pad_nd(t, [2, -1, 0, 3], 1.0), x, pad=[2, -1, 0, 3], value=1.0
    )


# (input shape, padding) per op; padding has (before, after) for the last dim first.
SPATIAL = {
    1: [
        ((2, 5), [2, 3]),
        ((3, 2, 7), [0, 6]),
        ((1, 1, 1), [0, 0]),
        ((0, 3, 4), [1, 1]),
        ((2, 3, 11), [-2, 4]),
        ((1, 2, 4099), [5, 7]),
    ],
    2: [
        ((3, 4, 5), [1, 2, 3, 0]),
        ((2, 3, 5, 7), [4, 4, 2, 2]),
        ((1, 1, 1, 1), [0, 0, 0, 0]),
        ((2, 1, 3, 2), [1, 0, 0, 2]),
        ((1, 2, 13, 17), [-1, 3, 2, -2]),
        ((1, 3, 64, 67), [3, 2, 1, 5]),
    ],
    3: [
        ((2, 3, 4, 5), [1, 2, 0, 3, 2, 1]),
        ((2, 1, 3, 5, 2), [1, 1, 4, 0, 2, 2]),
        ((1, 1, 1, 1, 1), [0] * 6),
        ((1, 2, 5, 7, 11), [-1, 3, 2, -2, 1, 0]),
    ],
}
SPATIAL_CASES = [(dims, shape, padding) for dims, cases in SPATIAL.items() for shape, padding in cases]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("mode", ["reflection", "replication"])
@pytest.mark.parametrize("dims, shape, padding", SPATIAL_CASES)
def test_spatial_pads(mode, dims, shape, padding, dtype):
    if mode == "reflection" and any(p >= shape[-1 - k // 2] for k, p in enumerate(padding)):
        pytest.skip("reflection pads stay below the extent they mirror")
    name = f"{mode}_pad{dims}d"
    op = getattr(aten, name)
    check_op(f"aten::{name}", lambda t: op(t, padding), tensor(shape, dtype), padding=padding)


@pytest.mark.parametrize("mode", ["reflection", "replication"])
def test_spatial_pad_strided_input(mode):
    x = tensor((3, 8, 10))[:, ::2, 1::2].transpose(0, 2, 1).copy().transpose(0, 2, 1)
    check_op(f"aten::{mode}_pad2d", lambda t: getattr(aten, f"{mode}_pad2d")(t, [1, 2, 3, 1]), x, padding=[1, 2, 3, 1])


PADS = [
    ("constant", (2, 3, 5), [1, 2], None),
    ("constant", (2, 3, 5), [1, -2, 0, 1, 2, 0], 1.5),
    ("reflect", (2, 7), [3, 2], None),
    ("reflect", (2, 3, 5, 4), [1, 3, 2, 2], None),
    ("replicate", (3, 4, 5), [2, 0, 1, 4], None),
    ("replicate", (1, 2, 3, 4, 5), [1, 1, 2, 0, 0, 3], None),
    ("circular", (2, 3, 5), [2, 5], None),
    ("circular", (1, 2, 4, 5), [3, 1, 0, 4], None),
    ("circular", (1, 2, 3, 4, 2), [1, 0, 2, 1, 0, 3], None),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("mode, shape, pad, value", PADS)
def test_pad(mode, shape, pad, value, dtype):
    check_op(
        "aten::pad", lambda t: aten.pad(t, pad, mode, value), tensor(shape, dtype), pad=pad, mode=mode, value=value
    )


class Pads(torch.nn.Module):
    def forward(self, x):
        pad = torch.nn.functional.pad
        return (
            pad(x, (1, 2, 2, 1), mode="reflect"),
            pad(x, (1, 1, 0, 1), mode="replicate"),
            pad(x, (2, 1, 1, 0), mode="circular"),
            pad(x, (1, -1, 0, 2), value=0.5),
        )


def test_exported_pads_run_on_the_session(tmp_path):
    from opgraph import ir

    model, x = Pads(), torch.randn(1, 3, 5, 6)
    model_ir = ir.extract_ir(model, (x,))  # not decomposed: F.pad stays aten::pad
    assert {node.op_type for node in model_ir.nodes} == {"aten::pad"}
    model_ir.save(tmp_path / "pads.opg")
    actual = opgraph.Session(str(tmp_path / "pads.opg")).run(x)
    for got, want in zip(actual, model(x), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "name",
    [
        "constant_pad_nd",
        "pad",
        "reflection_pad1d",
        "reflection_pad2d",
        "reflection_pad3d",
        "replication_pad1d",
        "replication_pad2d",
        "replication_pad3d",
    ],
)
def test_schema_is_aten(name):
    assert_schema_is_aten(name)


BAD = {
    "odd-pad": ("aten::constant_pad_nd", (3, 4), dict(pad=[1, 2, 3]), r"pad: expected an even number of values"),
    "too-many-pads": ("aten::constant_pad_nd", (3,), dict(pad=[1, 1, 1, 1]), r"pad: 4 values pad more dims"),
    "negative-extent": (
        "aten::constant_pad_nd",
        (3, 4),
        dict(pad=[-3, -2]),
        r"pad: \[-3, -2\] gives dim 1 of input float32\[3, 4\] extent -1",
    ),
    "reflect-too-far": (
        "aten::reflection_pad1d",
        (2, 3),
        dict(padding=[3, 0]),
        r"padding: \[3, 0\] must stay below the extent it reflects, but 3 pads a dim of extent 3",
    ),
    "reflect-too-far-2d": (
        "aten::reflection_pad2d",
        (1, 2, 3),
        dict(padding=[0, 0, 0, 2]),
        r"padding: .* but 2 pads a dim of extent 2",
    ),
    "replicate-to-nothing": (
        "aten::replication_pad1d",
        (2, 3),
        dict(padding=[-3, 0]),
        r"padding: \[-3, 0\] gives dim 1 .* extent 0, expected at least 1",
    ),
    "rank": (
        "aten::reflection_pad2d",
        (3, 4),
        dict(padding=[1, 1, 1, 1]),
        r"self: expected rank 3 or 4 \(\(batch,\) channels and 2 padded dims\), got float32\[3, 4\]",
    ),
    "empty-channels": (
        "aten::replication_pad1d",
        (0, 4),
        dict(padding=[1, 1]),
        r"self: expected non-zero extents except the batch's",
    ),
    "pad-mode": (
        "aten::pad",
        (3, 4),
        dict(pad=[1, 1], mode="wrap"),
        r"mode: expected constant, reflect, replicate or circular, got 'wrap'",
    ),
    "pad-value": (
        "aten::pad",
        (3, 4),
        dict(pad=[1, 1], mode="reflect", value=1.0),
        r"value: mode 'reflect' takes no value, got 1.0",
    ),
    "pad-dims": (
        "aten::pad",
        (1, 2, 3, 4, 5),
        dict(pad=[1] * 8, mode="replicate"),
        r"pad: mode 'replicate' pads 1, 2 or 3 dims: expected 2, 4 or 6 values",
    ),
    "pad-circular-twice": (
        "aten::pad",
        (1, 2, 3),
        dict(pad=[4, 0], mode="circular"),
        r"pad: \[4, 0\] must stay within the extent it wraps, but 4 pads a dim of extent 3",
    ),
    "pad-circular-crop": (
        "aten::pad",
        (1, 2, 3),
        dict(pad=[1, -1], mode="circular"),
        r"pad: \[1, -1\] crops, which a circular pad does not take here",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, shape, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, tensor(shape), **attrs)
