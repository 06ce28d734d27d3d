"""Ops that return nothing and only check what torch.export assumed."""

import numpy as np
import pytest
from oracle import assert_schema_is_aten

import opgraph
from opgraph.ops import call


def test_metadata_that_holds_passes():
    x = np.zeros((2, 7), np.int64)
    assert call("aten::_assert_tensor_metadata", x, dtype="int64", device="cpu", layout="strided") == ()
    assert call("aten::_assert_tensor_metadata", x, size=[2, 7], stride=[1, 2]) == ()


def test_metadata_that_fails_names_what_differs():
    x = np.zeros((2, 7), np.int64)
    with pytest.raises(
        opgraph.Error,
        match=r"aten::_assert_tensor_metadata: a: expected dtype float32, got "
        r"int64\[2, 7\]",
    ):
        call("aten::_assert_tensor_metadata", x, dtype="float32")
    with pytest.raises(opgraph.Error, match=r"a: expected shape \[7, 2\], got int64\[2, 7\]"):
        call("aten::_assert_tensor_metadata", x, size=[7, 2])


def test_scalar_assertions():
    assert call("aten::_assert_scalar", self=1, assert_msg="u0 >= 0") == ()
    with pytest.raises(opgraph.Error, match=r"aten::_assert_scalar: assertion failed: u0 >= 2"):
        call("aten::_assert_scalar", self=0, assert_msg="u0 >= 2")
    assert call("aten::sym_constrain_range_for_size", size=3, min=2, max=4) == ()
    with pytest.raises(opgraph.Error, match=r"size: expected a size in \[0, 4\], got 5"):
        call("aten::sym_constrain_range_for_size", size=5, max=4)


@pytest.mark.parametrize("name", ["_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size"])
def test_schema_is_aten(name):
    assert_schema_is_aten(name)
