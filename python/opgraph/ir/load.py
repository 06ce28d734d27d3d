"""``load``: an .opg file back into an IR, read from the runtime's graph. The
shapes of the values between nodes come from the runtime's shape functions,
so the graph's op packages are loaded first, and every op must be one the
runtime has."""

from pathlib import Path

import torch

from .. import _C, arguments
from .._C import Error
from ..package import search_paths
from .ir import IR, OpNode, flatten
from .names import ir_name


def load(path, package_paths=()):
    """The IR saved in the .opg file ``path``; its packages are looked for in
    ``package_paths`` (folders, or package locations as opgraph.load_package
    takes them), then in the file's folder."""
    graph, weights = _C.load_opg(path)
    paths = search_paths(package_paths, "opgraph.ir.load: package_paths")
    _C.load_packages(graph.packages, [*paths, str(Path(path).resolve().parent)])
    values = graph.infer_shapes()
    return IR(
        graph.name or Path(path).stem,
        [values[meta.name] for meta in graph.inputs],
        [values[name] for name in graph.outputs],
        [_node(node, values) for node in graph.nodes],
        {name: torch.from_numpy(array) for name, array in weights.items()},
    )


def _node(node, values):
    op_type = ir_name(node.op_type)
    tensor_arguments = [a for a in arguments.of_ir_op(op_type) if a.is_tensor]
    if len(tensor_arguments) != len(node.inputs):
        raise Error(
            f"opgraph.ir.load: node '{node.name}' ({op_type}) has {len(node.inputs)} inputs, its "
            f"schema {len(tensor_arguments)} tensor arguments"
        )
    grouped = {argument.name: _values(given, values) for argument, given in zip(tensor_arguments, node.inputs)}
    inputs, tensor_args = flatten(grouped)
    return OpNode(
        node.name, op_type, inputs, [values[name] for name in node.outputs], node.attrs, tensor_args, node.source
    )


def _values(given, values):
    """The ValueInfo(s) a NodeInput names: one, a list (None for an absent element), or None."""
    if given.is_list:
        return [values[name] if name else None for name in given.values]
    return None if given.is_none else values[given.values[0]]
