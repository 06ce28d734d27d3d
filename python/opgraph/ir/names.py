"""How the graph names an op (``aten::conv2d``, ``aten::add.Tensor``,
``custom::fused_gate``), from torch's name for it: an overload
(``torch.ops.aten.conv2d.default``) or its text (``aten.conv2d.default``,
``custom.fused_gate``), as FX nodes and registrations give it."""

from .._C import Error


def runtime_name(op):
    """``aten.conv2d.default`` -> ``aten::conv2d``; ``aten.add.Tensor`` -> ``aten::add.Tensor``. A name
    already in the graph's form is kept (``aten::conv2d.default`` loses its default overload)."""
    text = str(op)
    namespace, separator, rest = text.partition("::")
    if not separator:
        namespace, _, rest = text.partition(".")
    name, _, overload = rest.partition(".")
    if not namespace or not name or "." in overload:
        raise Error(
            f"opgraph.ir: op '{text}' is not of the form namespace.name[.overload] (torch's spelling) or "
            f"namespace::name[.overload] (the graph's)"
        )
    return f"{namespace}::{name}" if overload in ("", "default") else f"{namespace}::{name}.{overload}"
