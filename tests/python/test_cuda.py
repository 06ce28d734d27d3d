"""CUDA: the parts that need no GPU run everywhere (availability, errors, the
CUDA dispatch of packages); the rest runs where a GPU is, each kernel against
its CPU reference and against PyTorch on the GPU, and skips with the reason
elsewhere. `make test-gpu` runs this file (under compute-sanitizer too)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import opgraph
from opgraph import Error
from opgraph.ops import call

needs_gpu = pytest.mark.skipif(
    not opgraph.cuda.is_available(), reason=f"needs a CUDA device: {opgraph.cuda.unavailable_reason()}"
)
needs_torch_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs PyTorch with a CUDA device")


# -- everywhere ---------------------------------------------------------------------


def test_availability_is_reported_with_its_reason():
    assert opgraph.cuda.is_available() == (opgraph.cuda.device_count() > 0)
    assert (opgraph.cuda.unavailable_reason() == "") == opgraph.cuda.is_available()


@pytest.mark.skipif(opgraph.cuda.is_available(), reason="this machine has a CUDA device")
def test_device_memory_where_cuda_is_unavailable_names_the_reason():
    reason = opgraph.cuda.unavailable_reason()
    with pytest.raises(Error, match="CUDA is not available: " + reason.split("(")[0]):
        opgraph.empty([4], device="cuda")
    host = opgraph.from_dlpack(np.zeros(4, np.float32))
    with pytest.raises(Error, match="CUDA is not available"):
        host.to("cuda:0")


@pytest.mark.parametrize("device", ["gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA"])
def test_bad_device_strings_are_refused(device):
    with pytest.raises(Error, match=f"device: expected 'cpu', 'cuda' or 'cuda:N', got '{device}'"):
        opgraph.empty([1], device=device)


def relu_graph():
    from opgraph.graph import DType, Graph, TensorType, ops

    with Graph("relu", input_types=[TensorType(DType.float32, ["N", 3])]) as graph:
        (x,) = graph.inputs
        graph.output(ops.relu(x))
    return graph


@pytest.mark.skipif(opgraph.cuda.is_available(), reason="this machine has a CUDA device")
def test_sessions_on_an_unavailable_gpu_say_why():
    from opgraph.graph import DeviceRef, InferenceSession

    with pytest.raises(Error, match=r"InferenceSession: DeviceRef.GPU\(0\) is not available: "):
        InferenceSession(devices=[DeviceRef.GPU()])
    with pytest.raises(Error, match="CUDA is not available"):
        opgraph.Session(relu_graph().to_graph(), weights={}, device="cuda")


def test_built_in_cuda_kernels_arrive_with_the_backend():
    has_cuda = "cuda" in opgraph.op_devices("opgraph::gemm")
    assert has_cuda == opgraph.cuda.is_available()


def test_conv1d_package_has_a_cuda_kernel_where_nvcc_built_it(conv1d_package):
    import shutil

    devices = opgraph.op_devices("examples::conv1d")
    assert "cpu" in devices
    assert ("cuda" in devices) == (shutil.which("nvcc") is not None)


# -- on a GPU ---------------------------------------------------------------------


def conv1d_reference(x, kernel):
    n, kn = len(x), len(kernel)
    padded = np.concatenate([x, np.zeros(kn - 1, x.dtype)])
    return np.array([padded[i : i + kn] @ kernel for i in range(n)], dtype=x.dtype)


# Sizes around the tiles (256 outputs, 256 taps per chunk) and a long one.
CONV1D_SIZES = [(1, 1), (7, 3), (255, 256), (256, 257), (257, 600), (100_000, 9)]


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("n, kn", CONV1D_SIZES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_conv1d_on_torch_cuda_tensors(conv1d_package, n, kn, dtype):
    generator = torch.Generator().manual_seed(n + kn)
    x, kernel = torch.randn(n, dtype=dtype, generator=generator), torch.randn(kn, dtype=dtype, generator=generator)
    out = call("examples::conv1d", x.cuda(), kernel.cuda(), input_size=n, conv_size=kn)
    assert isinstance(out, torch.Tensor) and out.device.type == "cuda"
    expected = call("examples::conv1d", x.numpy(), kernel.numpy(), input_size=n, conv_size=kn)
    tolerance = 1e-4 if dtype == torch.float32 else 1e-10
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=tolerance, atol=tolerance * kn)
    if n <= 300:
        np.testing.assert_allclose(
            expected, conv1d_reference(x.numpy(), kernel.numpy()), rtol=tolerance, atol=tolerance * kn
        )


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("n, kn", CONV1D_SIZES)
def test_conv1d_backward_on_cuda_matches_the_cpu(conv1d_package, n, kn):
    generator = torch.Generator().manual_seed(7)
    x, kernel, grad = (torch.randn(size, dtype=torch.float64, generator=generator) for size in (n, kn, n))
    on_gpu = call("examples::conv1d_backward", grad.cuda(), x.cuda(), kernel.cuda(), input_size=n, conv_size=kn)
    on_cpu = call("examples::conv1d_backward", grad.numpy(), x.numpy(), kernel.numpy(), input_size=n, conv_size=kn)
    for gpu, cpu in zip(on_gpu, on_cpu):
        np.testing.assert_allclose(gpu.cpu().numpy(), cpu, rtol=1e-9, atol=1e-9 * max(n, kn))


@needs_gpu
def test_conv1d_on_cupy_arrays_returns_cupy(conv1d_package):
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(1000, dtype=cupy.float32)
    kernel = cupy.ones(5, dtype=cupy.float32)
    out = call("examples::conv1d", x, kernel, input_size=1000, conv_size=5)
    assert isinstance(out, cupy.ndarray)
    expected = conv1d_reference(cupy.asnumpy(x), cupy.asnumpy(kernel))
    np.testing.assert_allclose(cupy.asnumpy(out), expected, rtol=1e-5)


@needs_torch_cuda
@needs_gpu
def test_dlpack_is_zero_copy_both_ways_and_keeps_the_producer_alive():
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    wrapped = opgraph.from_dlpack(t)
    assert wrapped.data_ptr() == t.data_ptr() and wrapped.device == "cuda:0"
    back = torch.from_dlpack(wrapped)
    assert back.data_ptr() == t.data_ptr()
    pointer = t.data_ptr()
    del t
    torch.cuda.empty_cache()
    assert wrapped.data_ptr() == pointer
    np.testing.assert_array_equal(back.cpu().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))


@needs_gpu
def test_copies_between_host_and_device_keep_values_and_strides():
    host = opgraph.from_dlpack(np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2])
    device = host.to("cuda")
    assert device.device == "cuda:0" and device.is_contiguous()
    np.testing.assert_array_equal(device.to("cpu").numpy(), np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2])


@needs_torch_cuda
@needs_gpu
def test_cuda_inputs_to_an_op_with_only_a_cpu_kernel_name_the_op(test_ops):
    with pytest.raises(Error, match="test_ops::scale: no kernel for device cuda:0; it has kernels for: cpu"):
        call("test_ops::scale", torch.ones(3, device="cuda"))


@needs_torch_cuda
@needs_gpu
def test_inputs_on_mixed_devices_name_the_argument(conv1d_package):
    with pytest.raises(Error, match="examples::conv1d: input 'kernel' is on cpu but earlier inputs are on cuda:0"):
        call("examples::conv1d", torch.ones(4, device="cuda"), np.ones(2, np.float32), input_size=4, conv_size=2)


@needs_gpu
def test_a_device_index_that_does_not_exist_is_an_error():
    missing = opgraph.cuda.device_count()
    with pytest.raises(Error, match=f"device cuda:{missing} does not exist"):
        opgraph.empty([1], device=f"cuda:{missing}")


# -- built-in training ops on the GPU against the CPU kernels and torch -------------


def on_gpu_and_cpu(name, *inputs, **attrs):
    """`name` on the GPU (torch CUDA inputs) and on the CPU (NumPy inputs), as NumPy arrays."""
    as_tuple = lambda r: r if isinstance(r, tuple) else (r,)  # noqa: E731
    gpu = as_tuple(call(name, *[None if x is None else torch.from_numpy(x).cuda() for x in inputs], **attrs))
    cpu = as_tuple(call(name, *inputs, **attrs))
    return [g.cpu().numpy() for g in gpu], list(cpu)


def assert_close_all(actual, expected, tolerance):
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=tolerance, atol=tolerance)


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "sigmoid", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (64, 1024, 1024), (37, 0, 5), (129, 65, 33)])
def test_gemm_forward_and_backward(activation, dtype, m, k, n):
    rng = np.random.default_rng(m * n + k)
    a, b, bias = (rng.standard_normal(s).astype(dtype) for s in ((m, k), (k, n), (n,)))
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    gpu, cpu = on_gpu_and_cpu("opgraph::gemm", a, b, bias, activation=activation)
    assert_close_all(gpu, cpu, tolerance * max(k, 1))
    z = torch.from_numpy(a).cuda() @ torch.from_numpy(b).cuda() + torch.from_numpy(bias).cuda()
    torch_activation = {
        "none": lambda v: v,
        "relu": F.relu,
        "gelu": F.gelu,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
    }[activation]
    np.testing.assert_allclose(
        gpu[0], torch_activation(z).cpu().numpy(), rtol=tolerance * max(k, 1), atol=tolerance * max(k, 1)
    )
    grad = rng.standard_normal((m, n)).astype(dtype)
    gpu, cpu = on_gpu_and_cpu("opgraph::gemm_backward", grad, a, b, bias, cpu[0], activation=activation)
    assert_close_all(gpu, cpu, tolerance * max(m, k, 1))


BF16_ACTIVATIONS = {"none": lambda v: v, "relu": F.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}


def assert_close_to_bf16(actual, expected, length, name):
    """bfloat16 results: within the rounding of each result to bfloat16 (2^-8
    relative) and of `length` rounded terms summed (absolute)."""
    assert actual.dtype == torch.bfloat16 and expected.dtype == torch.bfloat16, name
    torch.testing.assert_close(
        actual.cpu(), expected.cpu(), rtol=2e-2, atol=1e-2 * max(length, 1) ** 0.5, msg=lambda why: f"{name}: {why}"
    )


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("activation", BF16_ACTIVATIONS)
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (64, 1024, 1024), (37, 0, 5), (129, 65, 33)])
def test_bfloat16_gemm_forward_and_backward(activation, m, k, n):
    generator = torch.Generator().manual_seed(m * n + k)
    a, b, bias, grad = (torch.randn(s, generator=generator).bfloat16() for s in ((m, k), (k, n), (n,), (m, n)))
    on_gpu = [x.cuda() for x in (a, b, bias, grad)]
    a_gpu, b_gpu, bias_gpu, grad_gpu = on_gpu
    f = BF16_ACTIVATIONS[activation]

    output = call("opgraph::gemm", a_gpu, b_gpu, bias_gpu, activation=activation)
    assert output.device.type == "cuda"
    assert_close_to_bf16(output, f(torch.addmm(bias_gpu, a_gpu, b_gpu)), k, "output vs torch")
    on_cpu = call("opgraph::gemm", a, b, bias, activation=activation)
    assert_close_to_bf16(output, on_cpu, k, "output vs the CPU kernel")

    grads = call("opgraph::gemm_backward", grad_gpu, a_gpu, b_gpu, bias_gpu, output, activation=activation)
    leaves = [x.clone().requires_grad_() for x in (a_gpu, b_gpu, bias_gpu)]
    f(torch.addmm(leaves[2], leaves[0], leaves[1])).backward(grad_gpu)
    grads_on_cpu = call(
        "opgraph::gemm_backward",
        grad,
        a,
        b,
        bias,
        output.cpu(),
        activation=activation,
        out=tuple(torch.empty_like(x) for x in (a, b, bias)),
    )
    # dz's error, from z's rounding (k terms), is summed again over m or n.
    length = max(m, k, n)
    for name, got, leaf, cpu in zip(["grad_a", "grad_b", "grad_bias"], grads, leaves, grads_on_cpu):
        assert got.device.type == "cuda" and got.shape == leaf.shape, name
        assert_close_to_bf16(got, leaf.grad, length, f"{name} vs torch")
        assert_close_to_bf16(got, cpu, length, f"{name} vs the CPU kernel")


@needs_torch_cuda
@needs_gpu
def test_bfloat16_gemm_mixed_with_float32_names_the_argument():
    a, b = torch.ones(2, 3, dtype=torch.bfloat16, device="cuda"), torch.ones(3, 4, device="cuda")
    with pytest.raises(Error, match=r"^opgraph::gemm: b: expected bfloat16 like a, got float32\[3, 4\]"):
        call("opgraph::gemm", a, b)


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gemm_takes_operands_at_any_element_offset(dtype):
    # Views one element into their buffers: cuBLASLt must not assume 256-byte operands.
    m, k, n = 33, 65, 17
    buffer = torch.randn(m * k + k * n + 2, device="cuda", dtype=dtype)
    a, b = buffer[1 : 1 + m * k].view(m, k), buffer[2 + m * k :].view(k, n)
    out = torch.empty(m * n + 1, device="cuda", dtype=dtype)[1:].view(m, n)
    call("opgraph::gemm", a, b, None, out=out)
    tolerance = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(out.float(), a.float() @ b.float(), rtol=tolerance, atol=tolerance * k**0.5)


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize(
    "shape, out_channels, kernel, stride, padding, dilation, groups",
    [
        ((2, 3, 9, 9), 4, 3, 1, 1, 1, 1),
        ((1, 64, 56, 56), 64, 3, 1, 1, 1, 1),  # a ResNet-18 layer
        ((2, 4, 11, 7), 6, 3, 2, 0, 2, 2),
        ((1, 8, 5, 5), 8, 3, 1, 1, 1, 8),  # depthwise
    ],
)
@pytest.mark.parametrize("activation", ["none", "relu", "gelu"])
def test_conv2d_forward_and_backward(shape, out_channels, kernel, stride, padding, dilation, groups, activation):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape)
    w = rng.standard_normal((out_channels, shape[1] // groups, kernel, kernel))
    b = rng.standard_normal(out_channels)
    attrs = dict(stride=[stride] * 2, padding=[padding] * 2, dilation=[dilation] * 2, groups=groups)
    gpu, cpu = on_gpu_and_cpu("opgraph::conv2d", x, w, b, activation=activation, **attrs)
    assert_close_all(gpu, cpu, 1e-9)
    expected = F.conv2d(
        *(torch.from_numpy(v).cuda() for v in (x, w, b)),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    expected = {"none": expected, "relu": F.relu(expected), "gelu": F.gelu(expected)}[activation]
    np.testing.assert_allclose(gpu[0], expected.cpu().numpy(), rtol=1e-9, atol=1e-9)
    grad = rng.standard_normal(cpu[0].shape)
    gpu, cpu = on_gpu_and_cpu("opgraph::conv2d_act_backward", grad, x, w, b, cpu[0], activation=activation, **attrs)
    assert_close_all(gpu, cpu, 1e-8)


@needs_torch_cuda
@needs_gpu
def test_conv2d_forward_takes_a_large_batch_in_passes():
    # 64 channels of 128 x 128 unfold into 37.7 MB of columns per image: 6 images a pass, then 1
    x, w = torch.randn(7, 64, 128, 128), torch.randn(64, 64, 3, 3) / 24
    out = call("opgraph::conv2d", x.cuda(), w.cuda(), None, stride=[1, 1], padding=[1, 1])
    torch.testing.assert_close(out.cpu(), F.conv2d(x, w, padding=1), rtol=1e-4, atol=1e-4)


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 2, 1), (3, 1, 1)])
def test_pool2d_forward_and_backward(kind, kernel, stride, padding):
    rng = np.random.default_rng(kernel)
    x = rng.standard_normal((2, 3, 11, 10)).astype(np.float32)
    attrs = dict(kernel_size=[kernel] * 2, stride=[stride] * 2, padding=[padding] * 2)
    gpu, cpu = on_gpu_and_cpu(f"aten::{kind}_pool2d", x, **attrs)
    assert_close_all(gpu, cpu, 1e-6)
    grad = rng.standard_normal(cpu[0].shape).astype(np.float32)
    if kind == "max":
        gpu, cpu = on_gpu_and_cpu("opgraph::max_pool2d_backward", grad, x, **attrs)
    else:
        gpu, cpu = on_gpu_and_cpu(
            "aten::avg_pool2d_backward",
            grad,
            x,
            **attrs,
            ceil_mode=False,
            count_include_pad=True,
            divisor_override=None,
        )
    assert_close_all(gpu, cpu, 1e-5)


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("shape, dim", [((4, 1000), -1), ((3, 5, 7), 1), ((2, 70000), 1), ((0, 3), 1)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_and_backward(shape, dim, log):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    name = "aten::log_softmax.int" if log else "aten::softmax.int"
    gpu, cpu = on_gpu_and_cpu(name, x, dim=dim)
    assert_close_all(gpu, cpu, 1e-5)
    grad = rng.standard_normal(shape).astype(np.float32)
    backward = "aten::_log_softmax_backward_data" if log else "aten::_softmax_backward_data"
    gpu, cpu = on_gpu_and_cpu(backward, grad, cpu[0], dim=dim, input_dtype="float32")
    assert_close_all(gpu, cpu, 1e-5)


@needs_torch_cuda
@needs_gpu
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_softmax_cross_entropy_forward_and_backward(label_smoothing):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((300, 10))
    target = rng.integers(0, 10, 300)
    target[::7] = -100
    gpu, cpu = on_gpu_and_cpu("opgraph::softmax_cross_entropy", logits, target, label_smoothing=label_smoothing)
    assert_close_all(gpu, cpu, 1e-10)
    expected = F.cross_entropy(
        torch.from_numpy(logits).cuda(), torch.from_numpy(target).cuda(), label_smoothing=label_smoothing
    )
    np.testing.assert_allclose(gpu[0], expected.cpu().numpy(), rtol=1e-10)
    gpu_grad, cpu_grad = on_gpu_and_cpu(
        "opgraph::softmax_cross_entropy_backward", np.array(1.0), cpu[1], target, label_smoothing=label_smoothing
    )
    assert_close_all(gpu_grad, cpu_grad, 1e-12)


@needs_torch_cuda
@needs_gpu
def test_a_target_that_is_not_a_class_is_reported_by_row():
    logits = torch.zeros(4, 3, device="cuda", dtype=torch.float64)
    target = torch.tensor([0, 1, 7, 2], device="cuda")
    with pytest.raises(Error, match=r"target: row 2 is not a class index in \[0, 3\)"):
        call("opgraph::softmax_cross_entropy", logits, target)


# -- graphs on the GPU ----------------------------------------------------------------


@needs_gpu
def test_a_node_without_a_cuda_kernel_is_named_at_load():
    with pytest.raises(Error, match=r"relu.*the op has no cuda kernel, and the session runs on cuda:0"):
        opgraph.Session(relu_graph().to_graph(), weights={}, device="cuda")


@needs_gpu
def test_seed_000_graph_runs_its_custom_op_on_the_gpu(conv1d_package):
    from opgraph.graph import DeviceRef, DType, Graph, InferenceSession, TensorType, ops

    x, kernel = np.arange(1000, dtype=np.float32), np.arange(9, dtype=np.float32)
    gpu = DeviceRef.GPU()
    with Graph(
        "conv_1d_graph",
        input_types=[
            TensorType(DType.float32, x.shape, device=gpu),
            TensorType(DType.float32, kernel.shape, device=gpu),
        ],
        custom_extensions=[conv1d_package],
    ) as graph:
        input_value, kernel_value = graph.inputs
        output = ops.custom(
            name="conv1d",
            values=[input_value, kernel_value],
            out_types=[TensorType(DType.float32, x.shape, device=gpu)],
            parameters={"input_size": len(x), "conv_size": len(kernel)},
        )[0].tensor
        graph.output(output)
    model = InferenceSession(devices=[gpu]).load(graph)
    for _ in range(3):  # the arena is reused between runs
        result = model.execute(x, kernel)[0]
        assert isinstance(result, np.ndarray)
        np.testing.assert_allclose(result, conv1d_reference(x, kernel), rtol=1e-5)


@needs_torch_cuda
@needs_gpu
def test_session_outputs_stay_on_the_device_for_device_inputs(conv1d_package):
    from opgraph.graph import DType, Graph, TensorType, ops

    with Graph(
        "g",
        input_types=[TensorType(DType.float32, [64]), TensorType(DType.float32, [3])],
        custom_extensions=[conv1d_package],
    ) as graph:
        graph.output(
            ops.custom(
                name="conv1d",
                values=list(graph.inputs),
                out_types=[TensorType(DType.float32, [64])],
                parameters={"input_size": 64, "conv_size": 3},
            )[0].tensor
        )
    session = opgraph.Session(graph.to_graph(), weights=graph.constants, device="cuda")
    x, kernel = torch.randn(64, device="cuda"), torch.randn(3, device="cuda")
    (out,) = session.run(x, kernel)
    assert isinstance(out, torch.Tensor) and out.device.type == "cuda"
    np.testing.assert_allclose(
        out.cpu().numpy(), conv1d_reference(x.cpu().numpy(), kernel.cpu().numpy()), rtol=1e-5, atol=1e-5
    )


@needs_torch_cuda
@needs_gpu
def test_a_cpu_session_refuses_device_inputs_by_name():
    session = opgraph.Session(relu_graph().to_graph(), weights={})
    with pytest.raises(Error, match=r"input '[^']+': expected a tensor on cpu, got float32\[2, 3\] on cuda:0"):
        session.run(torch.randn(2, 3, device="cuda"))


# -- the torch bridge on the GPU ----------------------------------------------------


@needs_torch_cuda
@needs_gpu
def test_custom_op_library_runs_on_torchs_current_stream_eager_and_compiled(conv1d_torch_ops):
    ops = conv1d_torch_ops
    x, kernel = torch.randn(5000, device="cuda"), torch.randn(17, device="cuda")
    expected = call("examples::conv1d", x.cpu().numpy(), kernel.cpu().numpy(), input_size=5000, conv_size=17)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        eager = ops.conv1d(x, kernel, input_size=5000, conv_size=17)
        compiled = torch.compile(lambda a, b: ops.conv1d(a, b, input_size=5000, conv_size=17) * 2, fullgraph=True)(
            x, kernel
        )
    side.synchronize()
    np.testing.assert_allclose(eager.cpu().numpy(), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(compiled.cpu().numpy(), 2 * expected, rtol=1e-4, atol=1e-4)
    x.requires_grad_(True)
    ops.conv1d(x, kernel, input_size=5000, conv_size=17).sum().backward()
    assert x.grad.device.type == "cuda"
