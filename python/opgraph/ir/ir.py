"""The IR: the runtime's graph (``opgraph.Graph``: inputs, constants, nodes in
execution order, one input per tensor argument of each op), the weights as
torch tensors by constant name, and the dtype and shape of every value."""

import copy

import torch

from .. import _C
from .._C import ValueInfo


class IR:
    def __init__(self, graph: _C.Graph, weights: dict[str, torch.Tensor], values: dict[str, ValueInfo] | None = None):
        """``values`` defaults to the runtime's shape inference, which needs every op's package loaded."""
        self.graph = graph
        self.weights = weights
        self.values = graph.infer_shapes() if values is None else values

    @property
    def name(self) -> str:
        return self.graph.name

    @property
    def inputs(self) -> list[ValueInfo]:
        return self.graph.inputs

    @property
    def outputs(self) -> list[ValueInfo]:
        return [self.values[name] for name in self.graph.outputs]

    @property
    def nodes(self) -> list[_C.Node]:
        """The graph's nodes in execution order (``op_type`` as the runtime names it: "aten::conv2d")."""
        return self.graph.nodes

    def to_graph(self) -> _C.Graph:
        """A copy of the runtime's ``opgraph.Graph`` of this IR."""
        return copy.copy(self.graph)

    def save(self, path):
        """Writes an .opg file: the graph, with the weights as its safetensors tensors."""
        _C.save_opg(path, self.graph, self._runtime_weights())

    def to_session(self, threads=None, package_paths=(), profile=False, optimize=True, precision="f32"):
        """An ``opgraph.Session`` running this IR on the C++ runtime (options as ``opgraph.Session``'s)."""
        return _C.Session(
            self.graph,
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
        lines = [f"IR {self.name}: inputs {', '.join(_value_str(m) for m in self.inputs)}"]
        for node in self.nodes:
            arguments = ", ".join(_input_str(entry) for entry in node.inputs)
            lines.append(f"  {', '.join(node.outputs)} = {node.op_type}({arguments})")
        lines.append(f"  outputs {', '.join(self.graph.outputs)}; {len(self.weights)} weights")
        return "\n".join(lines)


def _value_str(value):
    return f"{value.name}: {value.dtype}[{', '.join(map(str, value.shape))}]"


def _input_str(entry):
    if entry.is_list:
        return f"[{', '.join(name or 'None' for name in entry.values)}]"
    return "None" if entry.is_none else entry.values[0]
