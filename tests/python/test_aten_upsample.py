"""Upsampling (nearest, linear, bilinear, trilinear, bicubic) against the reference and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph import ir
from opgraph.ops import call

DTYPES = [np.float32, np.float64]
aten = torch.ops.aten

# op, spatial dims, whether it takes align_corners
OPS = [
    ("upsample_nearest1d", 1, False),
    ("upsample_nearest2d", 2, False),
    ("upsample_nearest3d", 3, False),
    ("upsample_linear1d", 1, True),
    ("upsample_bilinear2d", 2, True),
    ("upsample_trilinear3d", 3, True),
    ("upsample_bicubic2d", 2, True),
]
SCALE_NAMES = {1: ["scales"], 2: ["scales_h", "scales_w"], 3: ["scales_d", "scales_h", "scales_w"]}
# Per spatial dim: (input size, output size given directly, scale factor given instead). Up- and downsampling,
# sizes equal and doubled (nearest2d's shortcuts), 1-sized dims, primes and scales that are not integers.
AXES = [(5, 7, 1.7), (13, 4, 0.35), (1, 3, 2.5), (6, 12, 2.01), (7, 7, 1.01), (4, 1, 0.3), (11, 11, 1.0)]
TOLERANCE = {np.float32: dict(rtol=1e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def cases(dims):
    """A few combinations of AXES for ops of `dims` spatial dims."""
    return [tuple(AXES[(i + k) % len(AXES)] for k in range(dims)) for i in range(len(AXES))]


@pytest.mark.parametrize("name, dims, linear", OPS)
def test_schemas_are_aten(name, dims, linear):
    assert_schema_is_aten(name)
    assert_schema_is_aten(name, "vec")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("by_scale", [False, True])
@pytest.mark.parametrize("name, dims, linear", OPS)
def test_vec(name, dims, linear, by_scale, align_corners, dtype):
    if align_corners and not linear:
        pytest.skip("nearest has no align_corners")
    for i, axes in enumerate(cases(dims)):
        x = random((2, 3) + tuple(a[0] for a in axes), dtype, i)
        size = None if by_scale else [a[1] for a in axes]
        scales = [a[2] for a in axes] if by_scale else None
        if linear:

            def fn(t):
                return getattr(aten, name).vec(t, size, align_corners, scales)

            attrs = dict(output_size=size, align_corners=align_corners, scale_factors=scales)
        else:

            def fn(t):
                return getattr(aten, name).vec(t, size, scales)

            attrs = dict(output_size=size, scale_factors=scales)
        check_op(f"aten::{name}.vec", fn, x, tolerance=TOLERANCE[dtype], **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_scales", [False, True])
@pytest.mark.parametrize("name, dims, linear", OPS)
def test_default_overload(name, dims, linear, with_scales, dtype):
    """output_size with the scales that go with it: the scales decide which inputs are read."""
    for i, axes in enumerate(cases(dims)):
        x = random((1, 2) + tuple(a[0] for a in axes), dtype, i)
        size = [int(a[0] * a[2]) or 1 for a in axes]
        scales = {n: (a[2] if with_scales else None) for n, a in zip(SCALE_NAMES[dims], axes)}
        attrs = dict(output_size=size, **scales)
        if linear:
            attrs["align_corners"] = False
        check_op(f"aten::{name}", lambda t: getattr(aten, name)(t, **attrs), x, tolerance=TOLERANCE[dtype], **attrs)


@pytest.mark.parametrize("name, dims, linear", OPS)
def test_non_contiguous_and_empty_batch(name, dims, linear):
    x = random((4, 3) + (6,) * dims, np.float32).swapaxes(0, 1)[:, ::2]  # (3, 2, 6...) strided
    attrs = dict(output_size=[5] * dims, scale_factors=None)
    if linear:
        attrs["align_corners"] = True
    fn = (
        (lambda t: getattr(aten, name).vec(t, [5] * dims, True, None))
        if linear
        else (lambda t: getattr(aten, name).vec(t, [5] * dims, None))
    )
    check_op(f"aten::{name}.vec", fn, x, **attrs)
    empty = np.zeros((0, 3) + (4,) * dims, np.float32)
    check_op(f"aten::{name}.vec", fn, empty, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bilinear_large_threaded(dtype):
    x = random((2, 16, 33, 47), dtype)
    for align in [False, True]:
        check_op(
            "aten::upsample_bilinear2d.vec",
            lambda t: aten.upsample_bilinear2d.vec(t, None, align, [2.3, 1.6]),
            x,
            tolerance=TOLERANCE[dtype],
            output_size=None,
            align_corners=align,
            scale_factors=[2.3, 1.6],
        )
    check_op(
        "aten::upsample_nearest2d.vec",
        lambda t: aten.upsample_nearest2d.vec(t, None, [2.0, 2.0]),
        x,
        output_size=None,
        scale_factors=[2.0, 2.0],
    )


@pytest.mark.parametrize(
    "op, x, attrs, message",
    [
        (
            "aten::upsample_nearest2d.vec",
            random((3, 4, 4), np.float32),
            dict(output_size=[2, 2], scale_factors=None),
            r"input: expected rank 4 \(batch, channels and 2 spatial dims\), got float32\[3, 4, 4\]",
        ),
        (
            "aten::upsample_nearest2d.vec",
            random((1, 1, 4, 4), np.float32),
            dict(output_size=[2, 2], scale_factors=[2.0, 2.0]),
            "expected exactly one of output_size and scale_factors",
        ),
        (
            "aten::upsample_nearest2d.vec",
            random((1, 1, 4, 4), np.float32),
            dict(output_size=None, scale_factors=None),
            "expected exactly one of output_size and scale_factors",
        ),
        (
            "aten::upsample_bilinear2d.vec",
            random((1, 1, 4, 4), np.float32),
            dict(output_size=[2, 2, 2], align_corners=False, scale_factors=None),
            r"output_size: expected 2 sizes, got \[2, 2, 2\]",
        ),
        (
            "aten::upsample_bilinear2d.vec",
            random((1, 1, 4, 4), np.float32),
            dict(output_size=[0, 2], align_corners=False, scale_factors=None),
            "input and output sizes must be greater than 0",
        ),
        (
            "aten::upsample_nearest1d.vec",
            random((1, 1, 4), np.float32),
            dict(output_size=None, scale_factors=[0.1]),
            "input and output sizes must be greater than 0",
        ),
        (
            "aten::upsample_nearest1d.vec",
            random((1, 1, 4), np.float32),
            dict(output_size=None, scale_factors=[-2.0]),
            "scale_factors: expected positive values",
        ),
        (
            "aten::upsample_nearest1d.vec",
            random((1, 1, 4), np.float32),
            dict(output_size=None, scale_factors=[1e300]),
            r"scale_factors: \[1\.0+1e\+300\] make an output too large for input float32\[1, 1, 4\]",
        ),
        (
            "aten::upsample_nearest1d",
            random((1, 1, 4), np.float32).astype(np.int32),
            dict(output_size=[3]),
            "input: expected float32 or float64, got int32",
        ),
    ],
)
def test_bad_inputs(op, x, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{op}: {message}"):
        call(op, x, **attrs)


class Resampling(torch.nn.Module):
    """What torch.export keeps of interpolation, grid sampling, pooling, distances and folding."""

    def forward(self, x, grid, points):
        up = F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=False)
        return (
            up,
            F.interpolate(x, size=(5, 9), mode="nearest"),
            F.interpolate(x, scale_factor=0.7, mode="bicubic", align_corners=True),
            F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False),
            F.adaptive_avg_pool2d(up, (3, 5)),
            F.max_pool3d(x[:, None], 2),
            torch.cdist(points, points),
            F.fold(F.unfold(x, 3, padding=1), x.shape[-2:], 3, padding=1),
        )


def test_an_exported_model_runs_on_the_session(tmp_path):
    model = Resampling()
    inputs = (torch.randn(2, 3, 8, 10), torch.rand(2, 4, 6, 2) * 2.4 - 1.2, torch.randn(2, 7, 3))
    model_ir = ir.extract_ir(model, inputs)
    model_ir.save(tmp_path / "model.opg")
    actual = opgraph.Session(str(tmp_path / "model.opg"), threads=2).run(*inputs)
    for got, want in zip(actual, model(*inputs), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)
