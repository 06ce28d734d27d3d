"""The two spellings of an op name: the IR's, as torch prints an overload
(``aten.conv2d.default``, ``aten.add.Tensor``, ``custom.fused_gate``), and
the runtime's (``aten::conv2d``, ``aten::add.Tensor``, ``custom::fused_gate``)."""

from .._C import Error


def runtime_name(op_type):
    """``aten.conv2d.default`` -> ``aten::conv2d``; ``aten.add.Tensor`` -> ``aten::add.Tensor``."""
    namespace, _, rest = op_type.partition(".")
    if not namespace or not rest:
        raise Error(f"opgraph.ir: op type '{op_type}' is not of the form namespace.name[.overload]")
    name, _, overload = rest.partition(".")
    return f"{namespace}::{name}" if overload in ("", "default") else f"{namespace}::{name}.{overload}"


def ir_name(runtime_op):
    """``aten::conv2d`` -> ``aten.conv2d.default``; ``aten::add.Tensor`` -> ``aten.add.Tensor``."""
    namespace, separator, rest = runtime_op.partition("::")
    if not separator:
        raise Error(f"opgraph.ir: op name '{runtime_op}' is not of the form namespace::name[.overload]")
    name, _, overload = rest.partition(".")
    return f"{namespace}.{name}.{overload or 'default'}"


def without_default(op_type):
    """The registry key of an op type: a ``.default`` overload is the op itself."""
    return op_type[: -len(".default")] if op_type.endswith(".default") else op_type
