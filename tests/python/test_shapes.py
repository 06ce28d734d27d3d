"""opgraph._C.infer_output_metas: shape functions run on metas alone."""

import pytest

import opgraph
from opgraph._C import infer_output_metas


@pytest.fixture(autouse=True)
def _load(test_ops):
    pass


def test_metas_in_metas_out():
    assert infer_output_metas("test_ops::scale", [("float64", [2, 3])], factor=3.0) == [("float64", (2, 3))]
    assert infer_output_metas("test_ops::split_sign", [("float32", (4,))]) == [("float32", (4,)), ("float32", (4,))]


def test_optional_and_list_arguments():
    assert infer_output_metas("test_ops::add_bias", [("float32", [2, 5]), None]) == [("float32", (2, 5))]
    xs = [("float32", [3])] * 2
    assert infer_output_metas("test_ops::sum_products", [xs, None, xs]) == [("float32", (3,))]


@pytest.mark.parametrize(
    "name, metas, attrs, message",
    [
        ("test_ops::scale", [("int32", [2])], {}, r"test_ops::scale: x: expected float32 or float64, got int32\[2\]"),
        ("test_ops::scale", [], {}, r"test_ops::scale: expected a meta for each of its 1 tensor arguments, got 0"),
        ("test_ops::scale", [None], {}, r"test_ops::scale: input 'x' is required but was not given"),
        ("test_ops::scale", [("float32", [2])], dict(factor="x"), r"test_ops::scale: attribute 'factor'"),
        ("test_ops::scale", [("complex", [2])], {}, r"test_ops::scale: input 'x': unknown dtype 'complex'"),
        ("test_ops::scale", [[2]], {}, r"test_ops::scale: input 'x' must be a \(dtype name, shape\) pair or None"),
        (
            "test_ops::sum_products",
            [None, None, []],
            {},
            r"test_ops::sum_products: input 'xs' \(Tensor\[\]\) must be a list of metas",
        ),
    ],
)
def test_bad_metas_are_errors_naming_the_op(name, metas, attrs, message):
    with pytest.raises(opgraph.Error, match=message):
        infer_output_metas(name, metas, **attrs)
