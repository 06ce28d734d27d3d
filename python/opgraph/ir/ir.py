"""The IR: ``TensorMeta`` (a named value's shape and dtype), ``OpNode`` (one op
call), ``NodeInfo`` (what a conversion function is given about an FX node) and
``IR`` (the graph: inputs, nodes in execution order, outputs, weights)."""

from dataclasses import dataclass, field
from typing import Any

import torch

Dim = int | str  # a size, or a symbolic dimension ("s0") or expression of them ("2*s0")


@dataclass
class TensorMeta:
    name: str
    shape: list[Dim]
    dtype: str  # "float32", as opgraph names dtypes


# Where each tensor argument of an op's schema is in OpNode.inputs: an index,
# a list of indices (Tensor[], None for an absent element of Tensor?[]), or
# None for an absent Tensor?.
TensorArgs = dict[str, int | None | list[int | None]]


def pick(where, items):
    """What a TensorArgs entry refers to among ``items``: an item, a list of
    them (None where a Tensor?[] element is absent), or None."""
    if isinstance(where, list):
        return [None if i is None else items[i] for i in where]
    return None if where is None else items[where]


@dataclass
class OpNode:
    name: str
    op_type: str  # "aten.conv2d.default", "custom.fused_gate"
    inputs: list[TensorMeta]
    outputs: list[TensorMeta]
    attrs: dict[str, Any]  # every non-tensor argument of the schema, by name, defaults filled
    # Empty means the inputs are the schema's tensor arguments in order, one each.
    tensor_args: TensorArgs = field(default_factory=dict)
    source: str = ""  # the model's line behind the node ("model.py:42 x = self.fc(x)"), where known

    def tensor_positions(self, arguments) -> TensorArgs:
        """Where each tensor argument among ``arguments`` (the op's schema) is
        in ``inputs``: ``tensor_args``, or the inputs in order when it is empty."""
        if self.tensor_args:
            return self.tensor_args
        names = [argument.name for argument in arguments if argument.is_tensor]
        return {name: k if k < len(self.inputs) else None for k, name in enumerate(names)}


@dataclass
class NodeInfo:
    name: str  # "conv2d_1"
    op: str  # "call_function"
    target: Any  # torch.ops.aten.conv2d.default
    args: tuple[Any, ...]  # the FX node's arguments
    kwargs: dict[str, Any]
    input_metas: list[TensorMeta]
    output_metas: list[TensorMeta]
    attrs: dict[str, Any]  # extracted from the schema
    tensor_args: TensorArgs = field(default_factory=dict)
    source: str = ""


@dataclass
class IR:
    name: str
    inputs: list[TensorMeta]
    outputs: list[TensorMeta]
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

    def to_session(self, threads=None, package_paths=(), profile=False, optimize=True):
        """An ``opgraph.Session`` running this IR on the C++ runtime (options as ``opgraph.Session``'s)."""
        from .. import _C

        return _C.Session(
            self.to_graph(),
            weights=self._runtime_weights(),
            threads=threads,
            package_paths=list(package_paths),
            profile=profile,
            optimize=optimize,
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
