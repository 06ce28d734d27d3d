"""Registered ops in TorchScript: traced, scripted, saved and loaded again,
as in PyTorch's custom C++ operator tutorial (its compute(x, y) examples)."""

import subprocess
import sys
import textwrap

import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")


@pytest.fixture(autouse=True)
def _register(torch_examples):
    pass


def compute(x, y, z):
    x = torch.ops.my_ops.warp_perspective(x, torch.eye(3), height=8, width=8)
    return x.matmul(y) + torch.relu(z)


def test_traced_function_records_the_op():
    inputs = [torch.rand(4, 8), torch.randn(8, 5), torch.randn(8, 5)]
    traced = torch.jit.trace(compute, inputs)
    assert "my_ops::warp_perspective" in str(traced.graph)
    torch.testing.assert_close(traced(*inputs), compute(*inputs), rtol=0, atol=0)
    other = [torch.rand(4, 8), torch.randn(8, 5), torch.randn(8, 5)]
    torch.testing.assert_close(traced(*other), compute(*other), rtol=0, atol=0)


def compute_with_control_flow(x, y):
    if bool(x[0][0] == 42):
        z = 5
    else:
        z = 10
    x = torch.ops.my_ops.warp_perspective(x, torch.eye(3), height=8, width=8)
    return x.matmul(y) + z


def test_scripted_function_with_control_flow():
    scripted = torch.jit.script(compute_with_control_flow)
    assert "my_ops::warp_perspective" in str(scripted.graph)
    x, y = torch.rand(4, 8), torch.randn(8, 5)
    expected = torch.ops.my_ops.warp_perspective(x, torch.eye(3), height=8, width=8).matmul(y)
    torch.testing.assert_close(scripted(x, y), expected + 10)
    x[0][0] = 42
    expected = torch.ops.my_ops.warp_perspective(x, torch.eye(3), height=8, width=8).matmul(y)
    torch.testing.assert_close(scripted(x, y), expected + 5)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = torch.nn.Parameter(torch.tensor([0.25, 0.5, 0.25]))

    def forward(self, image, warp):
        rows = torch.ops.my_ops.warp_perspective(image, warp, height=6, width=16)
        smooth = [torch.ops.examples.conv1d(row, self.kernel, input_size=16, conv_size=3) for row in rows.unbind(0)]
        return torch.stack(smooth)


def test_scripted_module_saved_and_loaded_gives_identical_results(tmp_path, conv1d_package, warp_perspective_package):
    scripted = torch.jit.script(Model())
    image, warp = torch.rand(10, 12), torch.tensor([[1.2, 0.1, 0.5], [0.0, 0.9, 1.0], [0.001, 0.0, 1.0]])
    expected = scripted(image, warp)
    torch.testing.assert_close(expected, Model()(image, warp), rtol=0, atol=0)
    torch.jit.save(scripted, tmp_path / "model.pt")
    torch.testing.assert_close(torch.jit.load(tmp_path / "model.pt")(image, warp), expected, rtol=0, atol=0)
    torch.save({"image": image, "warp": warp, "expected": expected}, tmp_path / "data.pt")
    # A fresh process: the model needs the packages loaded first, then it runs as saved.
    script = textwrap.dedent(f"""
        import torch
        from opgraph.torch import CustomOpLibrary
        data = torch.load({str(tmp_path / "data.pt")!r})
        try:
            torch.jit.load({str(tmp_path / "model.pt")!r})
        except RuntimeError as error:
            assert "my_ops::warp_perspective" in str(error), error
        else:
            raise AssertionError("loaded without the op package")
        CustomOpLibrary({str(conv1d_package)!r})
        CustomOpLibrary({str(warp_perspective_package)!r})
        model = torch.jit.load({str(tmp_path / "model.pt")!r})
        assert torch.equal(model(data["image"], data["warp"]), data["expected"])
        print("identical")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "identical"
