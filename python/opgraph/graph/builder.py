"""``Graph``: builds a graph of op calls in Python, as MAX's Graph API does,
into opgraph's graph JSON; runs it on the C++ Session and saves it as .opg."""

import contextvars
import json

import numpy as np

from .. import _C
from .._C import Error
from ..package import load_package
from . import attrs
from .types import TensorType
from .values import Value

_current = contextvars.ContextVar("opgraph_current_graph", default=None)


def current_graph():
    graph = _current.get()
    if graph is None:
        raise Error("opgraph.graph.ops: no graph is being built; call ops inside `with Graph(...) as graph:`")
    return graph


class Graph:
    """``with Graph(name, input_types=[...], custom_extensions=[...]) as graph:``
    then ``graph.inputs``, ops from ``opgraph.graph.ops`` and ``graph.output(...)``."""

    def __init__(self, name, input_types=(), custom_extensions=()):
        self.name = name
        self.extensions = [load_package(path, "Graph: custom_extensions") for path in custom_extensions]
        self.inputs = tuple(Value(self, f"input{i}", _type(t)) for i, t in enumerate(input_types))
        self.outputs = []
        self.nodes = []
        self.constants = {}  # name -> array
        self.values = {v.name: v for v in self.inputs}
        self._token = None
        self._counter = 0

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
        schema = _C.op_schema(op)
        tensor_arguments = [a for a in schema.arguments if a.is_tensor]
        if len(inputs) != len(tensor_arguments):
            names = ", ".join(a.name for a in tensor_arguments)
            raise Error(f"{op}: expected {len(tensor_arguments)} tensor values ({names}), got {len(inputs)}")
        node_inputs = [_input_name(self, op, a, value) for a, value in zip(tensor_arguments, inputs)]
        by_name = {a.name: a for a in schema.arguments if not a.is_tensor}
        unknown = attributes.keys() - by_name.keys()
        if unknown:
            raise Error(f"{op}: unknown parameters {sorted(unknown)}; it takes {sorted(by_name)}")
        encoded = {name: attrs.encode(op, by_name[name], value) for name, value in attributes.items()}
        if out_types is not None and len(out_types) != len(schema.returns):
            raise Error(f"{op}: out_types: expected {len(schema.returns)} types, got {len(out_types)}")
        node = self._fresh(schema.name)
        outputs = [
            Value(
                self, f"{node}_out{i}" if len(schema.returns) > 1 else node, _type(out_types[i]) if out_types else None
            )
            for i in range(len(schema.returns))
        ]
        self.nodes.append(
            {"name": node, "op_type": op, "inputs": node_inputs, "outputs": [v.name for v in outputs], "attrs": encoded}
        )
        self.values.update({v.name: v for v in outputs})
        return outputs

    def add_constant(self, array, name=None):
        array = np.ascontiguousarray(array)
        name = name or self._fresh("const")
        if name in self.values:
            raise Error(f"Graph: a value named '{name}' already exists")
        self.constants[name] = array
        value = Value(self, name, TensorType(array.dtype, array.shape))
        self.values[name] = value
        return value

    def output(self, *values):
        for value in values:
            if not isinstance(value, Value) or value.graph is not self:
                raise Error(f"Graph.output: expected values of graph '{self.name}', got {value!r}")
        self.outputs = list(values)
        self._check_declared_types()

    def to_dict(self, outputs=None):
        return {
            "name": self.name,
            "inputs": [v.type.to_json(v.name) for v in self.inputs],
            "outputs": [{"name": v.name} for v in (outputs if outputs is not None else self.outputs)],
            "constants": [TensorType(a.dtype, a.shape).to_json(n) for n, a in self.constants.items()],
            "nodes": self.nodes,
            "packages": [ext.path for ext in self.extensions],
        }

    def to_graph(self):
        """The C++ opgraph.Graph of what has been built."""
        if not self.outputs:
            raise Error(f"Graph '{self.name}': no outputs; call graph.output(...) first")
        return _C.Graph.from_json(json.dumps(self.to_dict()))

    def _infer_types(self):
        pending = [v for v in self.values.values() if v._type is None]
        infos = _C.Graph.from_json(json.dumps(self.to_dict(outputs=pending))).infer_shapes()
        for value in pending:
            info = infos[value.name]
            value._type = TensorType(info.dtype, info.shape)

    def _check_declared_types(self):
        """Out types given to ops.custom must be what the op's shape function says."""
        declared = {v.name: v._type for v in self.values.values() if v._type is not None}
        infos = _C.Graph.from_json(json.dumps(self.to_dict())).infer_shapes()
        for name, type in declared.items():
            inferred = TensorType(infos[name].dtype, infos[name].shape)
            if inferred.dtype != type.dtype or not _shapes_agree(inferred.shape, type.shape):
                raise Error(f"Graph '{self.name}': value '{name}' was declared {type} but its op gives {inferred}")

    def save(self, path):
        """Writes the graph and its constants as an .opg file that `opgraph run` executes."""
        _C.save_opg(path, self.to_graph(), self.constants)

    def __repr__(self):
        return f"Graph({self.name!r}, {len(self.inputs)} inputs, {len(self.nodes)} nodes)"


def _type(value):
    if not isinstance(value, TensorType):
        raise Error(f"expected a TensorType, got {value!r}")
    return value


def _shapes_agree(inferred, declared):
    # "?" marks a dimension inference could not name (a product of symbols).
    return len(inferred) == len(declared) and all(a == b or a == "?" for a, b in zip(inferred, declared))


def _input_name(graph, op, argument, value):
    if isinstance(value, (list, tuple)):
        return [_input_name(graph, op, argument, v) for v in value]
    if value is None:
        return None
    if not isinstance(value, Value):
        raise Error(f"{op}: {argument.name}: expected a graph value, got {type(value).__name__}")
    if value.graph is not graph:
        raise Error(f"{op}: {argument.name}: value '{value.name}' belongs to another graph")
    return value.name
