"""Slices that start where a tensor says: ``cache[:, start:start + T] = x`` or
``cache.narrow(2, input_pos[0].item(), T)`` (ExecuTorch's dynamic-shape KV
cache).

torch.export reads such a start with ``.item()`` into a size only a run knows
(torch's unbacked u0), which the functional program passes to
``slice``/``slice_scatter`` as an int; the graph's int attributes are sizes of
its inputs, not values of its tensors. Where the slice's length is such a size,
the slice is the same as indexing at the positions ``start + arange(length)``,
a tensor the graph computes: ``slice`` becomes ``index_select`` and
``slice_scatter`` becomes ``index_put``."""

import operator

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

aten = torch.ops.aten

# Size arithmetic torch.export writes on a value read with .item(), as the op on its tensor.
_TENSOR_ARITHMETIC = {operator.add: aten.add.Tensor, operator.sub: aten.sub.Tensor, operator.mul: aten.mul.Tensor}
_COMMUTATIVE = (operator.add, operator.mul)


def index_tensor_offsets(exported):
    """``exported`` (a functional program) with each slice at a start read from a tensor rewritten as
    indexing (in place); a slice this cannot rewrite is left for the converter to refuse."""
    graph = exported.graph
    fake_mode = torch._guards.detect_fake_mode([node.meta.get("val") for node in graph.nodes])
    positions = {}  # (start, end) -> its positions' node: a cache's read and its update share them
    rewritten = False
    for node in list(graph.nodes):
        if node.target not in _SLICES or not _starts_from_a_tensor(node):
            continue
        with graph.inserting_before(node), fake_mode:
            indexing = _indexing(graph, node, positions)
        if indexing is not None:
            _replace(exported.graph_signature, node, indexing)
            rewritten = True
    if rewritten:
        graph.eliminate_dead_code()
        exported.graph_module.recompile()
    return exported


_SLICES = (aten.slice.Tensor, aten.slice_scatter.default)


def _starts_from_a_tensor(node):
    start = _slice_arguments(node)[2]
    return isinstance(start, torch.fx.Node) and bool(free_unbacked_symbols(start.meta.get("val")))


def _slice_arguments(node):
    """(self, dim, start, end, step, src) of a slice or slice_scatter, by name."""
    schema = node.target._schema
    values = {argument.name: argument.default_value for argument in schema.arguments}
    values.update(zip((argument.name for argument in schema.arguments), node.args))
    values.update(node.kwargs)
    return values["self"], values["dim"], values["start"], values["end"], values["step"], values.get("src")


def _indexing(graph, node, positions):
    """The index_select or index_put node doing what the slice ``node`` does, or None."""
    source, dim, start, end, step, src = _slice_arguments(node)
    sliced = node.meta["val"] if src is None else src.meta["val"]
    dim %= sliced.dim()
    length = sliced.shape[dim]
    if step != 1 or free_unbacked_symbols(length):
        return None
    if (start, end) not in positions:
        offset = _as_tensor(graph, start)
        if offset is None:
            return None
        if isinstance(length, torch.SymInt):  # a size of the inputs: the slice's end less its start
            length = _call(graph, operator.sub, (end, start), length)
        steps = _call(graph, aten.arange.default, (length,), dtype=torch.int64)
        positions[start, end] = _call(graph, aten.add.Tensor, (steps, offset))
    if src is None:
        return _call(graph, aten.index_select.default, (source, dim, positions[start, end]))
    return _call(graph, aten.index_put.default, (source, [None] * dim + [positions[start, end]], src))


def _replace(signature, node, indexing):
    indexing.meta.update({key: value for key, value in node.meta.items() if key != "val"})
    node.replace_all_uses_with(indexing)
    for spec in signature.output_specs:  # a buffer's update is named by its node
        if getattr(spec.arg, "name", None) == node.name:
            spec.arg.name = indexing.name
    node.graph.erase_node(node)


def _as_tensor(graph, value):
    """A node whose tensor holds the int ``value`` (a .item() read, or arithmetic on one and on ints), or None."""
    if isinstance(value, int):
        return value
    if not isinstance(value, torch.fx.Node):
        return None
    if value.target is aten._local_scalar_dense.default:
        (tensor,) = value.args  # one element, of any rank: made 0-d so that positions stay 1-d
        return tensor if tensor.meta["val"].dim() == 0 else _call(graph, aten.view.default, (tensor, []))
    if value.target in _TENSOR_ARITHMETIC:
        left, right = (_as_tensor(graph, operand) for operand in value.args)
        if isinstance(left, int) and value.target in _COMMUTATIVE:
            left, right = right, left
        if not isinstance(left, torch.fx.Node) or right is None:
            return None
        return _call(graph, _TENSOR_ARITHMETIC[value.target], (left, right))
    return None


def _call(graph, target, args, value=None, **kwargs):
    """A new node calling ``target``; its meta value is ``value``, or what ``target`` computes on the
    arguments' meta values."""
    node = graph.call_function(target, args, kwargs)
    if value is None:
        metas = torch.fx.node.map_arg(args, lambda arg: arg.meta["val"])
        value = target(*metas, **kwargs)
    node.meta["val"] = value
    return node
