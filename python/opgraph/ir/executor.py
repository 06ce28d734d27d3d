"""``IRExecutor``: runs an IR in Python, node by node through its graph. A
node runs its registered execution function, else the op itself through
``torch.ops`` (the ATen fallback), called with its tensor arguments from the
node's inputs and the others from its attributes, by torch's schema."""

import torch

from .. import arguments, dtypes
from .._C import Error
from . import attributes, symbolic
from .registry import get_execution_fn


class IRExecutor:
    def __init__(self, ir):
        self.ir = ir

    def run(self, *inputs):
        """The IR's outputs (a list of tensors) for ``inputs``, given in the IR's input order."""
        values = self.values(*inputs)
        return [values[name] for name in self.ir.graph.outputs]

    def values(self, *inputs):
        """Every value of a run (inputs, weights, each node's outputs) by name."""
        graph = self.ir.graph
        if len(inputs) != len(graph.inputs):
            names = ", ".join(value.name for value in graph.inputs)
            raise Error(f"IRExecutor.run: {graph.name} takes {len(graph.inputs)} inputs ({names}), got {len(inputs)}")
        values = dict(self.ir.weights)
        for state in graph.states:  # a run starts from each state's initial value, as the model's call from its buffers
            shape = [int(d) for d in state.value.shape]
            initial = values.get(state.initial)
            values[state.value.name] = (
                initial if initial is not None else torch.zeros(shape, dtype=dtypes.to_torch(state.value.dtype))
            )
        values.update({value.name: torch.as_tensor(x) for value, x in zip(graph.inputs, inputs)})
        dims = symbolic.bind(graph.inputs, [values[value.name] for value in graph.inputs])
        for node in graph.nodes:
            outputs = self.run_node(node, values, dims)
            if len(outputs) != len(node.outputs):
                raise Error(
                    f"IRExecutor: node '{node.name}' ({node.op_type}) gave {len(outputs)} outputs, "
                    f"the graph expects {len(node.outputs)}"
                )
            values.update(zip(node.outputs, outputs))
        return values

    def run_node(self, node, values, dims=None):
        """``node``'s outputs, its inputs read from ``values`` (tensors by name); ``dims`` sizes the
        symbols its attributes may use."""
        execute = get_execution_fn(node.op_type)
        if execute is None:
            return _aten_fallback(node, values, dims or {})
        inputs = [values[name] for entry in node.inputs for name in entry.values if name]
        attrs = node.attrs
        if dims:
            by_name = {argument.name: argument for argument in arguments.of_ir_op(node.op_type)}
            attrs = {
                name: symbolic.evaluate(by_name[name], value, dims) if name in by_name else value
                for name, value in attrs.items()
            }
        return list(execute(inputs, attrs))


def _tensors(entry, values):
    """The tensor(s) a NodeInput names: one, a list (None for an absent element), or None."""
    if entry.is_list:
        return [values[name] if name else None for name in entry.values]
    return None if entry.is_none else values[entry.values[0]]


def _aten_fallback(node, values, dims):
    op = arguments.torch_op(node.op_type)
    if op is None:
        raise Error(
            f"IRExecutor: no way to run node '{node.name}': op '{node.op_type}' is not in torch.ops and has "
            f"no execution function; register one with @register_executor('{node.op_type}') from "
            f"opgraph.ir.ops"
        )
    schema = arguments.of_torch_op(op)
    tensor_arguments = [argument.name for argument in schema if argument.is_tensor]
    if len(tensor_arguments) != len(node.inputs):
        raise Error(
            f"IRExecutor: node '{node.name}' ({node.op_type}) has {len(node.inputs)} inputs, torch's schema "
            f"{len(tensor_arguments)} tensor arguments ({', '.join(tensor_arguments)})"
        )
    tensors = iter(node.inputs)
    attrs = node.attrs
    args, kwargs = [], {}
    for argument in schema:
        if argument.is_tensor:
            value = _tensors(next(tensors), values)
        else:
            value = symbolic.evaluate(argument, attrs.get(argument.name, argument.default), dims)
            value = attributes.to_torch(argument, value)
        if argument.kwarg_only:
            kwargs[argument.name] = value
        else:
            args.append(value)
    result = op(*args, **kwargs)
    if isinstance(result, torch.Tensor):
        return [result]
    return [item for part in result for item in (part if isinstance(part, (list, tuple)) else [part])]
