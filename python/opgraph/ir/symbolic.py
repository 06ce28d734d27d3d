"""Sizes computed from symbolic dimensions, as attributes the graph can hold.

With a dynamic batch, torch.export writes ``view(x, [sym_size(x, 0), 12, 64])``:
the size is an FX node (``sym_size.int``, or arithmetic on it), not a number.
A graph attribute is a fixed value, so each such size is replaced where the op
has a spelling that needs no number, as ONNX exporters do:

- ``view``/``reshape``: the one symbolic entry becomes -1 (inferred);
- ``expand``: an entry equal to the input's own size becomes -1 (kept);
- ``slice``: an end at or past the input's symbolic size becomes None (to the end).

Any other use is an error naming the node, the op and the model's line."""

import torch

from .._C import Error

_RESHAPES = {"aten.view.default", "aten.reshape.default", "aten._unsafe_view.default"}


def is_symbolic(value):
    """Whether an FX argument is (or holds) a size computed from symbolic dimensions."""
    if isinstance(value, (list, tuple)):
        return any(is_symbolic(v) for v in value)
    if isinstance(value, torch.fx.Node):
        return isinstance(value.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool))
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


def computes_a_size(node):
    """Whether ``node`` only computes a symbolic size (sym_size.int, s0 * 12, ...): no graph node."""
    return isinstance(node.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool))


def resolve(node, argument, value, where):
    """``value`` of the non-tensor ``argument`` of ``node`` with its symbolic sizes replaced (see above)."""
    op_type = str(node.target)
    expression = _expressions(value)
    input_shape = _input_shape(node)
    if op_type in _RESHAPES and argument.name in ("size", "shape"):
        symbolic = [i for i, item in enumerate(expression) if not isinstance(item, int)]
        if len(symbolic) == 1 and -1 not in expression:
            return [-1 if i == symbolic[0] else item for i, item in enumerate(expression)]
    elif op_type == "aten.expand.default" and argument.name == "size" and input_shape is not None:
        offset = len(expression) - len(input_shape)
        kept = [item if isinstance(item, int) or i < offset or input_shape[i - offset] != item else -1
                for i, item in enumerate(expression)]
        if all(isinstance(item, int) for item in kept):
            return kept
    elif op_type == "aten.slice.Tensor" and argument.name == "end" and input_shape is not None:
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if _at_least(expression, input_shape[dim]):
            return None
    raise Error(f"opgraph.ir: {where}: node '{node.name}' ({op_type}) gives argument '{argument.name}' the size "
                f"{_text(expression)}, computed from a symbolic dimension; the graph holds fixed attribute values, "
                f"and this op has no spelling of that size without one. Export with static shapes, or compute the "
                f"size inside ops (flatten, view(-1, ...)){source_line(node)}")


def source_line(node):
    """``; model line: <file>:<line> <code>`` from the node's stack trace, or ''."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return ""
    lines = [line.strip() for line in trace.strip().splitlines()]
    return f"; model line: {lines[-2]} {lines[-1]}" if len(lines) >= 2 else f"; model line: {lines[-1]}"


def _expressions(value):
    if isinstance(value, (list, tuple)):
        return [_expressions(v) for v in value]
    if isinstance(value, torch.fx.Node):
        value = value.meta["val"]
    if isinstance(value, torch.SymInt):
        expr = value.node.expr
        return int(expr) if expr.is_number else expr
    return value


def _input_shape(node):
    first = node.args[0] if node.args else None
    if isinstance(first, torch.fx.Node) and isinstance(first.meta.get("val"), torch.Tensor):
        return [_expressions(s) for s in first.meta["val"].shape]
    return None


def _at_least(end, size):
    if isinstance(end, int):
        return end >= 2**62  # slice's "to the end"
    try:
        return bool((end - size) >= 0)
    except TypeError:  # sympy cannot decide
        return False


def _text(expression):
    return "[" + ", ".join(map(str, expression)) + "]" if isinstance(expression, list) else str(expression)
