"""``IRExecutor``: runs an IR in Python, node by node. A node runs its
registered execution function, else the op itself through ``torch.ops``
(the ATen fallback), called with the arguments rebuilt from its schema."""

import torch

from .. import arguments
from .._C import Error
from . import attributes, symbolic
from .registry import get_execution_fn


class IRExecutor:
    def __init__(self, ir):
        self.ir = ir

    def run(self, *inputs):
        """The IR's outputs (a list of tensors) for ``inputs``, given in the IR's input order."""
        values = self.values(*inputs)
        return [values[meta.name] for meta in self.ir.outputs]

    def values(self, *inputs):
        """Every value of a run (inputs, weights, each node's outputs) by name."""
        if len(inputs) != len(self.ir.inputs):
            names = ", ".join(m.name for m in self.ir.inputs)
            raise Error(
                f"IRExecutor.run: {self.ir.name} takes {len(self.ir.inputs)} inputs ({names}), got {len(inputs)}"
            )
        values = dict(self.ir.weights)
        values.update({meta.name: torch.as_tensor(x) for meta, x in zip(self.ir.inputs, inputs)})
        dims = symbolic.bind(self.ir.inputs, [values[meta.name] for meta in self.ir.inputs])
        for node in self.ir.nodes:
            outputs = self.run_node(node, [values[meta.name] for meta in node.inputs], dims)
            if len(outputs) != len(node.outputs):
                raise Error(
                    f"IRExecutor: node '{node.name}' ({node.op_type}) gave {len(outputs)} outputs, "
                    f"the IR expects {len(node.outputs)}"
                )
            values.update({meta.name: value for meta, value in zip(node.outputs, outputs)})
        return values

    def run_node(self, node, inputs, dims=None):
        """``node``'s outputs for ``inputs``; ``dims`` sizes the symbols its attributes may use."""
        execute = get_execution_fn(node.op_type)
        if execute is None:
            return _aten_fallback(node, inputs, dims or {})
        attrs = node.attrs
        if dims:
            by_name = {argument.name: argument for argument in arguments.of_ir_op(node.op_type)}
            attrs = {
                name: symbolic.evaluate(by_name[name], value, dims) if name in by_name else value
                for name, value in attrs.items()
            }
        return list(execute(inputs, attrs))


def _aten_fallback(node, inputs, dims):
    op = arguments.torch_op(node.op_type)
    if op is None:
        raise Error(
            f"IRExecutor: no way to run node '{node.name}': op '{node.op_type}' is not in torch.ops and has "
            f"no execution function; register one with @register_executor('{node.op_type}') from "
            f"opgraph.ir.ops"
        )
    schema = arguments.of_torch_op(op)
    tensors = iter(node.tensor_inputs(schema, inputs))
    args, kwargs = [], {}
    for argument in schema:
        if argument.is_tensor:
            value = next(tensors)
        else:
            value = symbolic.evaluate(argument, node.attrs.get(argument.name, argument.default), dims)
            value = attributes.to_torch(argument, value)
        if argument.kwarg_only:
            kwargs[argument.name] = value
        else:
            args.append(value)
    result = op(*args, **kwargs)
    if isinstance(result, torch.Tensor):
        return [result]
    return [item for part in result for item in (part if isinstance(part, (list, tuple)) else [part])]
