"""opgraph.ops.call: any registered op, any DLPack-capable array."""

import numpy as np
import pytest
import torch

import opgraph
from opgraph.ops import call


@pytest.fixture(autouse=True)
def _load(test_ops):
    pass


def test_numpy_inputs_default_and_given_attributes():
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(call("test_ops::scale", x), x * 2)
    np.testing.assert_array_equal(call("test_ops::scale", x, factor=3), x * 3)
    result = call("test_ops::scale", x.astype(np.float64), factor=0.5)
    assert isinstance(result, np.ndarray) and result.dtype == np.float64


def test_torch_inputs_return_numpy():
    x = torch.linspace(-1, 1, 9, dtype=torch.float64)
    result = call("test_ops::scale", x, factor=-1.0)
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, -x.numpy())


def test_multiple_outputs_come_back_as_a_tuple():
    positive, negative = call("test_ops::split_sign", np.array([-2.0, 0.5, -0.25, 3.0]))
    np.testing.assert_array_equal(positive, [0, 0.5, 0, 3])
    np.testing.assert_array_equal(negative, [-2, 0, -0.25, 0])


def test_out_is_filled_in_place_and_returned():
    x = np.arange(4, dtype=np.float32)
    out = np.full(4, np.nan, dtype=np.float32)
    assert call("test_ops::scale", x, out=out) is out
    np.testing.assert_array_equal(out, x * 2)
    outs = (torch.empty(4, dtype=torch.float32), np.empty(4, np.float32))
    assert call("test_ops::split_sign", x - 2, out=outs) is outs
    np.testing.assert_array_equal(outs[0].numpy(), [0, 0, 0, 1])
    np.testing.assert_array_equal(outs[1], [-2, -1, 0, 0])


def test_out_of_the_wrong_shape_or_dtype_is_rejected():
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(opgraph.Error, match=r"test_ops::scale: output 0 must be float32\[4\], got float32\[5\]"):
        call("test_ops::scale", x, out=np.empty(5, np.float32))
    with pytest.raises(opgraph.Error, match=r"output 0 must be float32\[4\], got float64\[4\]"):
        call("test_ops::scale", x, out=np.empty(4, np.float64))
    with pytest.raises(opgraph.Error, match="output 0 must be contiguous"):
        call("test_ops::scale", x, out=np.empty(8, np.float32)[::2])
    with pytest.raises(opgraph.Error, match=r"out\[0\] must be a writable array"):
        call("test_ops::scale", x, out=np.empty(4, np.float32).view().setflags(write=False) or "not an array")


def test_optional_input_may_be_none_or_left_out():
    x = np.ones((2, 3), np.float32)
    bias = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(call("test_ops::add_bias", x, bias), x + bias)
    np.testing.assert_array_equal(call("test_ops::add_bias", x, None), x)
    np.testing.assert_array_equal(call("test_ops::add_bias", x), x)


def test_non_contiguous_and_read_only_inputs():
    base = np.arange(20, dtype=np.float32)
    np.testing.assert_array_equal(call("test_ops::scale", base[::3]), base[::3] * 2)
    transposed = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()
    np.testing.assert_array_equal(call("test_ops::scale", transposed), transposed.numpy() * 2)
    frozen = np.arange(3, dtype=np.float32)
    frozen.setflags(write=False)
    np.testing.assert_array_equal(call("test_ops::scale", frozen), frozen * 2)


def test_opgraph_tensor_inputs():
    t = opgraph.from_dlpack(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(call("test_ops::scale", t), [0, 2, 4])


def test_threads_are_used_by_kernels():
    previous = opgraph.get_num_threads()
    try:
        opgraph.set_num_threads(2)
        result = call("test_ops::parallel_iota", np.zeros(100_003, np.float32))
        np.testing.assert_array_equal(result, np.arange(100_003))
    finally:
        opgraph.set_num_threads(previous)


def test_every_attribute_kind():
    x = np.zeros(1, np.float32)
    common = dict(i=7, f=2.5, b=True, s="four", ints=(1, 2, 3), floats=[0.5, 0.25])
    for dtype in ["int64", "Long", np.int64, np.dtype("int64"), torch.int64]:
        result = call("test_ops::echo_attrs", x, dtype=dtype, **common)
        np.testing.assert_array_equal(result, [7, 2.5, 1, 4, 6, 0.75, 7, -1])
    result = call("test_ops::echo_attrs", x, dtype="float32", maybe=np.int64(5), **common)
    assert result[6] == 0 and result[7] == 5


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((), {}, r"test_ops::scale: expected 1 tensor inputs \(x\), got 0"),
        ((np.ones(2, np.float32),) * 2, {}, r"expected 1 tensor inputs \(x\), got 2"),
        ((None,), {}, "input 'x' is required but was not given"),
        (([1.0, 2.0],), {}, "input 'x' must be an array .* got list"),
        ((np.ones(2, np.int32),), {}, r"test_ops::scale: x: expected float32 or float64, got int32\[2\]"),
        ((np.ones(2, np.float32),), {"factor": "big"}, "attribute 'factor' expects float, got str \"big\""),
        ((np.ones(2, np.float32),), {"factr": 2.0}, "unexpected attribute 'factr'; its attributes are: factor"),
        ((np.ones(2, np.float32),), {"factor": object()}, "attribute 'factor': cannot pass a object"),
        ((np.ones(2, np.uint16),), {}, "input 'x': unsupported array dtype"),
    ],
)
def test_bad_calls_name_the_op_and_argument(args, kwargs, message):
    with pytest.raises(opgraph.Error, match=message):
        call("test_ops::scale", *args, **kwargs)


def test_tensor_lists_reach_a_package_op():
    xs = [np.arange(3, dtype=np.float32), torch.ones(3), np.full(3, 2, np.float32)]
    ys = (np.full(6, 2, np.float32)[::2], np.arange(3, dtype=np.float32), torch.full((3,), -1.0))
    bias = np.array([10, 20, 30], np.float32)
    expected = bias + sum(np.asarray(x) * np.asarray(y) for x, y in zip(xs, ys))
    np.testing.assert_array_equal(call("test_ops::sum_products", xs, bias, ys), expected)
    np.testing.assert_array_equal(call("test_ops::sum_products", xs[:1], None, list(ys[:1])), xs[0] * ys[0])


def test_tensor_list_errors_name_the_element():
    x = np.ones(3, np.float32)
    with pytest.raises(opgraph.Error, match=r"^test_ops::sum_products: ys\[1\]: expected float32\[3\], got float32\[4"):
        call("test_ops::sum_products", [x, x], None, [x, np.ones(4, np.float32)])
    with pytest.raises(opgraph.Error, match=r"^test_ops::sum_products: ys: expected 2 tensors like xs, got 1$"):
        call("test_ops::sum_products", [x, x], None, [x])
    with pytest.raises(opgraph.Error, match=r"test_ops::sum_products: input 'ys' \(Tensor\[\]\) was not given"):
        call("test_ops::sum_products", [x], None)
    with pytest.raises(opgraph.Error, match=r"input 'xs' must be a list or tuple of arrays \(Tensor\[\]\), got"):
        call("test_ops::sum_products", x, None, [x])


def test_missing_required_attribute():
    with pytest.raises(opgraph.Error, match=r"test_ops::echo_attrs: missing required attribute 'i' \(int\)"):
        call("test_ops::echo_attrs", np.zeros(1, np.float32))


def test_kernel_errors_arrive_with_the_op_name():
    with pytest.raises(opgraph.Error, match=r"^test_ops::fail: kernel refused float32\[2\]$"):
        call("test_ops::fail", np.zeros(2, np.float32))


def test_wrong_shape_for_optional_input():
    with pytest.raises(opgraph.Error, match=r"test_ops::add_bias: bias: expected float32\[3\], got float32\[2\]"):
        call("test_ops::add_bias", np.ones((2, 3), np.float32), np.ones(2, np.float32))
