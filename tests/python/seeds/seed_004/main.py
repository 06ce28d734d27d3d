"""Seed 004 (the extension guide): its "how to use" lines and its debugging
tips (7.1-7.3) as the seed writes them, imports changed (torch_ir ->
opgraph.ir). The seed does not show the model that calls custom.fused_gate;
the lines marked "not the seed's" define that op with torch.library, as its
user would, and a model calling it, then extract and run the IR."""
import torch

# ---- not the seed's: the custom op and a model that calls it -----------------
torch.library.define("custom::fused_gate", "(Tensor gate, Tensor value) -> Tensor")


@torch.library.impl("custom::fused_gate", "CompositeExplicitAutograd")
def _fused_gate(gate, value):
    return torch.sigmoid(gate) * value


@torch.library.register_fake("custom::fused_gate")
def _fused_gate_shape(gate, value):
    return torch.empty_like(value)


class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 16)

    def forward(self, x):
        gate, value = self.proj(x).chunk(2, dim=-1)
        return torch.ops.custom.fused_gate(gate, value)


model, inputs = Gated().eval(), (torch.randn(4, 8),)

# ---- the seed's "how to use" ---------------------------------------------------
# 커스텀 연산자 모듈 임포트 (등록됨)
import my_custom_ops

from opgraph.ir import extract_ir

# ---- not the seed's: extract, run, compare -------------------------------------
ir = extract_ir(model, inputs)
print("op types:", sorted({node.op_type for node in ir.nodes}))
from opgraph.ir import IRExecutor  # noqa: E402

(result,) = IRExecutor(ir).run(*inputs)
print("IR matches the model:", torch.allclose(result, model(*inputs), atol=1e-6))

# ---- the seed's 7.1: the FX graph ----------------------------------------------
from opgraph.ir import export_model

exported = export_model(model, inputs, strict=False)

# FX 그래프 출력
print(exported.graph_module.graph)

# 개별 노드 확인
for node in exported.graph_module.graph.nodes:
    if node.op == "call_function":
        print(f"Node: {node.name}")
        print(f"  Target: {node.target}")
        print(f"  Args: {node.args}")

# ---- the seed's 7.2: what is registered ----------------------------------------
from opgraph.ir.ops.registry import get_conversion_fn, get_execution_fn

op_type = "my_custom_op"
print(f"Conversion: {get_conversion_fn(op_type)}")
print(f"Execution: {get_execution_fn(op_type)}")
op_type = "custom.fused_gate"
print(f"Conversion: {get_conversion_fn(op_type)}")
print(f"Execution: {get_execution_fn(op_type)}")

# ---- the seed's 7.3: an ATen op's schema ---------------------------------------
import torch

fn = torch.ops.aten.conv2d.default
for arg in fn._schema.arguments:
    print(f"  {arg.name}: {arg.type} (kwarg_only={arg.kwarg_only})")
