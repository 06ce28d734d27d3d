"""Buffers and inputs a model updates in place (a KV cache, a recurrent
carry, running statistics), which the graph keeps as state
(``Graph.add_state``).

``run_decompositions`` functionalizes an in-place update of a buffer or an
input into a new value that the program returns as a mutation; each such
buffer becomes a state whose update is that value, and so does such an
input where extract_ir is asked to (``inputs_as_state``), as OpenVINO's
stateful models turn a KV cache's inputs and outputs into state: the value
persists from run to run in the Session's state object instead of being
given by the caller, and its symbolic sizes (a batch, say) are chosen per
state object. Some models hold one tensor
under two names (transformers' static cache registers its tensors as
buffers, while its layers' attention reads the same tensors as attributes,
which torch.export lifts as constants): two inputs aliasing one tensor that
the graph writes cannot be functionalized, so each constant that aliases a
buffer is read as that buffer first."""

from torch.export.graph_signature import InputKind, OutputKind


def _storage_key(tensor):
    return (
        tensor.untyped_storage().data_ptr(),
        tensor.storage_offset(),
        tuple(tensor.shape),
        tuple(tensor.stride()),
        tensor.dtype,
    )


def read_aliases_as_buffers(exported):
    """``exported`` with each lifted constant that is a buffer's tensor replaced by that buffer (in place)."""
    signature = exported.graph_signature
    tensors = {**exported.state_dict, **exported.constants}
    placeholders = {node.name: node for node in exported.graph.nodes if node.op == "placeholder"}
    buffers = {}
    for spec in signature.input_specs:
        if spec.kind == InputKind.BUFFER:
            buffers.setdefault(_storage_key(tensors[spec.target]), placeholders[spec.arg.name])
    kept = []
    for spec in signature.input_specs:
        buffer = buffers.get(_storage_key(tensors[spec.target])) if spec.kind == InputKind.CONSTANT_TENSOR else None
        if buffer is None:
            kept.append(spec)
            continue
        node = placeholders[spec.arg.name]
        node.replace_all_uses_with(buffer)
        exported.graph.erase_node(node)
        exported.constants.pop(spec.target, None)
    if len(kept) != len(signature.input_specs):
        signature.input_specs[:] = kept
        exported.graph_module.recompile()
    return exported


def mutated_values(exported, inputs=False):
    """Buffer (and, with ``inputs``, input) name -> the FX node whose value it holds after a call, for a
    functional program."""
    kinds = (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION) if inputs else (OutputKind.BUFFER_MUTATION,)
    return {spec.target: spec.arg.name for spec in exported.graph_signature.output_specs if spec.kind in kinds}
