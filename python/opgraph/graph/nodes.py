"""Functions that add nodes to the graph being built (``with Graph(...)``),
public as ``opgraph.graph.ops``.

``custom(name, values, out_types, parameters)`` calls an op from the graph's
custom extensions, as MAX's ``ops.custom``; the others call built-in ops, whose
output types come from their shape functions.
"""

import numpy as np

from .._C import Error, op_schema
from .builder import current_graph
from .types import DType

__all__ = [
    "custom",
    "call",
    "constant",
    "add",
    "sub",
    "mul",
    "div",
    "matmul",
    "linear",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "relu",
    "gelu",
    "sigmoid",
    "tanh",
    "softmax",
    "layer_norm",
    "flatten",
    "reshape",
    "transpose",
    "permute",
    "concat",
]


def custom(name, values, out_types, parameters=None, device=None):
    """Calls op ``name`` on ``values`` with ``parameters`` as its attributes;
    returns one Value per entry of ``out_types`` (checked against the op's
    shape function when the graph's outputs are set). A ``"dtype"`` parameter
    the op does not declare (MAX kernels take one) must match the out types."""
    graph = current_graph()
    op = graph.resolve_op(name)
    parameters = dict(parameters or {})
    if "dtype" in parameters and "dtype" not in {a.name for a in op_schema(op).arguments}:
        dtype = DType.of(parameters.pop("dtype"))
        for t in out_types:
            if t.dtype != dtype:
                raise Error(f"ops.custom({name}): parameter dtype={dtype.value} but out_types has {t.dtype.value}")
    return graph.add_node(op, list(values), parameters, list(out_types))


def call(op, *values, **attributes):
    """The outputs of any registered op (qualified name) on ``values`` (one per
    tensor argument; None for an omitted optional, a list for a Tensor[])."""
    outputs = current_graph().add_node(op, list(values), attributes)
    return outputs[0] if len(outputs) == 1 else outputs


def constant(value, dtype=None, name=None):
    """A constant (stored with the graph's weights)."""
    array = np.asarray(value, dtype=DType.of(dtype).to_numpy() if dtype is not None else None)
    return current_graph().add_constant(array, name)


def add(x, y):
    return call("aten::add.Tensor", x, y)


def sub(x, y):
    return call("aten::sub.Tensor", x, y)


def mul(x, y):
    return call("aten::mul.Tensor", x, y)


def div(x, y):
    return call("aten::div.Tensor", x, y)


def matmul(x, y):
    return call("aten::matmul", x, y)


def linear(x, weight, bias=None):
    return call("aten::linear", x, weight, bias)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return call("aten::conv2d", x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups)


def max_pool2d(x, kernel_size, stride=None, padding=0):
    return call("aten::max_pool2d", x, kernel_size=kernel_size, stride=stride or kernel_size, padding=padding)


def avg_pool2d(x, kernel_size, stride=None, padding=0):
    return call("aten::avg_pool2d", x, kernel_size=kernel_size, stride=stride or kernel_size, padding=padding)


def relu(x):
    return call("aten::relu", x)


def gelu(x):
    return call("aten::gelu", x)


def sigmoid(x):
    return call("aten::sigmoid", x)


def tanh(x):
    return call("aten::tanh", x)


def softmax(x, axis=-1):
    return call("aten::softmax.int", x, dim=axis)


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-5):
    return call("aten::layer_norm", x, weight, bias, normalized_shape=normalized_shape, eps=epsilon)


def flatten(x, start_dim=0, end_dim=-1):
    return call("aten::flatten.using_ints", x, start_dim=start_dim, end_dim=end_dim)


def reshape(x, shape):
    return call("aten::reshape", x, shape=shape)


def transpose(x, dim0, dim1):
    return call("aten::transpose.int", x, dim0=dim0, dim1=dim1)


def permute(x, dims):
    return call("aten::permute", x, dims=dims)


def concat(values, axis=0):
    return call("aten::cat", list(values), dim=axis)
