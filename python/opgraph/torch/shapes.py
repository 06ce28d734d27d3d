"""Output metas for PyTorch's fake tensors, from the op's C++ shape function.

Under torch.compile and torch.export with dynamic shapes, a fake tensor's
sizes may be SymInts, which a C++ shape function cannot take. Then:

1. The shape function runs on the sizes' hints (their values in the example
   inputs), and once more per symbolic size s with s moved to hint + 1.
2. An output size that moves with exactly one input size (hint, then hint +
   1) becomes that SymInt; one that no move changes is a constant.
3. A symbolic size whose move the shape function rejects (e.g. an attribute
   must equal it, or a 3x3 matrix must stay 3x3), or that moves an output
   size in another way (a sum, a product), is specialized to its hint: a
   guard, so the graph is recompiled for other values of it.

So output sizes come out symbolic where they are an input's size and fixed
otherwise. This assumes that a shape function's output sizes are constants
or input sizes, piecewise: one that behaves differently far from the hints
(a max with a constant, say) is wrong there. Checks the shape function makes
are made on the hints; the real kernel checks the actual sizes again.
"""

import torch

try:
    from torch.fx.experimental.symbolic_shapes import guarding_hint_or_throw
except ImportError:  # PyTorch 2.11 and before name it hint_int
    from torch.fx.experimental.symbolic_shapes import hint_int as guarding_hint_or_throw

from .. import Error, dtypes
from .._C import infer_output_metas


def _is_symbolic(size) -> bool:
    return isinstance(size, torch.SymInt) and size.node.maybe_as_int() is None


def _metas(tensors, size_of):
    """Per tensor argument: (dtype name, shape), None, or a list of them."""

    def meta(t):
        return None if t is None else (dtypes.spelling(t.dtype), [size_of(s) for s in t.shape])

    return [[meta(t) for t in arg] if isinstance(arg, (list, tuple)) else meta(arg) for arg in tensors]


def _flat(tensors):
    for arg in tensors:
        if isinstance(arg, (list, tuple)):
            yield from arg
        elif arg is not None:
            yield arg


def output_metas(name, tensors, attrs):
    """[(dtype name, shape)] of the op's outputs for tensor inputs that may be
    fake tensors with symbolic sizes (see the module's docstring)."""
    symbols = {}  # sympy expression -> (SymInt, hint)
    for t in _flat(tensors):
        for size in t.shape:
            if _is_symbolic(size) and size.node.expr not in symbols:
                try:
                    hint = int(guarding_hint_or_throw(size))
                except Exception:  # an unbacked size: no value to run the shape function on
                    raise Error(
                        f"{name}: cannot infer output sizes from the data-dependent size {size}; "
                        "its shape function needs sizes with known values"
                    ) from None
                symbols[size.node.expr] = (size, hint)

    def infer(moved=None):
        def value(size):
            if not _is_symbolic(size):
                return int(size)
            hint = symbols[size.node.expr][1]
            return hint + 1 if size.node.expr == moved else hint

        return [(dtype, list(shape)) for dtype, shape in infer_output_metas(name, _metas(tensors, value), **attrs)]

    base = infer()
    if not symbols:
        return base
    followers = [[set() for _ in shape] for _, shape in base]  # per output size: the symbols it moves with
    specialize = set()
    for key, (_, hint) in symbols.items():
        try:
            probe = infer(moved=key)
        except Error:
            specialize.add(key)
            continue
        for (_, shape), (_, moved), follows in zip(base, probe, followers):
            if len(moved) != len(shape):
                specialize.add(key)
                continue
            for value, moved_value, symbols_followed in zip(shape, moved, follows):
                if moved_value == value:
                    continue
                if (value, moved_value) == (hint, hint + 1):
                    symbols_followed.add(key)
                else:
                    specialize.add(key)
    for follows in followers:
        for symbols_followed in follows:
            if len(symbols_followed) > 1:
                specialize |= symbols_followed
    for key in specialize:
        int(symbols[key][0])  # guards the size to its hint
    outputs = []
    for (dtype, shape), follows in zip(base, followers):
        sizes = [
            symbols[next(iter(f))][0] if len(f) == 1 and not f & specialize else value
            for value, f in zip(shape, follows)
        ]
        outputs.append((dtype, sizes))
    return outputs
