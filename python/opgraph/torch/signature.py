"""An opgraph op's schema seen from PyTorch: the schemas it registers under
(the functional op and its ``out`` variant) and the split of a dispatcher
call into the tensor inputs and attributes that ``opgraph`` takes."""

import torch

from .. import arguments, op_schema

_MISSING = object()


def _attr_value(value):
    # opgraph carries devices, layouts and memory formats as their names.
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return str(value).removeprefix("torch.")
    return value


class OpSignature:
    """The arguments of one op: which are tensors, which are attributes, and
    how PyTorch passes them (positionally, or by keyword after ``*``). Plain
    Python data: PyTorch keeps the kernels that hold it until the process ends."""

    def __init__(self, name: str):
        schema = op_schema(name)
        self.name = name
        self.namespace = schema.namespace
        self.op_name = schema.name
        self.overload = schema.overload
        self.qualified_name = schema.qualified_name
        self.text = str(schema)
        self.arguments = arguments.of_schema(schema)
        self.return_names = [r.name for r in schema.returns]
        self.has_tensor_lists = any(a.is_tensor_list for a in self.arguments)
        self.has_kwarg_only_tensors = any(a.is_tensor and a.kwarg_only for a in self.arguments)
        self.num_positional = sum(not a.kwarg_only for a in self.arguments)

    # -- calls -------------------------------------------------------------

    def split(self, args, kwargs):
        """Dispatcher (args, kwargs) -> (tensor inputs in schema order, None for
        an omitted ``Tensor?``; attributes by name, omitted ones left to their
        defaults)."""
        tensors, attrs = [], {}
        for a in self.arguments:
            given = not a.kwarg_only and a.position < len(args)
            value = args[a.position] if given else kwargs.get(a.name, _MISSING)
            if a.is_tensor:
                tensors.append(None if value is _MISSING else value)
            elif value is not _MISSING:
                attrs[a.name] = _attr_value(value)
        return tensors, attrs

    def positional_tensor_indices(self):
        """Index among the positional arguments of each tensor argument."""
        return [a.position for a in self.arguments if a.is_tensor and not a.kwarg_only]

    # -- schemas -----------------------------------------------------------

    @property
    def overload_name(self) -> str:
        return self.overload or "default"

    def torch_schema(self) -> str:
        """The schema text torch.library.define takes: opgraph's, less the namespace."""
        return self.text.split("::", 1)[1]

    def out_names(self):
        """The out variant's keyword-only output arguments: ``out`` for one
        output, else the returns' own names (``out0``, ``out1``... if unnamed)."""
        names = self.return_names
        if len(names) == 1:
            return ["out"]
        taken = {a.name for a in self.arguments}
        if all(names) and len(set(names)) == len(names) and not taken & set(names):
            return names
        return [f"out{i}" for i in range(len(names))]

    @property
    def out_overload_name(self) -> str:
        return f"{self.overload}_out" if self.overload else "out"

    def torch_out_schema(self) -> str:
        """``name.out(<inputs>, *, <attributes>, Tensor(a!) out) -> ()``:
        destination-passing, in the form PyTorch asks of a custom op that
        mutates its arguments (it returns none of them)."""
        positional = [a.text for a in self.arguments if not a.kwarg_only]
        keyword = [a.text for a in self.arguments if a.kwarg_only]
        aliases = [chr(ord("a") + i) for i in range(len(self.return_names))]
        keyword += [f"Tensor({alias}!) {name}" for alias, name in zip(aliases, self.out_names())]
        return f"{self.op_name}.{self.out_overload_name}({', '.join(positional + ['*'] + keyword)}) -> ()"
