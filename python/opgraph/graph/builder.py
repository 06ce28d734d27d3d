"""``GraphBuilder`` (public as ``opgraph.graph.Graph``, MAX's name): builds a
graph of op calls in Python, as MAX's Graph API does, into the runtime's
``opgraph._C.Graph``, which runs on the C++ Session and saves as .opg."""

import contextvars
import copy

import numpy as np

from .. import _C, dtypes
from .._C import Error
from ..package import load_package
from .types import DType, TensorType
from .values import Value

_current = contextvars.ContextVar("opgraph_current_graph", default=None)


def current_graph():
    graph = _current.get()
    if graph is None:
        raise Error("opgraph.graph.ops: no graph is being built; call ops inside `with Graph(...) as graph:`")
    return graph


class GraphBuilder:
    """``with Graph(name, input_types=[...], custom_extensions=[...]) as graph:``
    then ``graph.inputs``, ops from ``opgraph.graph.ops`` and ``graph.output(...)``."""

    def __init__(self, name, input_types=(), custom_extensions=()):
        self.name = name
        self.extensions = [load_package(path, "Graph: custom_extensions") for path in custom_extensions]
        self._graph = _C.Graph(name)
        self._graph.packages = [ext.path for ext in self.extensions]
        self.inputs = tuple(self._input(f"input{i}", _type(t)) for i, t in enumerate(input_types))
        self.outputs = []
        self.constants = {}  # name -> array
        self.values = {v.name: v for v in self.inputs}
        self._token = None
        self._counter = 0

    def _input(self, name, type):
        self._graph.add_input(name, type.dtype.value, type.shape)
        return Value(self, name, type)

    def __enter__(self):
        self._token = _current.set(self)
        return self

    def __exit__(self, *exc):
        _current.reset(self._token)

    def _fresh(self, prefix):
        self._counter += 1
        return f"{prefix}_{self._counter}"

    def resolve_op(self, name):
        """The qualified op name: as given when qualified, else the op of that
        name in this graph's custom extensions, else the built-in aten op."""
        if "::" in name:
            return name
        matches = [op for ext in self.extensions for op in ext.ops if op.split("::")[1].split(".")[0] == name]
        if len(matches) > 1:
            raise Error(f"ops.custom: '{name}' is ambiguous among the custom extensions: {', '.join(matches)}")
        if matches:
            return matches[0]
        known = ", ".join(op for ext in self.extensions for op in ext.ops) or "(no custom extensions loaded)"
        raise Error(f"ops.custom: no op '{name}' in the graph's custom extensions; they provide: {known}")

    def add_node(self, op, inputs, attributes, out_types=None):
        """Appends a call of ``op`` (qualified name) to the graph: one entry of
        ``inputs`` per tensor argument (a Value, None, or a list of Values);
        ``attributes`` by name. Returns the output Values."""
        returns = _C.op_schema(op).returns
        if out_types is not None and len(out_types) != len(returns):
            raise Error(f"{op}: out_types: expected {len(returns)} types, got {len(out_types)}")
        names = [_input_name(self, op, value) for value in inputs]
        attributes = {name: value.value if isinstance(value, DType) else value for name, value in attributes.items()}
        items = None
        if any(r.type == "Tensor[]" for r in returns):  # as many as the shape function gives for these inputs
            count = len(_C.infer_output_metas(op, [_meta(value) for value in inputs], **attributes))
            items = [self._fresh(op.split("::")[1].split(".")[0] + "_item") for _ in range(count)]
        outputs = self._graph.add_node(op, names, items, attributes=attributes)  # named after the op: relu_3
        values = [Value(self, name, _type(out_types[i]) if out_types else None) for i, name in enumerate(outputs)]
        self.values.update({v.name: v for v in values})
        return values

    def add_constant(self, array, name=None):
        array = np.ascontiguousarray(array)
        name = name or self._fresh("const")
        self._graph.add_constant(name, dtypes.name_of(array.dtype, f"Graph: constant '{name}'"), array.shape)
        self.constants[name] = array
        value = Value(self, name, TensorType(array.dtype, array.shape))
        self.values[name] = value
        return value

    def output(self, *values):
        for value in values:
            if not isinstance(value, Value) or value.graph is not self:
                raise Error(f"Graph.output: expected values of graph '{self.name}', got {value!r}")
        if self.outputs:
            raise Error(f"Graph.output: graph '{self.name}' has its outputs already")
        for value in values:
            self._graph.add_output(value.name)
        self.outputs = list(values)
        self._check_declared_types()

    def to_graph(self):
        """The runtime's graph (``opgraph._C.Graph``) built so far."""
        if not self.outputs:
            raise Error(f"Graph '{self.name}': no outputs; call graph.output(...) first")
        return self._graph

    def _infer_types(self):
        pending = [v for v in self.values.values() if v._type is None]
        probe = copy.copy(self._graph)
        for value in pending:
            probe.add_output(value.name)
        infos = probe.infer_shapes()
        for value in pending:
            info = infos[value.name]
            value._type = TensorType(info.dtype, info.shape)

    def _check_declared_types(self):
        """Out types given to ops.custom must be what the op's shape function says."""
        declared = {v.name: v._type for v in self.values.values() if v._type is not None}
        infos = self._graph.infer_shapes()
        for name, type in declared.items():
            inferred = TensorType(infos[name].dtype, infos[name].shape)
            if inferred.dtype != type.dtype or not _shapes_agree(inferred.shape, type.shape):
                raise Error(f"Graph '{self.name}': value '{name}' was declared {type} but its op gives {inferred}")

    def save(self, path):
        """Writes the graph and its constants as an .opg file that `opgraph run` executes."""
        _C.save_opg(path, self.to_graph(), self.constants)

    def __repr__(self):
        return f"Graph({self.name!r}, {len(self.inputs)} inputs, {len(self._graph.nodes)} nodes)"


def _type(value):
    if not isinstance(value, TensorType):
        raise Error(f"expected a TensorType, got {value!r}")
    return value


def _meta(value):
    """(dtype name, shape) of a Value (None, or a list of them, as given), for infer_output_metas."""
    if isinstance(value, (list, tuple)):
        return [_meta(v) for v in value]
    return None if value is None else (value.dtype.value, list(value.shape))


def _shapes_agree(inferred, declared):
    # "?" marks a dimension inference could not name (a product of symbols).
    return len(inferred) == len(declared) and all(a == b or a == "?" for a, b in zip(inferred, declared))


def _input_name(graph, op, value):
    """The name of a Value of ``graph`` (None, or a list of them, as given); the
    runtime's graph checks the rest against the op's schema."""
    if isinstance(value, (list, tuple)):
        return [_input_name(graph, op, v) for v in value]
    if value is None:
        return None
    if not isinstance(value, Value):
        raise Error(f"{op}: expected graph values as inputs, got {type(value).__name__}")
    if value.graph is not graph:
        raise Error(f"{op}: value '{value.name}' belongs to another graph")
    return value.name
