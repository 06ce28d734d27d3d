"""``opgraph.ir``: IR extraction from PyTorch models through torch.export into
the runtime's graph, and a Python executor for it.

    ir = extract_ir(model, (x,))
    (y,) = IRExecutor(ir).run(x)        # PyTorch, node by node
    ir.save("model.opg")                # runs with `opgraph run` or opgraph.Session
    print(verify(model, (x,)))          # each path's error against the model
"""

from . import ops, registry
from .conversion import NodeInfo, OpNode, TensorMeta
from .convert import extract_ir
from .executor import IRExecutor
from .export import export_model
from .ir import IR, ValueInfo
from .load import load
from .names import runtime_name
from .verify import VerifyReport, verify

__all__ = [
    "IR",
    "IRExecutor",
    "NodeInfo",
    "OpNode",
    "TensorMeta",
    "ValueInfo",
    "VerifyReport",
    "export_model",
    "extract_ir",
    "load",
    "ops",
    "registry",
    "runtime_name",
    "verify",
]
