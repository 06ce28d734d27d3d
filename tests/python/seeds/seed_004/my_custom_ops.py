"""Seed 004 (the extension guide), section 5, "a complete example: a non-ATen
custom op", as the seed writes it; imports changed (torch_ir -> opgraph.ir)."""
# my_custom_ops.py
import torch
from typing import List, Dict, Any

from opgraph.ir.ops import register_op, register_executor
from opgraph.ir import OpNode
from opgraph.ir.analyzer import NodeInfo


@register_op("custom.fused_gate")
def convert_fused_gate(node_info: NodeInfo) -> OpNode:
    return OpNode(
        name=node_info.name,
        op_type="custom.fused_gate",
        inputs=node_info.input_metas,
        outputs=node_info.output_metas,
        attrs=node_info.attrs,
    )


@register_executor("custom.fused_gate")
def execute_fused_gate(
    inputs: List[torch.Tensor],
    attrs: Dict[str, Any]
) -> List[torch.Tensor]:
    """Fused gating: sigmoid(gate) * value."""
    gate = inputs[0]
    value = inputs[1]
    return [torch.sigmoid(gate) * value]
