"""Models extracted with opgraph.ir, saved as .opg and run on the C++ Session
and the IRExecutor, each within 1e-4 of PyTorch."""

import ir_models
import numpy as np
import pytest
import torch

import opgraph
from opgraph import ir
from opgraph.ir.ops import get_execution_fn

TOLERANCE = dict(rtol=1e-4, atol=1e-4)
MODELS = ["mlp", "cnn", "resnet18", "transformer_encoder", "gated_mlp", "bert", "gpt2", "vit"]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """name -> (model, inputs, IR, path of its .opg), extracted once per module."""
    folder = tmp_path_factory.mktemp("ir_models")
    cache = {}

    def get(name):
        if name not in cache:
            model, inputs = getattr(ir_models, name)()
            model_ir = ir.extract_ir(model, inputs)
            model_ir.save(folder / f"{name}.opg")
            cache[name] = model, inputs, model_ir, folder / f"{name}.opg"
        return cache[name]

    return get


def expected_outputs(model, inputs):
    with torch.no_grad():
        output = model(*inputs)
    return [output] if isinstance(output, torch.Tensor) else list(output)


@pytest.mark.parametrize("name", MODELS)
def test_the_ir_executor_matches_pytorch(extracted, name):
    model, inputs, model_ir, _ = extracted(name)
    actual = ir.IRExecutor(model_ir).run(*inputs)
    for a, e in zip(actual, expected_outputs(model, inputs), strict=True):
        torch.testing.assert_close(a, e, **TOLERANCE)


@pytest.mark.parametrize("name", MODELS)
def test_the_saved_model_runs_on_the_session(extracted, name):
    model, inputs, _, path = extracted(name)
    actual = opgraph.Session(str(path), threads=2).run(*inputs)
    for a, e in zip(actual, expected_outputs(model, inputs), strict=True):
        np.testing.assert_allclose(a, e.numpy(), **TOLERANCE)


@pytest.mark.parametrize("name", ["mlp", "cnn", "gated_mlp"])
def test_one_opg_with_a_symbolic_batch_runs_at_batch_1_and_17(tmp_path, name):
    model, inputs = getattr(ir_models, name)(batch=3)
    model_ir = ir.extract_ir(model, inputs, dynamic_shapes=({0: torch.export.Dim("batch")},))
    model_ir.save(tmp_path / "model.opg")
    session = opgraph.Session(str(tmp_path / "model.opg"))
    assert session.inputs[0].shape[0] == "s0"
    for batch in (1, 17):
        x = torch.randn(batch, *inputs[0].shape[1:])
        (actual,) = session.run(x)
        (expected,) = expected_outputs(model, (x,))
        assert actual.shape[0] == batch
        np.testing.assert_allclose(actual, expected.numpy(), **TOLERANCE)


def test_the_registered_conversion_and_executor_of_fused_gate_are_used():
    model, inputs = ir_models.gated_mlp()  # puts examples/fused_gate on sys.path
    import my_custom_ops

    model_ir = ir.extract_ir(model, inputs)
    (gate,) = [n for n in model_ir.nodes if "fused_gate" in n.op_type]
    assert gate.op_type == "custom::fused_gate"  # the registered conversion's op, as the graph names it
    assert get_execution_fn(gate.op_type) is my_custom_ops.execute_fused_gate
    assert model_ir.to_graph().packages == ["fused_gate"]
    report = ir.verify(model, inputs, ir=model_ir)
    assert report.ok, str(report)
