"""``load``: an .opg file back into an IR. The shapes of the values between
nodes come from the runtime's shape functions, so the graph's op packages are
loaded first, and every op must be one the runtime has."""

import json
from pathlib import Path

import torch

from .. import _C
from .._C import Error
from ..package import search_paths
from . import attributes, schema
from .ir import IR, OpNode, TensorMeta
from .names import ir_name


def load(path, package_paths=()):
    """The IR saved in the .opg file ``path``; its packages are looked for in
    ``package_paths`` (folders, or package locations as opgraph.load_package
    takes them), then in the file's folder."""
    graph, weights = _C.load_opg(path)
    document = json.loads(graph.to_json())
    paths = search_paths(package_paths, "opgraph.ir.load: package_paths")
    _C.load_packages(document.get("packages", []), [*paths, str(Path(path).resolve().parent)])
    shapes = graph.infer_shapes()

    def meta(name):
        info = shapes[name]
        return TensorMeta(name, list(info.shape), info.dtype)

    nodes = [_node(entry, meta) for entry in document["nodes"]]
    return IR(
        document.get("name") or Path(path).stem,
        [meta(v["name"]) for v in document["inputs"]],
        [meta(v["name"]) for v in document["outputs"]],
        nodes,
        {name: torch.from_numpy(array) for name, array in weights.items()},
    )


def _node(entry, meta):
    op_type = ir_name(entry["op_type"])
    tensor_arguments = [a for a in schema.arguments(op_type) if a.is_tensor]
    if len(tensor_arguments) != len(entry["inputs"]):
        raise Error(
            f"opgraph.ir.load: node '{entry['name']}' ({op_type}) has {len(entry['inputs'])} inputs, its "
            f"schema {len(tensor_arguments)} tensor arguments"
        )
    inputs, tensor_args = [], {}

    def position(name):
        inputs.append(meta(name))
        return len(inputs) - 1

    for argument, value in zip(tensor_arguments, entry["inputs"]):
        if isinstance(value, list):
            tensor_args[argument.name] = [None if v is None else position(v) for v in value]
        else:
            tensor_args[argument.name] = None if value is None else position(value)
    attrs = {name: attributes.from_json(value) for name, value in entry.get("attrs", {}).items()}
    return OpNode(
        entry["name"],
        op_type,
        inputs,
        [meta(name) for name in entry["outputs"]],
        attrs,
        tensor_args,
        entry.get("source", ""),
    )
