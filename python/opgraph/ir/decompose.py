"""The functional, runtime-ready form of an ``ExportedProgram``.

torch.export's training IR holds in-place ops (``add_``, ``copy_``), higher-order
ops that set grad mode or autocast, and composite ops the runtime may not have.
``run_decompositions`` functionalizes the graph, inlines those higher-order ops
and decomposes what its table lists; the table here is torch's Core ATen table
minus every op the runtime has a kernel for, so an op is kept whole exactly when
a kernel (built in or from a loaded package) can run it, as ExecuTorch's
``to_edge`` keeps its preserve list. Adding a kernel removes its decomposition.
"""

import torch

from .. import _C
from .mutations import read_aliases_as_buffers
from .names import runtime_name
from .tensor_offsets import index_tensor_offsets

# How extract_ir's ``decompose`` argument chooses the table.
KEEP_SUPPORTED = "auto"  # decompose what the runtime cannot run (the default)
CORE_ATEN = "core"  # decompose everything into Core ATen (True)
FUNCTIONAL_ONLY = "none"  # functionalize, decompose nothing (False)


def runtime_ops():
    """Names of every op the runtime can run now, as ``aten::add.Tensor``."""
    return set(_C.list_ops())


def decomposition_table(mode=KEEP_SUPPORTED):
    """The table ``run_decompositions`` gets for ``mode``."""
    if mode == FUNCTIONAL_ONLY:
        return {}
    table = torch.export.default_decompositions()
    if mode == CORE_ATEN:
        return table
    kept = runtime_ops()
    for op in list(table.keys()):
        if _has_kernel(op, kept):
            del table[op]
    # Ops outside Core ATen that torch.export keeps whole (linalg_vector_norm,
    # _weight_norm_interface) but that torch can decompose: decomposed unless a
    # kernel runs them. Core ops are not taken from this table: some of its
    # entries lower them further, to prims the runtime has no name for.
    for op, decomposition in torch._decomp.decomposition_table.items():
        if (
            isinstance(op, torch._ops.OpOverload)
            and op.namespace == "aten"
            and torch.Tag.core not in op.tags
            and op not in table
            and not _has_kernel(op, kept)
        ):
            table[op] = decomposition
    return table


def _has_kernel(op, kept):
    return isinstance(op, torch._ops.OpOverload) and runtime_name(str(op)) in kept


def mode_of(decompose):
    """``extract_ir``'s ``decompose`` (None/"auto", True/"core", False/"none", or a table) as a table."""
    if isinstance(decompose, dict):
        return decompose
    modes = {
        None: KEEP_SUPPORTED,
        True: CORE_ATEN,
        False: FUNCTIONAL_ONLY,
        KEEP_SUPPORTED: KEEP_SUPPORTED,
        CORE_ATEN: CORE_ATEN,
        FUNCTIONAL_ONLY: FUNCTIONAL_ONLY,
    }
    if not isinstance(decompose, (bool, str, type(None))) or decompose not in modes:
        raise _C.Error(
            f"opgraph.ir.extract_ir: decompose: expected None, 'auto', True, 'core', False, 'none' or "
            f"a decomposition table (dict), got {decompose!r}"
        )
    return decomposition_table(modes[decompose])


def functional_program(exported, decompose=None):
    """``exported`` functionalized, with the decompositions ``decompose`` asks for; its buffers'
    in-place updates become buffer mutations (see mutations.py), and its slices at a start read from a
    tensor become indexing (see tensor_offsets.py)."""
    return index_tensor_offsets(read_aliases_as_buffers(exported).run_decompositions(mode_of(decompose)))
