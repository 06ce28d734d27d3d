"""Complex tensors and the Fourier transforms: _fft_r2c, _fft_c2r and
_fft_c2c over one and two dims of many lengths (powers of two and not),
view_as_real and view_as_complex, and the complex cases of abs, add, sub,
mul, div and _to_copy, against references and PyTorch; complex arrays
crossing DLPack and NumPy."""

import math

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

A = torch.ops.aten
SIZES = [1, 2, 3, 7, 8, 12, 16, 17, 64, 100, 128, 1000]
REAL = [np.float32, np.float64]
COMPLEX = {np.float32: np.complex64, np.float64: np.complex128}


def real(shape, dtype, seed=0):
    return np.asarray(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


def cplx(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), dtype=dtype)


def tolerance(points, dtype):
    """An FFT's error grows like log n; unnormalized outputs are ~sqrt(n) in size."""
    eps = 2e-6 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-13
    scale = max(1.0, math.log2(points)) * math.sqrt(points)
    return dict(rtol=eps * max(1.0, math.log2(points)), atol=eps * scale)


def test_schemas_are_atens():
    for name in ["_fft_r2c", "_fft_c2r", "_fft_c2c", "view_as_real", "view_as_complex"]:
        assert_schema_is_aten(name)


# ---- r2c --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("onesided", [True, False])
@pytest.mark.parametrize("n", SIZES)
def test_r2c_one_dim(n, onesided, normalization, dtype):
    x = real((3, n), dtype)
    attrs = dict(dim=[1], normalization=normalization, onesided=onesided)
    got = check_op(
        "aten::_fft_r2c",
        lambda t: A._fft_r2c(t, [1], normalization, onesided),
        x,
        tolerance=tolerance(n, dtype),
        **attrs,
    )
    assert got.dtype == COMPLEX[dtype]


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("dims", [[0, 2], [2, 0], [2, 1]])
@pytest.mark.parametrize("n", SIZES)
def test_r2c_two_dims(n, dims, dtype):
    x = real((n, 3, 5) if n < 1000 else (n, 1, 2), dtype, seed=n)
    check_op(
        "aten::_fft_r2c",
        lambda t: A._fft_r2c(t, dims, 2, True),
        x,
        tolerance=tolerance(n * 5, dtype),
        dim=dims,
        normalization=2,
        onesided=True,
    )


def test_negative_dims_count_from_the_end():
    # ATen's ops take wrapped dims (torch.fft wraps them); opgraph wraps them too.
    x = real((4, 3, 6), np.float64)
    np.testing.assert_array_equal(
        call("aten::_fft_r2c", x, dim=[-1, -3], normalization=0, onesided=True),
        call("aten::_fft_r2c", x, dim=[2, 0], normalization=0, onesided=True),
    )


# ---- c2c --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("n", SIZES)
def test_c2c_one_dim(n, forward, normalization, dtype):
    x = cplx((n, 2), COMPLEX[dtype])
    check_op(
        "aten::_fft_c2c",
        lambda t: A._fft_c2c(t, [0], normalization, forward),
        x,
        tolerance=tolerance(n, dtype),
        dim=[0],
        normalization=normalization,
        forward=forward,
    )


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", SIZES)
def test_c2c_two_dims(n, dtype):
    x = cplx((2, n, 3) if n < 1000 else (1, n, 2), COMPLEX[dtype], seed=n)
    check_op(
        "aten::_fft_c2c",
        lambda t: A._fft_c2c(t, [1, 2], 1, False),
        x,
        tolerance=tolerance(n * 3, dtype),
        dim=[1, 2],
        normalization=1,
        forward=False,
    )


# ---- c2r --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("n", SIZES)
def test_c2r_one_dim(n, normalization, dtype):
    x = cplx((2, n // 2 + 1), COMPLEX[dtype])
    got = check_op(
        "aten::_fft_c2r",
        lambda t: A._fft_c2r(t, [1], normalization, n),
        x,
        tolerance=tolerance(n, dtype),
        dim=[1],
        normalization=normalization,
        last_dim_size=n,
    )
    assert got.shape == (2, n) and got.dtype == dtype


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", SIZES)
def test_c2r_two_dims(n, dtype):
    m = 6 if n < 1000 else 2
    x = cplx((m, 3, n // 2 + 1), COMPLEX[dtype], seed=n)
    check_op(
        "aten::_fft_c2r",
        lambda t: A._fft_c2r(t, [0, 2], 2, n),
        x,
        tolerance=tolerance(n * m, dtype),
        dim=[0, 2],
        normalization=2,
        last_dim_size=n,
    )


@pytest.mark.parametrize("n", [7, 8])
def test_c2r_reads_the_first_half_of_a_longer_input(n):
    # torch takes the full length too and reads its first n // 2 + 1 points.
    x = cplx((3, n), np.complex64)
    check_op(
        "aten::_fft_c2r",
        lambda t: A._fft_c2r(t, [1], 0, n),
        x,
        tolerance=tolerance(n, np.float32),
        dim=[1],
        normalization=0,
        last_dim_size=n,
    )


@pytest.mark.parametrize("n", [1, 2, 9, 100])
def test_c2r_along_a_leading_dim(n):
    x = cplx((n // 2 + 1, 3, 5), np.complex128, seed=n)
    check_op(
        "aten::_fft_c2r",
        lambda t: A._fft_c2r(t, [2, 0], 1, n),
        x,
        tolerance=tolerance(n * 5, np.float64),
        dim=[2, 0],
        normalization=1,
        last_dim_size=n,
    )


@pytest.mark.parametrize("n", [1, 2, 9, 100])
def test_round_trip_is_the_identity(n):
    x = real((4, n), np.float64)
    spectrum = call("aten::_fft_r2c", x, dim=[1], normalization=0, onesided=True)
    back = call("aten::_fft_c2r", spectrum, dim=[1], normalization=2, last_dim_size=n)
    np.testing.assert_allclose(back, x, rtol=1e-12, atol=1e-12)


# ---- strided and empty inputs ----------------------------------------------------------------


def test_strided_inputs():
    x = real((20, 12), np.float32).T  # (12, 20), transposed
    check_op(
        "aten::_fft_r2c",
        lambda t: A._fft_r2c(t, [0], 0, True),
        x,
        tolerance=tolerance(12, np.float32),
        dim=[0],
        normalization=0,
        onesided=True,
    )
    z = cplx((9, 34), np.complex128)[:, ::2]  # every other column
    check_op(
        "aten::_fft_c2c",
        lambda t: A._fft_c2c(t, [1, 0], 0, True),
        z,
        tolerance=tolerance(153, np.float64),
        dim=[1, 0],
        normalization=0,
        forward=True,
    )
    check_op(
        "aten::_fft_c2r",
        lambda t: A._fft_c2r(t, [1], 0, 32),
        z,
        tolerance=tolerance(32, np.float64),
        dim=[1],
        normalization=0,
        last_dim_size=32,
    )


def test_empty_batch():
    x = real((0, 8), np.float32)
    got = call("aten::_fft_r2c", x, dim=[1], normalization=0, onesided=True)
    assert got.shape == (0, 5) and got.dtype == np.complex64


def test_large_input_runs_in_parallel():
    x = real((64, 1000), np.float32)
    expected = A._fft_r2c(torch.from_numpy(x), [1], 1, False).numpy()
    got = call("aten::_fft_r2c", x, dim=[1], normalization=1, onesided=False)
    np.testing.assert_allclose(got, expected, **tolerance(1000, np.float32))


# ---- bad inputs -------------------------------------------------------------------------------


def test_bad_inputs():
    x, z = real((3, 4), np.float32), cplx((3, 4), np.complex64)
    with pytest.raises(opgraph.Error, match=r"_fft_c2c.*self: expected complex64 or complex128, got float32"):
        call("aten::_fft_c2c", x, dim=[1], normalization=0, forward=True)
    with pytest.raises(opgraph.Error, match=r"_fft_r2c.*self: expected float32 or float64, got complex64"):
        call("aten::_fft_r2c", z, dim=[1], normalization=0, onesided=True)
    with pytest.raises(opgraph.Error, match=r"_fft_c2r.*self: expected complex64 or complex128, got float32"):
        call("aten::_fft_c2r", x, dim=[1], normalization=0, last_dim_size=4)
    with pytest.raises(opgraph.Error, match=r"dim: expected a dim in \[-2, 1\].*got 2"):
        call("aten::_fft_r2c", x, dim=[2], normalization=0, onesided=True)
    with pytest.raises(opgraph.Error, match="dim: expected distinct dims"):
        call("aten::_fft_c2c", z, dim=[1, -1], normalization=0, forward=True)
    with pytest.raises(opgraph.Error, match="dim: expected at least one dim"):
        call("aten::_fft_c2c", z, dim=[], normalization=0, forward=True)
    with pytest.raises(opgraph.Error, match="last_dim_size: expected at least 1, got 0"):
        call("aten::_fft_c2r", z, dim=[1], normalization=0, last_dim_size=0)
    with pytest.raises(opgraph.Error, match=r"expected at least last_dim_size / 2 \+ 1 = 6 points along dim 1"):
        call("aten::_fft_c2r", z, dim=[1], normalization=0, last_dim_size=10)
    with pytest.raises(opgraph.Error, match=r"normalization: expected 0 \(none\), 1 .* or 2 .*, got 3"):
        call("aten::_fft_r2c", x, dim=[1], normalization=3, onesided=True)
    with pytest.raises(opgraph.Error, match="at least one point along each transformed dim"):
        call("aten::_fft_r2c", real((3, 0), np.float32), dim=[1], normalization=0, onesided=True)
    with pytest.raises(opgraph.Error, match="at least one dim to transform, got float32"):
        call("aten::_fft_r2c", np.float32(1.0), dim=[0], normalization=0, onesided=True)
    with pytest.raises(opgraph.Error, match=r"self: expected float32 or float64, got int64"):
        call("aten::_fft_r2c", np.arange(4), dim=[0], normalization=0, onesided=True)


# ---- view_as_real, view_as_complex -----------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4)])
def test_view_as_real(shape, dtype):
    got = check_op("aten::view_as_real", A.view_as_real, cplx(shape, COMPLEX[dtype]))
    assert got.shape == shape + (2,)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("shape", [(2,), (3, 4, 2)])
def test_view_as_complex(shape, dtype):
    check_op("aten::view_as_complex", A.view_as_complex, real(shape, dtype))


def test_view_as_complex_of_nothing():
    # torch refuses an empty tensor (its last dim's stride is not 1); its shape is all there is.
    assert call("aten::view_as_complex", real((0, 2), np.float32)).shape == (0,)


def test_views_of_strided_inputs():
    z = cplx((4, 6), np.complex64).T
    check_op("aten::view_as_real", lambda t: A.view_as_real(t.contiguous()), z)
    x = real((2, 5, 4), np.float64)[:, :, 1:3]
    check_op("aten::view_as_complex", lambda t: A.view_as_complex(t.contiguous()), x)


def test_view_errors():
    with pytest.raises(opgraph.Error, match="view_as_real.*self: expected complex64 or complex128, got float32"):
        call("aten::view_as_real", real((3,), np.float32))
    with pytest.raises(opgraph.Error, match=r"view_as_complex.*expected a last dim of size 2 .*, got float32\[3\]"):
        call("aten::view_as_complex", real((3,), np.float32))
    with pytest.raises(opgraph.Error, match=r"view_as_complex.*expected float32 or float64, got int32\[2\]"):
        call("aten::view_as_complex", np.arange(2, dtype=np.int32))


# ---- complex elementwise ops -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 70001 // 3)])
def test_abs_of_complex_is_real(shape, dtype):
    got = check_op("aten::abs", torch.abs, cplx(shape, dtype))
    assert got.dtype == (np.float32 if dtype == np.complex64 else np.float64)


BINARY = {
    "add": ("aten::add.Tensor", lambda a, b: torch.add(a, b, alpha=2), dict(alpha=2)),
    "sub": ("aten::sub.Tensor", torch.sub, {}),
    "mul": ("aten::mul.Tensor", torch.mul, {}),
    "div": ("aten::div.Tensor", torch.div, {}),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize(
    "shapes", [((5,), (5,)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3,)), ((300, 257), (257,))]
)
@pytest.mark.parametrize("op", BINARY)
def test_complex_arithmetic(op, shapes, dtype):
    name, torch_fn, attrs = BINARY[op]
    a, b = cplx(shapes[0], dtype, seed=1), cplx(shapes[1], dtype, seed=2)
    check_op(name, torch_fn, a, b, **attrs)
    check_op(name, torch_fn, np.asfortranarray(a), b, **attrs)  # strided self


def test_complex_times_a_number():
    z = cplx((4, 3), np.complex64)
    check_op("aten::mul.Tensor", torch.mul, z, np.array(2.0, np.float32))
    check_op("aten::mul.Tensor", torch.mul, z, np.array(3, np.int64))
    check_op("aten::add.Tensor", torch.add, z, np.array(0.5, np.float64))


def test_complex_arithmetic_errors():
    z, x = cplx((3,), np.complex64), real((3,), np.float32)
    with pytest.raises(opgraph.Error, match="other: expected complex64 like self .*got float32"):
        call("aten::mul.Tensor", z, x)
    with pytest.raises(opgraph.Error, match="expected float32, float64, int32 or int64, got complex64"):
        call("aten::maximum", z, z)
    with pytest.raises(opgraph.Error, match="exp.*expected float32 or float64, got complex64"):
        call("aten::exp", z)
    with pytest.raises(opgraph.Error, match="sum.*complex64"):
        call("aten::sum.dim_IntList", z, dim=[0])


@pytest.mark.parametrize("to", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("source", [np.float32, np.float64, np.int64, np.bool_, np.complex64, np.complex128])
def test_to_copy_into_complex(source, to):
    x = cplx((3, 4), source) if np.issubdtype(source, np.complexfloating) else real((3, 4), np.float64).astype(source)
    check_op("aten::_to_copy", lambda t: t.to(to), x.T, dtype=str(to).removeprefix("torch."))


def test_to_copy_from_complex_to_real_is_refused():
    with pytest.raises(opgraph.Error, match="converting complex64 to float32 would drop the imaginary part"):
        call("aten::_to_copy", cplx((3,), np.complex64), dtype="float32")
    z = cplx((3, 2), np.complex128)
    np.testing.assert_array_equal(call("aten::clone", z.T), z.T)


# ---- DLPack and NumPy ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_crosses_dlpack(dtype):
    source = torch.randn(3, 5, dtype=getattr(torch, dtype))
    t = opgraph.from_dlpack(source)
    assert t.dtype == dtype and t.shape == (3, 5)
    back = torch.from_dlpack(t)
    assert back.dtype == source.dtype and back.data_ptr() == source.data_ptr()
    assert torch.equal(back, source)
    array = cplx((2, 3), np.dtype(dtype))
    view = np.from_dlpack(opgraph.from_dlpack(array))
    assert view.dtype == array.dtype
    np.testing.assert_array_equal(view, array)
    np.testing.assert_array_equal(opgraph.from_dlpack(array).numpy(), array)


def test_complex_number_takes_the_complex_tensors_dtype():
    z = cplx((3,), np.complex128)
    check_op("aten::mul.Tensor", torch.mul, z, np.array(1j, np.complex64))
    with pytest.raises(opgraph.Error, match="other: expected float32 like self .*got complex64"):
        call("aten::mul.Tensor", real((3,), np.float32), np.array(1j, np.complex64))


# ---- complex values in exported graphs -------------------------------------------------------


class ComplexInOut(torch.nn.Module):
    """Complex graph inputs and outputs, a complex Python number, and real values promoted to complex."""

    def forward(self, z, x):
        spectrum = torch.fft.fft(z.to(torch.complex128), dim=-1) * 1j + torch.fft.rfft(x)[:, :4].abs()
        return spectrum, torch.view_as_complex(x.reshape(3, 4, 2)), x[:, :4] * 1j


def test_complex_values_cross_the_graph(tmp_path):
    from opgraph.ir import extract_ir

    z, x = torch.randn(3, 4, dtype=torch.complex64), torch.randn(3, 8)
    path = tmp_path / "complex.opg"
    extract_ir(ComplexInOut(), (z, x)).save(path)
    actual = opgraph.Session(str(path)).run(z, x)
    expected = ComplexInOut()(z, x)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.dtype == want.numpy().dtype
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_per_node_verify_compares_complex_values():
    from opgraph.ir import verify

    report = verify(ComplexInOut(), (torch.randn(3, 4, dtype=torch.complex64), torch.randn(3, 8)), per_node=True)
    assert report.ok and report.first_divergence is None, str(report)
