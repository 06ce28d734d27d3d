"""``CustomOpLibrary``: an op package's ops as PyTorch custom ops."""

from .. import Error
from ..package import load_package
from .registration import register_torch_op


class CustomOpLibrary:
    """Every op of an op package, registered with torch.library.

    ``ops = CustomOpLibrary(path)`` loads the package at ``path`` (a
    LoadedLibrary, a built library, a CMake project folder or a folder of C++
    sources: see opgraph.load_package) and registers each op; ``ops.conv1d`` is then a :class:`CustomOp` and the
    same op is ``torch.ops.<namespace>.conv1d``. ``kernels="cpp"`` registers
    C++ kernels instead of Python ones (see cpp_kernels.py); an op keeps the
    kernels of its first registration."""

    def __init__(self, source, kernels="python"):
        library = load_package(source, "CustomOpLibrary")
        self.namespace = library.namespace
        self.path = library.path
        self._ops = {name.split("::", 1)[1]: CustomOp(name, kernels) for name in library.ops}

    @property
    def ops(self):
        """Qualified names of the package's ops."""
        return [op.name for op in self._ops.values()]

    def __getattr__(self, name):
        ops = self.__dict__.get("_ops", {})
        if name not in ops:
            raise AttributeError(
                f"op package '{self.namespace}' has no op '{name}'; it has: {', '.join(ops) or '(none)'}"
            )
        return ops[name]

    def __dir__(self):
        return [*super().__dir__(), *self._ops]

    def __repr__(self):
        return f"CustomOpLibrary(namespace='{self.namespace}', path='{self.path}', ops={list(self._ops)})"


class CustomOp:
    """One op. Calling it is the functional form (new outputs):
    ``ops.conv1d(x, kernel, input_size=n, conv_size=k)``. Indexing it with the
    attributes gives the destination-passing form:
    ``ops.conv1d[{"input_size": n, "conv_size": k}](output, x, kernel)``."""

    def __init__(self, name: str, kernels: str = "python"):
        registered = register_torch_op(name, kernels)
        self.name = name
        self.signature = registered.signature
        #: torch.ops.<ns>.<op>.default and .out
        self.functional = registered.functional
        self.out = registered.out

    def __call__(self, *args, **kwargs):
        return self.functional(*args, **kwargs)

    def __getitem__(self, attributes) -> "BoundOp":
        return BoundOp(self, attributes)

    def __repr__(self):
        return f"CustomOp({self.signature.text})"


class BoundOp:
    """An op with its attributes fixed, called destination-passing: the
    outputs first, then the inputs, ``bound(out, *inputs)``; the outputs are
    written and returned. Works eagerly and under torch.compile."""

    def __init__(self, op: CustomOp, attributes):
        if not isinstance(attributes, dict):
            raise Error(f"{op.name}: index the op with a dict of attributes, got {type(attributes).__name__}")
        names = [a.name for a in op.signature.arguments if not a.is_tensor]
        unknown = [key for key in attributes if key not in names]
        if unknown:
            raise Error(
                f"{op.name}: unknown attribute {', '.join(map(repr, unknown))}; "
                f"its attributes are: {', '.join(names) or '(none)'}"
            )
        self.op = op
        self.attributes = dict(attributes)
        self._out_names = op.signature.out_names()
        self._input_names = [a.name for a in op.signature.arguments if a.is_tensor]

    def __call__(self, *tensors):
        outputs, inputs = tensors[: len(self._out_names)], tensors[len(self._out_names) :]
        if len(outputs) != len(self._out_names) or len(inputs) > len(self._input_names):
            raise Error(
                f"{self.op.name}: expected the outputs ({', '.join(self._out_names)}) then the inputs "
                f"({', '.join(self._input_names)}), got {len(tensors)} tensors"
            )
        self.op.out(**dict(zip(self._input_names, inputs)), **self.attributes, **dict(zip(self._out_names, outputs)))
        return outputs[0] if len(outputs) == 1 else outputs

    def __repr__(self):
        return f"{self.op.name}[{self.attributes}]"
