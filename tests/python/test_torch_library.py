"""opgraph.torch.CustomOpLibrary: op packages as PyTorch custom ops, eager,
under torch.compile and torch.export, with autograd."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounter
from torch._subclasses.fake_tensor import FakeTensorMode

import opgraph
from opgraph.torch import CustomOpLibrary

SEED_RESULT = [14, 20, 26, 32, 38, 44, 50, 56, 62, 68, 74, 80, 41, 14, 0]


@pytest.fixture(scope="module")
def ops(torch_examples):
    return torch_examples["conv1d"]


@pytest.fixture(scope="module")
def test_torch_ops(test_ops):
    return CustomOpLibrary(test_ops)


def torch_conv1d(x, kernel):
    k = kernel.shape[0]
    return F.conv1d(F.pad(x.view(1, 1, -1), (0, k - 1)), kernel.view(1, 1, -1)).view(-1)


def seed_inputs(dtype=torch.float32):
    return torch.arange(15, dtype=dtype), torch.arange(4, dtype=dtype)


def test_every_op_is_a_torch_op_with_the_package_schema(torch_examples, test_torch_ops):
    for library in [*torch_examples.values(), test_torch_ops]:
        for name in library.ops:
            namespace, op = name.split("::")
            packet = getattr(getattr(torch.ops, namespace), op)
            assert str(packet.default._schema) == str(torch._C.parse_schema(str(opgraph.op_schema(name))))
            outputs = [a for a in packet.out._schema.arguments if a.alias_info is not None]
            assert outputs and all(a.kwarg_only and a.alias_info.is_write for a in outputs)
            assert packet.out._schema.returns == []


def test_library_lists_its_ops_and_names_missing_ones(ops):
    assert ops.namespace == "examples" and ops.ops == ["examples::conv1d", "examples::conv1d_backward"]
    with pytest.raises(
        AttributeError, match="op package 'examples' has no op 'conv2d'; it has: conv1d, conv1d_backward"
    ):
        _ = ops.conv2d


def test_loading_again_reuses_the_registration(ops, conv1d_package):
    again = CustomOpLibrary(opgraph.load_library(conv1d_package))
    assert again.conv1d.functional is ops.conv1d.functional


def test_bad_source_is_a_clear_error(tmp_path):
    with pytest.raises(opgraph.Error, match="is neither an op package library"):
        CustomOpLibrary(tmp_path)


def test_seed_example_destination_passing_eager_and_compiled(ops):
    x, kernel = seed_inputs()
    conv1d = ops.conv1d[{"input_size": 15, "conv_size": 4}]
    output = torch.empty_like(x)
    assert conv1d(output, x, kernel) is output
    assert output.tolist() == SEED_RESULT
    output = torch.full_like(x, float("nan"))
    torch.compile(conv1d, backend="aot_eager", fullgraph=True)(output, x, kernel)
    assert output.tolist() == SEED_RESULT


def test_seed_example_under_inductor(ops):
    x, kernel = seed_inputs()
    output = torch.full_like(x, float("nan"))
    torch.compile(ops.conv1d[{"input_size": 15, "conv_size": 4}])(output, x, kernel)
    assert output.tolist() == SEED_RESULT


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n, k", [(1, 1), (2, 3), (17, 5), (101, 31)])
def test_functional_form_matches_torch(ops, n, k, dtype):
    x, kernel = torch.randn(n, dtype=dtype), torch.randn(k, dtype=dtype)
    result = ops.conv1d(x, kernel, input_size=n, conv_size=k)
    assert result.dtype == dtype and result.shape == (n,)
    torch.testing.assert_close(result, torch_conv1d(x, kernel))
    torch.testing.assert_close(torch.ops.examples.conv1d(x, kernel, input_size=n, conv_size=k), result)


def test_strided_inputs_and_output(ops):
    base, kernel = torch.randn(40), torch.randn(3)
    x = base[::2]
    output = torch.zeros(20, 2)[:, 0]
    ops.conv1d[{"input_size": 20, "conv_size": 3}](output, x, kernel)
    torch.testing.assert_close(output, torch_conv1d(x.contiguous(), kernel))


class Smooth(torch.nn.Module):
    """A model using the op among ordinary layers."""

    def __init__(self, n, k):
        super().__init__()
        self.n, self.k = n, k
        self.kernel = torch.nn.Parameter(torch.linspace(-1, 1, k))
        self.scale = torch.nn.Linear(n, n)

    def forward(self, x):
        return self.scale(
            torch.ops.examples.conv1d(torch.relu(x), self.kernel, input_size=self.n, conv_size=self.k)
        ).sum()


def test_model_compiles_fullgraph_without_graph_breaks(ops):
    torch.manual_seed(0)
    model, x = Smooth(16, 3), torch.randn(16)
    counter = CompileCounter()
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    torch.testing.assert_close(compiled(x), model(x))
    assert counter.frame_count == 1
    explanation = torch._dynamo.explain(model)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_compiled_model_trains_like_eager(ops):
    torch.manual_seed(0)
    model, x = Smooth(16, 3), torch.randn(16)
    model(x).backward()
    expected = model.kernel.grad.clone()
    model.zero_grad()
    torch.compile(model, backend="aot_eager", fullgraph=True)(x).backward()
    torch.testing.assert_close(model.kernel.grad, expected)


def test_export_keeps_the_op_as_one_node(ops):
    model, x = Smooth(16, 3), torch.randn(16)
    exported = torch.export.export(model, (x,))
    targets = [node.target for node in exported.graph.nodes if node.op == "call_function"]
    assert targets.count(torch.ops.examples.conv1d.default) == 1
    torch.testing.assert_close(exported.module()(x), model(x))


def test_gradcheck_float64(ops):
    x = torch.randn(13, dtype=torch.float64, requires_grad=True)
    kernel = torch.randn(4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: ops.conv1d(a, b, input_size=13, conv_size=4), (x, kernel))


def test_gradients_match_torch_autograd(ops):
    x = torch.randn(31, dtype=torch.float64, requires_grad=True)
    kernel = torch.randn(7, dtype=torch.float64, requires_grad=True)
    grad = torch.randn(31, dtype=torch.float64)
    ours = torch.autograd.grad(ops.conv1d(x, kernel, input_size=31, conv_size=7), (x, kernel), grad)
    theirs = torch.autograd.grad(torch_conv1d(x, kernel), (x, kernel), grad)
    torch.testing.assert_close(ours, theirs)


def test_gradient_of_one_input_only(ops):
    x, kernel = torch.randn(9), torch.randn(3, requires_grad=True)
    (grad_kernel,) = torch.autograd.grad(ops.conv1d(x, kernel, input_size=9, conv_size=3).sum(), kernel)
    torch.testing.assert_close(grad_kernel, torch.autograd.grad(torch_conv1d(x, kernel).sum(), kernel)[0])


def example_calls(name):
    """(overload, args, kwargs) for opcheck: every example op, functional and out."""
    x, kernel = torch.randn(11, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    sizes = dict(input_size=11, conv_size=4)
    image, warp = torch.rand(9, 12), torch.tensor([[1.1, 0.1, 1.0], [0.0, 0.9, -0.5], [0.001, 0.0, 1.0]])
    calls = {
        "conv1d": ((x.requires_grad_(), kernel.requires_grad_()), sizes, (torch.empty(11, dtype=torch.float64),)),
        "conv1d_backward": (
            (torch.randn(11, dtype=torch.float64), x.detach(), kernel.detach()),
            sizes,
            (torch.empty(11, dtype=torch.float64), torch.empty(4, dtype=torch.float64)),
        ),
        "warp_perspective": ((image, warp), dict(height=7, width=10), (torch.empty(7, 10),)),
    }
    return calls[name]


# name -> the namespace of its package (warp_perspective keeps the one of
# PyTorch's TorchScript custom op tutorial).
EXAMPLE_OPS = {"conv1d": "examples", "conv1d_backward": "examples", "warp_perspective": "my_ops"}


@pytest.mark.parametrize("name", EXAMPLE_OPS)
def test_opcheck_functional(torch_examples, name):
    args, kwargs, _ = example_calls(name)
    torch.library.opcheck(getattr(getattr(torch.ops, EXAMPLE_OPS[name]), name).default, args, kwargs)


@pytest.mark.parametrize("name", EXAMPLE_OPS)
def test_opcheck_out_variant(torch_examples, name):
    args, kwargs, outs = example_calls(name)
    op = getattr(getattr(torch.ops, EXAMPLE_OPS[name]), name).out
    names = [a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    torch.library.opcheck(op, [a.detach() for a in args], {**kwargs, **dict(zip(names, outs))})


def test_optional_multi_output_and_list_arguments(test_torch_ops):
    ops = test_torch_ops
    x, bias = torch.randn(3, 4), torch.randn(4)
    torch.testing.assert_close(ops.add_bias(x, bias), x + bias)
    torch.testing.assert_close(ops.add_bias(x), x)
    torch.testing.assert_close(ops.add_bias(x, None), x)
    positive, negative = ops.split_sign(x)
    torch.testing.assert_close(positive, x.clamp(min=0))
    torch.testing.assert_close(negative, x.clamp(max=0))
    outputs = (torch.empty(3, 4), torch.empty(3, 4))
    ops.split_sign[{}](*outputs, x)
    torch.testing.assert_close(outputs, (positive, negative))
    xs, ys = [torch.randn(5) for _ in range(3)], [torch.randn(5) for _ in range(3)]
    torch.testing.assert_close(ops.sum_products(xs, None, ys), sum(a * b for a, b in zip(xs, ys)))
    for op, args in [
        (torch.ops.test_ops.add_bias.default, (x, bias)),
        (torch.ops.test_ops.split_sign.default, (x,)),
        (torch.ops.test_ops.sum_products.default, (xs, bias[:1].expand(5).contiguous(), ys)),
    ]:
        torch.library.opcheck(op, args)


def test_attribute_types_pass_through(test_torch_ops):
    x = torch.zeros(2)
    result = test_torch_ops.echo_attrs(x, i=3, f=0.5, b=True, s="abc", ints=[1, 2], floats=[0.25], dtype=torch.float64)
    expected = opgraph.ops.call(
        "test_ops::echo_attrs", x, i=3, f=0.5, b=True, s="abc", ints=[1, 2], floats=[0.25], dtype=torch.float64
    )
    torch.testing.assert_close(result, torch.from_numpy(expected))


def test_scale_backward_through_registered_backward_op(test_torch_ops):
    x = torch.randn(6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: test_torch_ops.scale(t, factor=-1.5), (x,))


def test_op_without_backward_says_so(test_torch_ops):
    x = torch.randn(3, 4, requires_grad=True)
    y = test_torch_ops.add_bias(x)
    with pytest.raises(RuntimeError, match="test_ops::add_bias: is not differentiable"):
        y.sum().backward()


@pytest.mark.parametrize(
    "x, kernel, attrs, message",
    [
        (
            torch.ones(15),
            torch.ones(4),
            dict(input_size=16, conv_size=4),
            r"examples::conv1d: input: expected shape \[16\] \(input_size=16\), got float32\[15\]",
        ),
        (
            torch.ones(15, dtype=torch.int32),
            torch.ones(4, dtype=torch.int32),
            dict(input_size=15, conv_size=4),
            r"examples::conv1d: input: expected float32 or float64, got int32\[15\]",
        ),
        (
            torch.ones(15),
            torch.ones(4, dtype=torch.float64),
            dict(input_size=15, conv_size=4),
            r"examples::conv1d: kernel: expected float32 like input, got float64\[4\]",
        ),
    ],
)
def test_bad_inputs_are_errors_naming_the_op(ops, x, kernel, attrs, message):
    with pytest.raises(RuntimeError, match=message):
        ops.conv1d(x, kernel, **attrs)
    with pytest.raises(RuntimeError, match=message):
        ops.conv1d[attrs](torch.empty_like(x), x, kernel)
    with pytest.raises(RuntimeError, match=message):
        torch.compile(lambda a, b: ops.conv1d(a, b, **attrs), backend="aot_eager", fullgraph=True)(x, kernel)


def test_wrong_output_is_an_error_naming_the_op(ops):
    x, kernel = seed_inputs()
    conv1d = ops.conv1d[{"input_size": 15, "conv_size": 4}]
    message = r"examples::conv1d: output 0 must be float32\[15\], got float32\[14\]"
    with pytest.raises(RuntimeError, match=message):
        conv1d(torch.empty(14), x, kernel)
    with pytest.raises(RuntimeError, match=message):
        torch.compile(conv1d, backend="aot_eager", fullgraph=True)(torch.empty(14), x, kernel)


def test_binding_checks_attribute_names_and_tensor_count(ops):
    with pytest.raises(
        opgraph.Error, match="examples::conv1d: unknown attribute 'size'; its attributes are: input_size, conv_size"
    ):
        ops.conv1d[{"size": 3}]
    with pytest.raises(opgraph.Error, match=r"expected the outputs \(out\) then the inputs \(input, kernel\), got 4"):
        ops.conv1d[{"input_size": 15, "conv_size": 4}](*seed_inputs(), *seed_inputs())


def test_device_without_kernels_is_an_error_naming_the_op(test_torch_ops):
    # Fake tensors on "cuda" need no GPU; scale has a CPU kernel only.
    with FakeTensorMode(allow_non_fake_inputs=False):
        x = torch.empty(15, device="cuda")
        with pytest.raises(RuntimeError, match="test_ops::scale: no kernel for device cuda:0; it has kernels for: cpu"):
            test_torch_ops.scale(x)
    assert not torch._C._dispatch_has_kernel_for_dispatch_key("test_ops::scale", "CUDA")


def test_cuda_kernel_registers_under_the_cuda_dispatch_key(ops):
    if "cuda" not in opgraph.op_devices("examples::conv1d"):
        pytest.skip("the conv1d package was built without nvcc, so it has no CUDA kernel")
    assert torch._C._dispatch_has_kernel_for_dispatch_key("examples::conv1d", "CUDA")
    # Tracing with fake CUDA tensors needs no GPU: the output is on the inputs' device.
    with FakeTensorMode(allow_non_fake_inputs=False):
        out = ops.conv1d(torch.empty(15, device="cuda"), torch.empty(4, device="cuda"), input_size=15, conv_size=4)
    assert out.device.type == "cuda" and tuple(out.shape) == (15,)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensor_is_an_error_naming_the_op(test_torch_ops):
    with pytest.raises(NotImplementedError, match="test_ops::scale"):
        test_torch_ops.scale(torch.ones(15, device="cuda"))


def test_meta_tensors_get_output_shapes(ops):
    x, kernel = torch.empty(15, device="meta"), torch.empty(4, device="meta")
    y = ops.conv1d(x, kernel, input_size=15, conv_size=4)
    assert y.device.type == "meta" and y.shape == (15,)


def test_dynamic_shapes_follow_input_sizes(test_torch_ops):
    counter = CompileCounter()
    fn = torch.compile(lambda t: test_torch_ops.scale(t, factor=3.0) + 1, backend=counter, dynamic=True, fullgraph=True)
    for n in (5, 8, 13):
        x = torch.randn(n)
        torch.testing.assert_close(fn(x), x * 3 + 1)
    assert counter.frame_count == 1


def test_dynamic_shapes_specialize_when_sizes_are_attributes(ops):
    counter = CompileCounter()
    fn = torch.compile(
        lambda a, b: ops.conv1d(a, b, input_size=a.shape[0], conv_size=b.shape[0]),
        backend=counter,
        dynamic=True,
        fullgraph=True,
    )
    for n in (7, 7, 12):
        x, kernel = torch.randn(n), torch.randn(3)
        torch.testing.assert_close(fn(x, kernel), torch_conv1d(x, kernel))
    assert counter.frame_count == 2


def test_inductor_recompiles_for_a_new_batch_size(test_torch_ops):
    """A model compiled with the default backend, called at a second batch size,
    is compiled again with a symbolic batch: both forms of the op lower."""
    linear = torch.nn.Linear(4, 4)
    model = torch.compile(lambda x: test_torch_ops.scale(linear(x), factor=3.0))
    destination = torch.compile(lambda out, x: test_torch_ops.scale[{"factor": 3.0}](out, x))
    with torch.no_grad():
        for batch in (1, 32, 7):
            x = torch.randn(batch, 4)
            torch.testing.assert_close(model(x), linear(x) * 3)
            out = torch.full_like(x, float("nan"))
            destination(out, x)
            torch.testing.assert_close(out, x * 3)


def test_torch_op_script_prints_verified_results():
    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "OPGRAPH_CACHE_DIR": str(root / "build" / "cache")}
    result = subprocess.run(
        [sys.executable, str(root / "examples" / "conv1d" / "torch_op.py")],
        capture_output=True,
        text=True,
        env=environment,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    expected = "[14. 20. 26. 32. 38. 44. 50. 56. 62. 68. 74. 80. 41. 14.  0.]"
    for line in (
        "NumPy reference result: ",
        "PyTorch custom op result: ",
        "opgraph.ops.call result: ",
        "Graph API result: ",
    ):
        assert line + expected in result.stdout
    assert result.stdout.count("verification PASSED") == 3 and "FAILED" not in result.stdout
