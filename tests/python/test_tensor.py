"""opgraph.Tensor and zero-copy DLPack exchange with NumPy and PyTorch."""

import gc
import weakref

import numpy as np
import pytest
import torch

import opgraph

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]


def test_from_numpy_shares_memory_and_metadata():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = opgraph.from_dlpack(x)
    assert t.data_ptr() == x.ctypes.data
    assert t.shape == (3, 4) and t.strides == (4, 1) and t.dtype == "float32" and t.device == "cpu"
    assert t.numel() == 12 and t.ndim == 2 and t.nbytes == 48 and t.is_contiguous()


def test_numpy_view_of_tensor_shares_memory_both_ways():
    x = np.arange(6, dtype=np.float64)
    t = opgraph.from_dlpack(x)
    y = np.from_dlpack(t)
    assert y.ctypes.data == x.ctypes.data
    x[2] = 42.0
    assert y[2] == 42.0
    np.testing.assert_array_equal(np.asarray(t), x)


def test_producer_stays_alive_while_a_view_exists():
    x = np.arange(1000, dtype=np.float32)
    alive = weakref.ref(x)
    t = opgraph.from_dlpack(x)
    del x
    gc.collect()
    assert alive() is not None, "the tensor must keep the NumPy array alive"
    np.testing.assert_array_equal(t.numpy(), np.arange(1000, dtype=np.float32))
    del t
    gc.collect()
    assert alive() is None, "the NumPy array must be released with the last view"


def test_exported_tensor_outlives_the_opgraph_handle():
    t = opgraph.empty([4, 5], "int32")
    view = np.from_dlpack(t)
    view[...] = np.arange(20, dtype=np.int32).reshape(4, 5)
    pointer = t.data_ptr()
    del t
    gc.collect()
    assert view.ctypes.data == pointer
    assert view.sum() == sum(range(20))


def test_torch_round_trip_is_zero_copy():
    x = torch.arange(10, dtype=torch.float32)
    t = opgraph.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr()
    back = torch.from_dlpack(t)
    assert back.data_ptr() == x.data_ptr()
    back[3] = -1
    assert x[3] == -1


def test_torch_tensor_lifetime():
    x = torch.randn(64)
    alive = weakref.ref(x)
    t = opgraph.from_dlpack(x)
    expected = x.clone()
    del x
    gc.collect()
    assert alive() is not None
    torch.testing.assert_close(torch.from_dlpack(t), expected)
    del t
    gc.collect()
    assert alive() is None


def test_strided_views_keep_their_strides():
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6).t()
    t = opgraph.from_dlpack(x)
    assert t.shape == (6, 4) and t.strides == (1, 6) and not t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    c = t.contiguous()
    assert c.is_contiguous() and c.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(c.numpy(), x.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_crosses_dlpack(dtype):
    source = (torch.arange(7) % 2 == 0) if dtype == "bool" else torch.arange(7).to(getattr(torch, dtype))
    t = opgraph.from_dlpack(source)
    assert t.dtype == dtype
    back = torch.from_dlpack(t)
    assert back.dtype == source.dtype and back.data_ptr() == source.data_ptr()
    assert torch.equal(back, source)


def test_empty_is_aligned_and_sized():
    for n in [0, 1, 3, 1001]:
        t = opgraph.empty([n, 2], "float64")
        assert t.shape == (n, 2) and t.nbytes == 16 * n
        assert t.data_ptr() % 64 == 0


def test_bad_inputs_raise_opgraph_error():
    with pytest.raises(opgraph.Error, match="expected an object with __dlpack__"):
        opgraph.from_dlpack([1, 2, 3])
    capsule = np.arange(3).__dlpack__()
    opgraph.from_dlpack(capsule)
    with pytest.raises(opgraph.Error, match="unconsumed 'dltensor' capsule"):
        opgraph.from_dlpack(capsule)
    with pytest.raises(opgraph.Error, match="unsupported DLPack dtype"):
        opgraph.from_dlpack(np.zeros(3, np.uint16))
    with pytest.raises(opgraph.Error, match="unknown dtype 'float8'"):
        opgraph.empty([2], "float8")
    with pytest.raises(opgraph.Error, match="NumPy has no bfloat16"):
        opgraph.from_dlpack(torch.zeros(2, dtype=torch.bfloat16)).numpy()


def test_error_is_a_runtime_error():
    assert issubclass(opgraph.Error, RuntimeError)
