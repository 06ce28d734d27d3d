"""``extract_ir``: a PyTorch model -> ``IR``, through torch.export.

Every ATen op converts with ``_default_conversion``; a function registered
with ``register_op`` replaces it for its op type. Symbolic sizes from
``dynamic_shapes`` become the graph's symbolic dimensions s0, s1, ... in the
order the inputs first use them."""

import operator

import sympy
import torch
from torch.export.graph_signature import OutputKind
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from .. import _C, arguments, dtypes
from .._C import Error, ValueInfo
from . import attributes, promote, symbolic
from .conversion import NodeInfo, OpNode, add_to_graph, flat_inputs
from .decompose import functional_program
from .export import export_model
from .ir import IR
from .mutations import mutated_values
from .names import runtime_name
from .packages import packages_of
from .registry import get_conversion_fn


def extract_ir(model, inputs, *, strict=False, dynamic_shapes=None, decompose=None, inputs_as_state=False):
    """The IR of ``model`` called on ``inputs``: exported, made functional and
    decomposed as ``decompose`` says (see ``decompose.mode_of``): by default
    into Core ATen wherever the runtime has no kernel for an op. A buffer the
    model updates in place becomes state; with ``inputs_as_state``, so does
    an input it updates in place (a KV cache given as inputs, whose dynamic
    dimensions then size each state object), which the graph no longer takes;
    without, such an input stays an input, and the update is not kept."""
    exported = export_model(model, inputs, strict=strict, dynamic_shapes=dynamic_shapes)
    exported = functional_program(exported, decompose)
    return convert_program(exported, name=type(model).__name__, inputs_as_state=inputs_as_state)


def _default_conversion(node_info: NodeInfo) -> OpNode:
    return OpNode(
        name=node_info.name,
        op_type=runtime_name(node_info.target),
        inputs=node_info.input_metas,
        outputs=node_info.output_metas,
        attrs=node_info.attrs,
        source=node_info.source,
    )


class _Converter:
    def __init__(self, exported, name, inputs_as_state):
        self.exported = exported
        self.inputs_as_state = inputs_as_state
        self.graph = _C.Graph(name)
        self.symbols = {}  # torch's sympy symbol -> our symbol
        self.metas = {}  # FX node name -> ValueInfo
        self.values = {}  # value name -> ValueInfo: every value of the graph
        self.weights = {}

    @property
    def name(self):
        return self.graph.name

    def dim(self, size):
        if isinstance(size, int):
            return size
        expr = size.node.expr
        if isinstance(expr, sympy.Integer):
            return int(expr)
        return str(self.in_graph_symbols(expr))

    def in_graph_symbols(self, expr):
        """A sympy size of torch's in the graph's symbols: s0, s1, ... for the inputs' sizes."""
        for symbol in sorted(expr.free_symbols, key=str):
            if symbol not in self.symbols:
                # A size only a run finds (torch's unbacked u0: the row count of a nonzero) is named apart
                # from the inputs' sizes, u0, u1, ... in the order values first use them.
                prefix = "u" if free_unbacked_symbols(symbol) else "s"
                number = sum(str(ours).startswith(prefix) for ours in self.symbols.values())
                self.symbols[symbol] = sympy.Symbol(f"{prefix}{number}")
        return expr.xreplace(self.symbols)

    def meta(self, name, value, what):
        if not isinstance(value, torch.Tensor):
            raise Error(
                f"opgraph.ir: {what} '{name}' is a {type(value).__name__}, not a tensor; the IR holds "
                f"tensor values only"
            )
        dtype = dtypes.name_of(value.dtype, f"opgraph.ir: {what}: {name}")
        return ValueInfo(name, dtype, [self.dim(s) for s in value.shape])

    def run(self):
        signature = self.exported.graph_signature
        state = {**self.exported.state_dict, **self.exported.constants}
        lifted = {
            **signature.inputs_to_parameters,
            **signature.inputs_to_buffers,
            **signature.inputs_to_lifted_tensor_constants,
        }
        updates = mutated_values(self.exported, self.inputs_as_state)  # buffer or input -> its value after a call
        node_names = {node.name for node in self.exported.graph.nodes}
        for node in self.exported.graph.nodes:
            if node.op == "placeholder":
                # A weight is named as in the model's state_dict ("conv.weight"), unless an FX node has that name.
                weight = lifted.get(node.name)
                name = weight if weight is not None and weight not in node_names else node.name
                meta = self.meta(name, node.meta["val"], "input")
                self.metas[node.name] = meta
                if weight is None and node.name in updates:
                    self.add_state(meta, None, updates[node.name])
                elif weight is None:
                    self.graph.add_input(meta.name, meta.dtype, meta.shape)
                    self.values[meta.name] = meta
                elif weight in updates:
                    self.add_state(meta, state[weight], updates[weight])
                elif node.users:
                    self.add_weight(meta, state[weight])
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                user_outputs = [spec.kind == OutputKind.USER_OUTPUT for spec in signature.output_specs]
                for value, returned in zip(node.args[0], user_outputs):
                    if returned:
                        self.graph.add_output(self.output_name(value))
        for state_info in self.graph.states:  # each update was named after the FX node that computes it
            computed = self.metas.get(state_info.update)
            if computed is None or computed.name != state_info.update:
                raise Error(
                    f"opgraph.ir: {self.name}: state '{state_info.value.name}' is updated to node "
                    f"'{state_info.update}', which the graph does not compute under that name"
                )
        self.graph.packages = packages_of(self.graph)
        return IR(self.graph, self.weights, self.values)

    def add_weight(self, meta, tensor):
        self.graph.add_constant(meta.name, meta.dtype, meta.shape)
        self.values[meta.name] = meta
        self.weights[meta.name] = tensor

    def add_state(self, meta, tensor, update):
        """A buffer or input the model updates in place: state that starts from the buffer's value (zeros,
        and an input, need no constant)."""
        initial = ""
        if tensor is not None and torch.count_nonzero(tensor):
            initial = f"{meta.name}.initial"
            self.add_weight(ValueInfo(initial, meta.dtype, meta.shape), tensor)
        self.graph.add_state(meta.name, meta.dtype, meta.shape, initial=initial, update=update)
        self.values[meta.name] = meta

    def output_name(self, value):
        if not isinstance(value, torch.fx.Node) or value.name not in self.metas:
            raise Error(
                f"opgraph.ir: {self.name} returns {value!r}; the IR's outputs are tensors computed by the graph"
            )
        return self.metas[value.name].name

    def call(self, node):
        if node.target is operator.getitem:
            return  # its value was named when the node it selects from was converted
        if isinstance(node.target, torch._ops.OpOverload) and not node.target._schema.returns:
            return  # an export-time check (aten._assert_tensor_metadata, ...): nothing to compute
        if symbolic.computes_a_size(node):
            return  # read where an op's argument uses it (symbolic.resolve)
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            raise Error(
                f"opgraph.ir: {self.name}: node '{node.name}' calls the higher-order op "
                f"{node.target.name()}, which the IR cannot hold: control flow (cond, while_loop, map, scan) "
                f"has no graph form here; compute both branches and select with torch.where, or unroll the "
                f"loop{symbolic.source_line(node)}"
            )
        if not isinstance(node.target, torch._ops.OpOverload):
            raise Error(
                f"opgraph.ir: {self.name}: node '{node.name}' calls {node.target}, which is not an op "
                f"the IR can hold{symbolic.source_line(node)}"
            )
        if not isinstance(node.meta["val"], (torch.Tensor, list, tuple)):
            raise Error(
                f"opgraph.ir: {self.name}: node '{node.name}' ({node.target}) computes a "
                f"{type(node.meta['val']).__name__}, not a tensor, which the graph cannot hold"
                f"{symbolic.source_line(node)}"
            )
        node_info = self.node_info(node)
        convert = get_conversion_fn(node.target) or _default_conversion
        op_node = convert(node_info)
        if not isinstance(op_node, OpNode):
            raise Error(
                f"opgraph.ir: {self.name}: the conversion function of {node.target} returned "
                f"{type(op_node).__name__}, expected an OpNode"
            )
        try:
            add_to_graph(self.graph, op_node, node_info)
        except Error as e:
            message = str(e).removeprefix("opgraph.ir: ")
            raise Error(f"opgraph.ir: {self.name}: {message}{symbolic.source_line(node)}") from None
        self.values.update((meta.name, meta) for meta in op_node.outputs)

    def node_info(self, node):
        op_type = str(node.target)
        schema = arguments.of_torch_op(node.target)
        values = _bind(op_type, schema, node.args, node.kwargs)
        promoted = promote.operand_dtypes(node, values)
        tensor_inputs, attrs = [], {}
        for argument in schema:
            value, dtype = values[argument.name], promoted.get(argument.name)
            if not argument.is_tensor:
                if symbolic.is_symbolic(value):
                    value = symbolic.resolve(node, argument, value, self.name, self.in_graph_symbols)
                attrs[argument.name] = attributes.to_ir(op_type, argument, value)
            elif argument.is_list:
                tensor_inputs.append(
                    [None if v is None else self.tensor_input(node, argument, v, dtype) for v in value]
                )
            else:
                tensor_inputs.append(None if value is None else self.tensor_input(node, argument, value, dtype))
        return NodeInfo(
            node.name,
            node.op,
            node.target,
            node.args,
            node.kwargs,
            flat_inputs(tensor_inputs),
            self.output_metas(node),
            attrs,
            tensor_inputs,
            symbolic.source(node),
        )

    def size_tensor(self, node, argument, value):
        """A tensor's size that ``node`` takes as a tensor (a KV cache's length grows by the new tokens'
        count): the 0-d int64 tensor aten::sym_size.int gives, made once per size. Other expressions of
        sizes have no tensor form in the graph."""
        if value.target != torch.ops.aten.sym_size.int:
            raise Error(
                f"opgraph.ir: {self.name}: node '{node.name}' ({node.target}) gives the tensor argument "
                f"'{argument.name}' a number computed from symbolic sizes ({value.meta['val']}), which the "
                f"graph cannot hold; compute it from a tensor (x.new_tensor, torch.arange) or export with "
                f"static shapes{symbolic.source_line(node)}"
            )
        if value.name not in self.metas:
            source, dim = value.args
            self.graph.add_node(
                "aten::sym_size.int", [self.metas[source.name].name], [value.name], name=value.name, dim=dim
            )
            self.metas[value.name] = self.values[value.name] = ValueInfo(value.name, "int64", [])
        return value

    def tensor_input(self, node, argument, value, dtype=None):
        """The meta of a tensor argument's value; a Python number becomes a 0-d constant. ``dtype``, where
        given, is the one ATen's type promotion computes the op in: a number is made in it, and a tensor of
        another dtype is converted to it first."""
        if symbolic.is_symbolic(value):
            value = self.size_tensor(node, argument, value)
        if isinstance(value, torch.fx.Node):
            meta = self.metas[value.name]
            if dtype is None:
                return meta
            name = dtypes.name_of(dtype, f"opgraph.ir: {node.target}: {argument.name} promoted")
            return meta if meta.dtype == name else self.converted(node, meta, name)
        if isinstance(value, (bool, int, float, complex)):
            name = f"{node.name}_{argument.name}"
            tensor = promote.number(value, dtype)
            meta = self.meta(name, tensor, "constant")
            self.add_weight(meta, tensor)
            return meta
        raise Error(f"opgraph.ir: {node.target}: argument '{argument.name}' expects a tensor, got {value!r}")

    def converted(self, node, meta, dtype):
        """The meta of a new _to_copy node converting ``meta``'s value to ``dtype``, before ``node``."""
        name = f"{node.name}_{meta.name}_as_{dtype}"
        if name not in self.metas:
            self.metas[name] = self.values[name] = ValueInfo(name, dtype, meta.shape)
            self.graph.add_node(
                "aten::_to_copy", [meta.name], [name], name=name, source=symbolic.source(node), dtype=dtype
            )
        return self.metas[name]

    def output_metas(self, node):
        """One meta per output; a tuple's items take the names of the getitem nodes that read them."""
        value = node.meta["val"]
        if isinstance(value, torch.Tensor):
            meta = self.meta(node.name, value, str(node.target))
            self.metas[node.name] = meta
            return [meta]
        readers = {user.args[1]: user.name for user in node.users if user.target is operator.getitem}
        metas = []
        for index, item in enumerate(value):
            meta = self.meta(readers.get(index, f"{node.name}_{index}"), item, str(node.target))
            self.metas[meta.name] = meta
            metas.append(meta)
        return metas


def _bind(op_type, schema, args, kwargs):
    """Each schema argument's value: given positionally, by keyword, or its default."""
    values = {}
    for index, argument in enumerate(schema):
        if index < len(args) and not argument.kwarg_only:
            values[argument.name] = args[index]
        elif argument.name in kwargs:
            values[argument.name] = kwargs[argument.name]
        elif argument.has_default or argument.optional:
            values[argument.name] = argument.default
        else:
            raise Error(f"opgraph.ir: {op_type}: no value for argument '{argument.name}'")
    return values


def convert_program(exported, name="model", inputs_as_state=False):
    """The IR of a ``torch.export.ExportedProgram``; ``inputs_as_state`` as extract_ir's."""
    return _Converter(exported, name, inputs_as_state).run()
