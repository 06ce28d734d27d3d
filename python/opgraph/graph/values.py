"""``Value``: one tensor flowing through a graph under construction."""

from .types import TensorType


class Value:
    """A graph value: a graph input, a constant or an op's output. Its type
    is known when it is created (inputs, constants, ``ops.custom``) or
    inferred by the ops' shape functions on first use."""

    def __init__(self, graph, name, type=None):
        self.graph = graph
        self.name = name
        self._type = type

    @property
    def tensor(self):
        """The value as a tensor (every opgraph graph value is one; MAX's ``Value.tensor``)."""
        return self

    @property
    def type(self) -> TensorType:
        if self._type is None:
            self.graph._infer_types()
        return self._type

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def shape(self):
        return self.type.shape

    @property
    def rank(self):
        return self.type.rank

    def _binary(self, op, other, reverse=False):
        from . import nodes

        other = other if isinstance(other, Value) else nodes.constant(other, dtype=self.dtype)
        return getattr(nodes, op)(other, self) if reverse else getattr(nodes, op)(self, other)

    def __add__(self, other):
        return self._binary("add", other)

    def __radd__(self, other):
        return self._binary("add", other, reverse=True)

    def __sub__(self, other):
        return self._binary("sub", other)

    def __rsub__(self, other):
        return self._binary("sub", other, reverse=True)

    def __mul__(self, other):
        return self._binary("mul", other)

    def __rmul__(self, other):
        return self._binary("mul", other, reverse=True)

    def __truediv__(self, other):
        return self._binary("div", other)

    def __matmul__(self, other):
        return self._binary("matmul", other)

    def __repr__(self):
        return f"Value({self.name!r}, {self._type!r})"
