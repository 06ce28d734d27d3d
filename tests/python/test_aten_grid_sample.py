"""grid_sampler_2d against the reference and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: dict(rtol=1e-5, atol=3e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def random(shape, dtype, seed=0, scale=1.0):
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("name", ["grid_sampler_2d", "grid_sampler"])
def test_schema_is_aten(name):
    assert_schema_is_aten(name)


def test_grid_sampler_is_grid_sampler_2d_on_planes():
    attrs = dict(interpolation_mode=0, padding_mode=1, align_corners=False)
    check_op(
        "aten::grid_sampler",
        lambda t, g: torch.ops.aten.grid_sampler(t, g, **attrs),
        random((2, 3, 5, 6), np.float64),
        random((2, 4, 3, 2), np.float64, 1),
        **attrs,
    )


# input shape, grid (height, width)
SHAPES = [
    ((2, 3, 5, 7), (4, 6)),
    ((1, 1, 1, 1), (3, 2)),
    ((1, 2, 13, 1), (1, 5)),
    ((3, 1, 4, 4), (1, 1)),
    ((2, 4, 11, 17), (19, 23)),
    ((2, 8, 31, 29), (64, 64)),
]  # the last crosses the threading threshold


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", [0, 1, 2])
@pytest.mark.parametrize("interpolation_mode", [0, 1, 2])
@pytest.mark.parametrize("shape, grid_size", SHAPES)
def test_grid_sampler_2d(shape, grid_size, interpolation_mode, padding_mode, align_corners, dtype):
    x = random(shape, dtype)
    # Grid points well inside, near the border and beyond it (up to about +-2.4).
    grid = random((shape[0],) + grid_size + (2,), dtype, 1, scale=0.8)
    attrs = dict(interpolation_mode=interpolation_mode, padding_mode=padding_mode, align_corners=align_corners)
    check_op(
        "aten::grid_sampler_2d",
        lambda t, g: torch.ops.aten.grid_sampler_2d(t, g, **attrs),
        x,
        grid,
        tolerance=TOLERANCE[dtype],
        **attrs,
    )


@pytest.mark.parametrize("interpolation_mode", [0, 1, 2])
def test_non_contiguous_and_empty(interpolation_mode):
    attrs = dict(interpolation_mode=interpolation_mode, padding_mode=2, align_corners=False)

    def fn(t, g):
        return torch.ops.aten.grid_sampler_2d(t, g, **attrs)

    x = random((3, 2, 6, 5), np.float32).transpose(1, 0, 3, 2)  # (2, 3, 5, 6), strided
    grid = random((2, 4, 2, 3), np.float32, 1).transpose(0, 1, 3, 2)  # (2, 4, 3, 2), strided
    check_op("aten::grid_sampler_2d", fn, x, grid, tolerance=TOLERANCE[np.float32], **attrs)
    check_op(
        "aten::grid_sampler_2d", fn, np.zeros((0, 3, 4, 4), np.float32), np.zeros((0, 2, 2, 2), np.float32), **attrs
    )
    check_op("aten::grid_sampler_2d", fn, x, np.zeros((2, 0, 3, 2), np.float32), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", [0, 1, 2])
@pytest.mark.parametrize("interpolation_mode", [0, 1, 2])
def test_non_finite_and_far_grid_points(interpolation_mode, padding_mode, align_corners, dtype):
    """As ATen: NaN coordinates give NaN with zeros padding and read the first pixel with border or reflection
    padding; far ones reflect with ATen's rounding."""
    x = random((1, 2, 4, 5), dtype)
    grid = random((1, 5, 5, 2), dtype, 1, scale=3.0)
    grid[0, 0, 0, 0], grid[0, 1, 1, 1], grid[0, 2, 2, 0], grid[0, 3, 3, 1] = np.nan, np.inf, -1e30, -np.inf
    grid[0, 4, 4, 0], grid[0, 4, 3, 1] = 3e9, 1e12
    attrs = dict(interpolation_mode=interpolation_mode, padding_mode=padding_mode, align_corners=align_corners)
    check_op(
        "aten::grid_sampler_2d",
        lambda t, g: torch.ops.aten.grid_sampler_2d(t, g, **attrs),
        x,
        grid,
        tolerance=TOLERANCE[dtype],
        **attrs,
    )


def test_grid_points_on_pixels_read_them_exactly():
    x = random((1, 2, 3, 4), np.float64)
    ys, xs = np.meshgrid(np.linspace(-1, 1, 3), np.linspace(-1, 1, 4), indexing="ij")
    grid = np.stack([xs, ys], axis=-1)[None]
    for mode in [0, 1, 2]:
        out = call("aten::grid_sampler_2d", x, grid, interpolation_mode=mode, padding_mode=0, align_corners=True)
        np.testing.assert_allclose(out, x, atol=1e-12)


@pytest.mark.parametrize(
    "x, grid, attrs, message",
    [
        (
            random((2, 3, 4), np.float32),
            random((2, 3, 2), np.float32),
            dict(),
            r"input: expected rank 4 \(batch, channels, height, width\), got float32\[2, 3, 4\]",
        ),
        (
            random((2, 1, 4, 4), np.float32),
            random((1, 3, 3, 2), np.float32),
            dict(),
            r"grid: expected \(2, height, width, 2\)",
        ),
        (
            random((1, 1, 4, 4), np.float32),
            random((1, 3, 3, 3), np.float32),
            dict(),
            r"grid: expected \(1, height, width, 2\)",
        ),
        (
            random((1, 1, 4, 4), np.float32),
            random((1, 3, 3, 2), np.float64),
            dict(),
            "grid: expected the input's dtype float32, got float64",
        ),
        (
            random((1, 1, 4, 4), np.float32),
            random((1, 3, 3, 2), np.float32),
            dict(interpolation_mode=3),
            "interpolation_mode: expected 0 \\(bilinear\\), 1 \\(nearest\\) or 2 \\(bicubic\\), got 3",
        ),
        (
            random((1, 1, 4, 4), np.float32),
            random((1, 3, 3, 2), np.float32),
            dict(padding_mode=-1),
            "padding_mode: expected 0 \\(zeros\\), 1 \\(border\\) or 2 \\(reflection\\), got -1",
        ),
    ],
)
def test_bad_inputs(x, grid, attrs, message):
    attrs = dict(dict(interpolation_mode=0, padding_mode=0, align_corners=False), **attrs)
    with pytest.raises(opgraph.Error, match=f"^aten::grid_sampler_2d: {message}"):
        call("aten::grid_sampler_2d", x, grid, **attrs)
