"""IR -> the runtime's graph: op types in the runtime's spelling, each tensor
argument an input (a value name, null for an absent ``Tensor?``, a list for
``Tensor[]``), every other argument a typed attribute by its schema name, and
the op packages that define non-ATen ops."""

import json
from pathlib import Path

from .. import _C
from .._C import Error
from . import attributes, schema
from .ir import TensorMeta, pick
from .names import runtime_name


def to_graph_dict(ir):
    nodes = [_node(node) for node in ir.nodes]
    return {
        "name": ir.name,
        "inputs": [_value(meta) for meta in ir.inputs],
        "outputs": [{"name": meta.name} for meta in ir.outputs],
        "constants": [_value(_weight_meta(name, w)) for name, w in ir.weights.items()],
        "nodes": nodes,
        "packages": _packages({node["op_type"] for node in nodes}),
    }


def to_graph(ir):
    return _C.Graph.from_json(json.dumps(to_graph_dict(ir)))


def _value(meta):
    return {"name": meta.name, "dtype": meta.dtype, "shape": list(meta.shape)}


def _weight_meta(name, weight):
    return TensorMeta(name, list(weight.shape), attributes.dtype_name("weight", name, weight.dtype))


def _node(node):
    arguments = schema.arguments(node.op_type)
    names = [meta.name for meta in node.inputs]
    positions = node.tensor_positions(arguments)
    inputs, attrs = [], {}
    for argument in arguments:
        if argument.is_tensor:
            inputs.append(pick(positions.get(argument.name), names))  # absent tensors stay null
        else:
            value = node.attrs.get(argument.name, argument.default)
            attrs[argument.name] = attributes.to_json(node.op_type, argument, value)
    unknown = node.attrs.keys() - {a.name for a in arguments}
    if unknown:
        raise Error(
            f"opgraph.ir: node '{node.name}' ({node.op_type}) has attributes {sorted(unknown)} that its "
            f"schema does not declare; the runtime takes {[a.name for a in arguments if not a.is_tensor]}"
        )
    entry = {
        "name": node.name,
        "op_type": runtime_name(node.op_type),
        "inputs": inputs,
        "outputs": [meta.name for meta in node.outputs],
        "attrs": attrs,
    }
    if node.source:
        entry["source"] = node.source
    return entry


def _packages(op_names):
    """The name of each loaded op package defining one of ``op_names``: a graph
    names packages, not paths, so that an .opg runs on any machine that has them."""
    packages = []
    for library in _C.loaded_libraries():
        if op_names & set(library.ops):
            packages.append(package_name(library.path))
    return sorted(packages)


def package_name(path):
    """``/x/libfused_gate.so`` -> ``fused_gate``, found again as lib<name>.so in a package path."""
    stem = Path(path).name.removesuffix(".so")
    return stem.removeprefix("lib")
