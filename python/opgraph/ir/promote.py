"""ATen's type promotion, made explicit for a runtime that has none.

ATen computes a pointwise op whose operands differ in dtype in one dtype that
``torch._prims_common.elementwise_dtypes`` derives from them and from the op's
promotion kind: int64 * float32 in float32, sqrt of an int64 in the default
float dtype, a comparison in its operands' common dtype. A 0-d tensor or a
Python number is weaker than a tensor of its kind (int64 0-d * float32 is
float32, a float number with an int tensor the default float dtype). The
runtime's kernels take operands of one dtype, so extract_ir converts each
operand of another dtype to the one ``operand_dtypes`` names (convert.py).
"""

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND as Kind
from torch._prims_common import elementwise_dtypes

from .._C import Error

# Each op's kind, as torch._refs declares it. Unary ops whose result keeps the
# operand's dtype (neg, relu, floor) convert nothing, and ops whose operands
# ATen requires to share a dtype (lerp, prelu, heaviside) refuse what would
# need a conversion: neither is listed.
_KINDS = {
    **dict.fromkeys(
        "add sub rsub mul maximum minimum fmax fmin fmod remainder floor_divide hypot logaddexp "
        "logaddexp2 gcd lcm bitwise_and bitwise_or bitwise_xor __and__ __or__ __xor__ bitwise_left_shift "
        "bitwise_right_shift __lshift__ __rshift__ clamp clamp_min clamp_max addcmul".split(),
        Kind.DEFAULT,
    ),
    **dict.fromkeys(
        "div true_divide atan2 copysign xlogy addcdiv igamma igammac sqrt rsqrt reciprocal exp exp2 expm1 "
        "log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh sigmoid erf erfc "
        "erfinv lgamma digamma i0 sinc deg2rad rad2deg".split(),
        Kind.INT_TO_FLOAT,
    ),
    **dict.fromkeys(
        "eq ne lt le gt ge logical_and logical_or logical_xor logical_not isnan isinf isfinite isposinf "
        "isneginf signbit".split(),
        Kind.ALWAYS_BOOL,
    ),
    **dict.fromkeys(("pow", "square"), Kind.BOOL_TO_LONG),
    "abs": Kind.COMPLEX_TO_FLOAT,
    **dict.fromkeys(("where", "nextafter", "cat", "stack"), Kind.NO_OPMATH),
}

# The schema arguments that take part: where's condition, addcmul's value and
# add's alpha keep their own types.
_OPERANDS = ("self", "other", "exponent", "min", "max", "tensor1", "tensor2", "tensors")

# The dtype ATen wraps a Python number in before converting it to the one its op computes in.
_WRAPPED = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}

# A bool or complex-to-real result says nothing of the dtype the operands meet
# in: that is the one the DEFAULT kind gives.
_OPERAND_KIND = {Kind.ALWAYS_BOOL: Kind.DEFAULT, Kind.COMPLEX_TO_FLOAT: Kind.DEFAULT}


def operand_dtypes(node, values):
    """The dtype ATen computes the FX ``node`` in, for each argument that takes
    part, given its arguments by schema name (FX nodes, numbers, lists of
    them); empty for an op that does not promote. The dtype promotion gives
    the result must be the one the exported graph holds, else the table above
    is wrong for the op."""
    op = node.target
    kind = _kind(op, values)
    if kind is None:
        return {}
    operands = {name: values[name] for name in _OPERANDS if values.get(name) is not None}
    examples = [_example(value) for name in operands for value in _leaves(operands[name])]
    _, dtype = elementwise_dtypes(*examples, type_promotion_kind=_OPERAND_KIND.get(kind, kind))
    _, result = elementwise_dtypes(*examples, type_promotion_kind=kind)
    exported = node.meta["val"].dtype
    if result != exported:
        raise Error(
            f"opgraph.ir: node '{node.name}' ({op}): type promotion ({kind.name}) of "
            f"({', '.join(map(_describe, examples))}) gives {_name(result)}, but torch.export computed "
            f"{_name(exported)}"
        )
    return dict.fromkeys(operands, dtype)


def number(value, dtype):
    """A Python number as the 0-d tensor an op computing in ``dtype`` reads, converted as ATen converts it
    (an integer wraps around a narrower integer's range, a float rounds once); without a ``dtype``, in the
    default dtype of its kind."""
    if dtype is None:
        return torch.tensor(value)
    return torch.tensor(value, dtype=_WRAPPED[type(value)]).to(dtype)


def _kind(op, values):
    if not isinstance(op, torch._ops.OpOverload) or op._schema.is_mutable:
        return None  # out= and in-place overloads write into a tensor of their own dtype
    kind = _KINDS.get(op.overloadpacket.__name__)
    if kind is Kind.INT_TO_FLOAT and values.get("rounding_mode") is not None:
        return Kind.DEFAULT  # div rounding to trunc or floor keeps integers integers
    return kind


def _leaves(value):
    return value if isinstance(value, (list, tuple)) else (value,)


def _example(value):
    """A value as elementwise_dtypes reads it: a fake tensor or a number."""
    return value.meta["val"] if isinstance(value, torch.fx.Node) else value


def _describe(example):
    if isinstance(example, torch.Tensor):
        return f"{_name(example.dtype)} {'0-d ' if example.dim() == 0 else ''}tensor"
    return f"Python {type(example).__name__}"


def _name(dtype):
    return str(dtype).removeprefix("torch.")
