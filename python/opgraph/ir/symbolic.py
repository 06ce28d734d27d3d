"""Sizes computed from symbolic dimensions, as attributes the graph can hold.

With a dynamic batch, torch.export writes ``view(x, [sym_size(x, 0), 12, 64])``:
the size is an FX node (``sym_size.int``, or arithmetic on it), not a number.
The IR keeps such a size as an expression of the graph's symbols ("s0",
"(s0)*(4)"), which the runtime evaluates for each run's input sizes (a str
given to ``opgraph.Graph.add_node`` for an int or int[] attribute) and the
IRExecutor as Python.
The grammar is integers, symbols, + - * // % and parentheses: what sympy
prints for torch's size arithmetic, rewritten here so that the C++ parser
(src/graph/dim_expression.cpp) needs to know nothing of sympy."""

import os
import re

import sympy
import torch
from torch.utils._sympy import functions as size_functions

from .._C import Error

_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)
_TORCH_FOLDER = os.path.dirname(torch.__file__) + os.sep


def is_symbolic(value):
    """Whether an FX argument is (or holds) a size computed from symbolic dimensions."""
    if isinstance(value, (list, tuple)):
        return any(is_symbolic(v) for v in value)
    if isinstance(value, torch.fx.Node):
        return isinstance(value.meta.get("val"), _SYMBOLIC)
    return isinstance(value, _SYMBOLIC)


def computes_a_size(node):
    """Whether ``node`` only computes a symbolic size (sym_size.int, s0 * 12, ...): no graph node."""
    return isinstance(node.meta.get("val"), _SYMBOLIC)


def resolve(node, argument, value, where, in_graph_symbols):
    """``value`` of the non-tensor ``argument`` of ``node`` with each symbolic
    size an expression string; ``in_graph_symbols`` rewrites a sympy size of
    torch's in the graph's symbols (the converter names them)."""
    if isinstance(value, (list, tuple)):
        return [resolve(node, argument, item, where, in_graph_symbols) for item in value]
    if isinstance(value, torch.fx.Node):
        value = value.meta["val"]
    if not isinstance(value, torch.SymInt):
        if isinstance(value, _SYMBOLIC):
            raise Error(
                f"opgraph.ir: {where}: node '{node.name}' ({node.target}) gives argument '{argument.name}' "
                f"the value {value}, computed from symbolic sizes; the graph holds integer sizes only"
                f"{source_line(node)}"
            )
        return value
    expr = value.node.expr
    if expr.is_number:
        return int(expr)
    expr = in_graph_symbols(expr)
    try:
        return _print(expr)
    except ValueError as e:
        raise Error(
            f"opgraph.ir: {where}: node '{node.name}' ({node.target}) gives argument '{argument.name}' the "
            f"size {expr}, which uses {e}; the graph's size expressions hold + - * // % only"
            f"{source_line(node)}"
        ) from None


def _print(expr):
    if isinstance(expr, sympy.Integer):
        return str(int(expr))
    if isinstance(expr, sympy.Symbol):
        return expr.name
    if isinstance(expr, sympy.Add):
        return " + ".join(f"({_print(term)})" for term in expr.args)
    if isinstance(expr, sympy.Mul):
        return "*".join(f"({_print(factor)})" for factor in expr.args)
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) > 0:
        return "*".join([f"({_print(expr.base)})"] * int(expr.exp))
    if isinstance(expr, size_functions.FloorDiv):
        return f"({_print(expr.args[0])})//({_print(expr.args[1])})"
    if isinstance(expr, (size_functions.PythonMod, size_functions.Mod, sympy.Mod)):
        return f"({_print(expr.args[0])})%({_print(expr.args[1])})"
    raise ValueError(type(expr).__name__)


def bind(metas, tensors):
    """The size of each symbol of the input metas, from the tensors given for them."""
    dims = {}
    for meta, tensor in zip(metas, tensors):
        for dim, size in zip(meta.shape, tensor.shape):
            if isinstance(dim, str):
                dims.setdefault(dim, int(size))
    return dims


def evaluate(argument, value, dims):
    """The value of an int, int[] or Scalar ``argument`` with its size expressions computed for ``dims``."""
    if argument.kind not in ("int", "Scalar"):
        return value
    if isinstance(value, list):
        return [evaluate(argument, item, dims) for item in value]
    if isinstance(value, str):
        if not re.fullmatch(r"[\w\s+\-*/%()]+", value):
            raise Error(f"opgraph.ir: argument '{argument.name}': '{value}' is not a size expression")
        return int(eval(value, {"__builtins__": {}}, dict(dims)))  # the grammar above is Python's
    return value


def source(node):
    """The model's line behind ``node``, ``<file>:<line> <code>``, from torch.export's stack trace; or ''."""
    trace = node.meta.get("stack_trace")
    # The innermost frame of the model's own code: not torch's layers nor its
    # generated code ("<eval_with_key>").
    frames = [
        frame
        for frame in re.findall(r'File "([^"]+)", line (\d+), in \S+\n\s*(.*)', trace or "")
        if not frame[0].startswith(("<", _TORCH_FOLDER))
    ]
    if not frames:
        return ""
    path, line, code = frames[-1]
    return f"{path}:{line} {code.strip()}"


def source_line(node):
    """``; model line: <source>`` for an error message, or ''."""
    where = source(node)
    return f"; model line: {where}" if where else ""
