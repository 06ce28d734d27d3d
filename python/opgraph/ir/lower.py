"""IR -> the runtime's graph, built through ``opgraph.Graph``'s own methods:
op types in the runtime's spelling, one input per tensor argument (a value
name, None for an absent ``Tensor?``, a list for ``Tensor[]``), the other
arguments as attributes that the graph binds to the op's schema, and the op
packages that define non-ATen ops."""

from pathlib import Path

from .. import _C, arguments, dtypes
from .names import runtime_name


def to_graph(ir):
    graph = _C.Graph(ir.name)
    for meta in ir.inputs:
        graph.add_input(meta.name, meta.dtype, meta.shape)
    for name, weight in ir.weights.items():
        graph.add_constant(name, dtypes.name_of(weight.dtype, f"opgraph.ir: weight '{name}'"), list(weight.shape))
    for node in ir.nodes:
        names = [meta.name for meta in node.inputs]
        graph.add_node(
            runtime_name(node.op_type),
            node.tensor_inputs(arguments.of_ir_op(node.op_type), names),
            [meta.name for meta in node.outputs],
            name=node.name,
            source=node.source,
            attributes=node.attrs,
        )
    for meta in ir.outputs:
        graph.add_output(meta.name)
    graph.packages = _packages({node.op_type for node in graph.nodes})
    return graph


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
