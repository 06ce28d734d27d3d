"""The IR: ``ValueInfo`` (a named value's dtype and shape: the runtime graph's
own), ``OpNode`` (one op call), ``NodeInfo`` (what a conversion function is
given about an FX node) and ``IR`` (the graph: inputs, nodes in execution
order, outputs, weights).

A node keeps its tensor inputs flat, as conversion and execution functions
take them, with ``tensor_args`` saying which schema argument each belongs
to; ``OpNode.tensor_inputs`` and ``flatten`` are the two directions between
that and one entry per tensor argument."""

from dataclasses import dataclass, field
from typing import Any

import torch

from .._C import ValueInfo

Dim = int | str  # a size, or a symbolic dimension ("s0") or expression of them ("2*s0")


def TensorMeta(name: str, shape: list[Dim], dtype: str) -> ValueInfo:  # noqa: N802 (seed 004's name)
    """Seed 004's ``TensorMeta(name, shape, dtype)``: the ``ValueInfo`` of a value."""
    return ValueInfo(name, dtype, shape)


# Where each tensor argument of an op's schema is in OpNode.inputs: an index,
# a list of indices (Tensor[], None for an absent element of Tensor?[]), or
# None for an absent Tensor?.
TensorArgs = dict[str, int | None | list[int | None]]


def flatten(grouped: dict[str, Any]) -> tuple[list[Any], TensorArgs]:
    """One entry per tensor argument (an item, a list of them with None for an
    absent Tensor?[] element, or None) -> the flat items and their TensorArgs."""
    items, where = [], {}

    def position(item):
        if item is None:
            return None
        items.append(item)
        return len(items) - 1

    for name, entry in grouped.items():
        where[name] = [position(item) for item in entry] if isinstance(entry, list) else position(entry)
    return items, where


@dataclass
class OpNode:
    name: str
    op_type: str  # "aten.conv2d.default", "custom.fused_gate"
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    attrs: dict[str, Any]  # every non-tensor argument of the schema, by name, defaults filled
    # Empty means the inputs are the schema's tensor arguments in order, one each.
    tensor_args: TensorArgs = field(default_factory=dict)
    source: str = ""  # the model's line behind the node ("model.py:42 x = self.fc(x)"), where known

    def tensor_inputs(self, arguments, items=None) -> list[Any]:
        """One entry per tensor argument among ``arguments`` (the op's schema):
        what ``items`` (``inputs``, or anything parallel to them, such as their
        names or a run's tensors) holds for it: an item, a list of them (None
        where a Tensor?[] element is absent), or None for an absent Tensor?."""
        items = self.inputs if items is None else items
        names = [argument.name for argument in arguments if argument.is_tensor]
        where = self.tensor_args or {name: k if k < len(items) else None for k, name in enumerate(names)}
        return [_pick(where.get(name), items) for name in names]


def _pick(where, items):
    if isinstance(where, list):
        return [None if i is None else items[i] for i in where]
    return None if where is None else items[where]


@dataclass
class NodeInfo:
    name: str  # "conv2d_1"
    op: str  # "call_function"
    target: Any  # torch.ops.aten.conv2d.default
    args: tuple[Any, ...]  # the FX node's arguments
    kwargs: dict[str, Any]
    input_metas: list[ValueInfo]
    output_metas: list[ValueInfo]
    attrs: dict[str, Any]  # extracted from the schema
    tensor_args: TensorArgs = field(default_factory=dict)
    source: str = ""


@dataclass
class IR:
    name: str
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    nodes: list[OpNode]
    weights: dict[str, torch.Tensor]  # constants by value name

    def to_graph(self):
        """The runtime's ``opgraph.Graph`` of this IR."""
        from .lower import to_graph

        return to_graph(self)

    def save(self, path):
        """Writes an .opg file: the graph, with the weights as its safetensors tensors."""
        from .. import _C

        _C.save_opg(path, self.to_graph(), self._runtime_weights())

    def to_session(self, threads=None, package_paths=(), profile=False, optimize=True, precision="f32"):
        """An ``opgraph.Session`` running this IR on the C++ runtime (options as ``opgraph.Session``'s)."""
        from .. import _C

        return _C.Session(
            self.to_graph(),
            weights=self._runtime_weights(),
            threads=threads,
            package_paths=list(package_paths),
            profile=profile,
            optimize=optimize,
            precision=precision,
        )

    def _runtime_weights(self):
        return {name: w.detach().contiguous() for name, w in self.weights.items()}

    def __str__(self):
        lines = [f"IR {self.name}: inputs {', '.join(_meta_str(m) for m in self.inputs)}"]
        for node in self.nodes:
            lines.append(
                f"  {', '.join(m.name for m in node.outputs)} = {node.op_type}"
                f"({', '.join(m.name for m in node.inputs)})"
            )
        lines.append(f"  outputs {', '.join(m.name for m in self.outputs)}; {len(self.weights)} weights")
        return "\n".join(lines)


def _meta_str(meta):
    return f"{meta.name}: {meta.dtype}[{', '.join(map(str, meta.shape))}]"
