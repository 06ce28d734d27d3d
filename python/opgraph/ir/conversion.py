"""What a conversion function (``opgraph.ir.ops.register_op``) is given about
an FX node, ``NodeInfo``, and what it returns, ``OpNode``: one op call, which
extraction adds to the graph at once (``add_to_graph``).

An ``OpNode``'s ``inputs`` are the FX node's ``input_metas`` (the op's tensor
inputs, flat, as an execution function takes them) or one entry per tensor
argument of its op: a value, a list of them (``Tensor[]``, None for an absent
``Tensor?[]`` element), or None (an absent ``Tensor?``)."""

from dataclasses import dataclass, field
from typing import Any

from .._C import ValueInfo
from .names import runtime_name

Dim = int | str  # a size, or a symbolic dimension ("s0") or expression of them ("2*s0")

# What a node passes for one tensor argument.
TensorInput = ValueInfo | list[ValueInfo | None] | None


def TensorMeta(name: str, shape: list[Dim], dtype: str) -> ValueInfo:  # noqa: N802 (seed 004's name)
    """Seed 004's ``TensorMeta(name, shape, dtype)``: the ``ValueInfo`` of a value."""
    return ValueInfo(name, dtype, shape)


@dataclass
class OpNode:
    name: str
    op_type: str  # "aten.conv2d.default" or "aten::conv2d", "custom.fused_gate"
    inputs: list[TensorInput]
    outputs: list[ValueInfo]
    attrs: dict[str, Any]  # every non-tensor argument of the schema, by name
    source: str = ""  # the model's line behind the node ("model.py:42 x = self.fc(x)"), where known


@dataclass
class NodeInfo:
    name: str  # "conv2d_1"
    op: str  # "call_function"
    target: Any  # torch.ops.aten.conv2d.default
    args: tuple[Any, ...]  # the FX node's arguments
    kwargs: dict[str, Any]
    input_metas: list[ValueInfo]  # the tensor inputs, flat
    output_metas: list[ValueInfo]
    attrs: dict[str, Any]  # extracted from the schema, defaults filled
    tensor_inputs: list[TensorInput] = field(default_factory=list)  # one per tensor argument of the schema
    source: str = ""


def flat_inputs(entries: list[TensorInput]) -> list[ValueInfo]:
    """The values that entries of one per tensor argument name, in order, absent ones left out."""
    flat = [item for entry in entries for item in (entry if isinstance(entry, list) else [entry])]
    return [item for item in flat if item is not None]


def add_to_graph(graph, op_node, node_info):
    """Appends ``op_node``, which a conversion function made of ``node_info``, to ``graph``."""
    inputs = node_info.tensor_inputs if op_node.inputs == node_info.input_metas else op_node.inputs
    graph.add_node(
        runtime_name(op_node.op_type),
        [_names(entry) for entry in inputs],
        [meta.name for meta in op_node.outputs],
        name=op_node.name,
        source=op_node.source or node_info.source,
        attributes=op_node.attrs,
    )


def _names(entry):
    """A tensor argument's entry with its values as names, as ``Graph.add_node`` takes it."""
    if isinstance(entry, (list, tuple)):
        return [_names(item) for item in entry]
    return entry.name if isinstance(entry, ValueInfo) else entry
