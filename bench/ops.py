"""Built-in ops vs PyTorch on the same shapes, in the same process.

Each row times opgraph.ops.call (writing into a preallocated output, as the
graph executor runs kernels) against the PyTorch eager call, with the same
thread count for both, in interleaved rounds of blocks of calls
(bench/timing.py) so that both see the same load from whatever else runs on
the machine, each figure the median of all rounds' calls; the last rows run
a whole graph with opgraph.Session. Ratios above 1 mean opgraph is faster.
"""

import argparse
import json
import os

# torch and oneDNN each bring an OpenMP runtime whose idle threads spin for
# milliseconds after a parallel region, on the cores the other library's next
# call runs on. Rows alternate between the two libraries, so with spinning
# threads they would time the contention; threads that sleep when idle leave
# the kernels to be timed. (Set before torch and opgraph load their runtimes.)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
import torch
import torch.nn.functional as F
from timing import interleaved

import opgraph
from opgraph.ops import call

# (name, stride, padding, input C, H, output C, kernel) of ResNet-18's distinct convolutions.
RESNET18_CONVS = [
    ("conv1", 2, 3, 3, 224, 64, 7),
    ("layer1 3x3", 1, 1, 64, 56, 64, 3),
    ("layer2 3x3/2", 2, 1, 64, 56, 128, 3),
    ("layer2 1x1/2", 2, 0, 64, 56, 128, 1),
    ("layer2 3x3", 1, 1, 128, 28, 128, 3),
    ("layer3 3x3/2", 2, 1, 128, 28, 256, 3),
    ("layer3 3x3", 1, 1, 256, 14, 256, 3),
    ("layer4 3x3/2", 2, 1, 256, 14, 512, 3),
    ("layer4 3x3", 1, 1, 512, 7, 512, 3),
]


def paired_seconds(ours, theirs):
    """Median seconds per call of `ours` and of `theirs`, timed in interleaved rounds."""
    return tuple(t.seconds for t in interleaved([ours, theirs], budget=0.5))


def random(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def row(label, ours, theirs, flops=None):
    rate = f"{flops / ours / 1e9:8.1f}" if flops else " " * 8
    print(f"  {label:<44} {ours * 1e3:10.3f} {theirs * 1e3:10.3f} {theirs / ours:8.2f}x {rate}")


def as_torch(value):
    return [as_torch(x) for x in value] if isinstance(value, list) else torch.from_numpy(value)


def empty_off_page_phase(shape, like):
    """np.empty(shape, float32), starting half a page away from `like` modulo
    4 KiB. Same-sized arrays a multiple of 4 KiB long often sit back to back
    on the heap, 16 bytes apart modulo 4 KiB: then every store to the output
    stalls the loads of the input that follow it (4K aliasing), and the row
    times where the allocator put the arrays rather than the kernel. PyTorch
    allocates its own outputs on each call, so its side does not see this."""
    size = int(np.prod(shape))
    base = np.empty(size + 1024, np.float32)
    shift = (like.ctypes.data + 2048 - base.ctypes.data) % 4096 // 4
    return base[shift : shift + size].reshape(shape)


def compare(label, op, torch_fn, inputs, flops=None, **attrs):
    """Times `op` on `inputs` (arrays, or lists of them for a Tensor[]) against torch_fn, which may
    return several outputs."""
    expected = torch_fn(*[as_torch(x) for x in inputs])
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    first = inputs[0][0] if isinstance(inputs[0], list) else inputs[0]
    out = [empty_off_page_phase(tuple(want.shape), first) for want in expected]
    ours, theirs = paired_seconds(
        lambda: call(op, *inputs, out=out if len(out) > 1 else out[0], **attrs),
        lambda: torch_fn(*[as_torch(x) for x in inputs]),
    )
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got, want.numpy(), rtol=2e-3, atol=2e-3)
    row(label, ours, theirs, flops)


GEMM_SHAPES = [(1, 4096, 4096), (64, 1024, 1024), (1024, 1024, 1024)]  # (M, N, K)


def bench_gemm():
    for m, n, k in GEMM_SHAPES:
        compare(f"mm ({m}, {n}, {k})", "aten::mm", torch.mm, [random(m, k), random(k, n)], 2 * m * n * k)
    # One decoded token's heads against a shared weight: size-1 dims of every kind.
    compare(
        "matmul (1, 12, 1, 64) @ (64, 1024)",
        "aten::matmul",
        torch.matmul,
        [random(1, 12, 1, 64), random(64, 1024)],
        2 * 12 * 64 * 1024,
    )
    # A dense layer's forward: opgraph fuses the bias and relu into the product.
    for m, n, k in GEMM_SHAPES:
        compare(
            f"gemm+bias+relu ({m}, {n}, {k})",
            "opgraph::gemm",
            lambda a, b, bias: F.relu(torch.addmm(bias, a, b)),
            [random(m, k), random(k, n), random(n)],
            2 * m * n * k,
            activation="relu",
        )


def bench_gemm_backward():
    """A dense layer's backward: opgraph's one op (which recomputes gelu's
    input) against autograd through torch.addmm and the activation."""
    for activation, torch_activation in [("relu", F.relu), ("gelu", F.gelu)]:
        for m, n, k in GEMM_SHAPES[1:]:
            a, b, bias, grad = random(m, k), random(k, n), random(n), random(m, n)
            output = call("opgraph::gemm", a, b, bias, activation=activation)
            grads = (np.empty_like(a), np.empty_like(b), np.empty_like(bias))
            leaves = [torch.from_numpy(x).requires_grad_() for x in (a, b, bias)]
            torch_output = torch_activation(torch.addmm(leaves[2], leaves[0], leaves[1]))

            def torch_backward():
                for leaf in leaves:
                    leaf.grad = None
                torch_output.backward(torch.from_numpy(grad), retain_graph=True)

            ours, theirs = paired_seconds(
                lambda: call("opgraph::gemm_backward", grad, a, b, bias, output, activation=activation, out=grads),
                torch_backward,
            )
            for got, leaf in zip(grads, leaves):
                np.testing.assert_allclose(got, leaf.grad.numpy(), rtol=2e-3, atol=2e-3)
            row(f"gemm+bias+{activation} backward ({m}, {n}, {k})", ours, theirs, 4 * m * n * k)


def bench_linear_relu():
    x, w, b = random(64, 1024), random(1024, 1024) * 0.03, random(1024)
    expected = F.relu(F.linear(*map(torch.from_numpy, (x, w, b))))
    hidden, out = np.empty((64, 1024), np.float32), np.empty((64, 1024), np.float32)

    def ours():
        call("aten::linear", x, w, b, out=hidden)
        call("aten::relu", hidden, out=out)

    tx, tw, tb = map(torch.from_numpy, (x, w, b))
    ours_time, theirs_time = paired_seconds(ours, lambda: F.relu(F.linear(tx, tw, tb)))
    np.testing.assert_allclose(out, expected.numpy(), rtol=2e-3, atol=2e-3)
    row("linear+bias+relu (64, 1024, 1024)", ours_time, theirs_time, 2 * 64 * 1024 * 1024)


def conv_case(batch, stride, padding, channels, size, out_channels, kernel):
    """Input, weight and the multiply-adds (as FLOPs) of a convolution."""
    x, w = random(batch, channels, size, size), random(out_channels, channels, kernel, kernel) * 0.05
    out_size = (size + 2 * padding - kernel) // stride + 1
    return x, w, 2 * batch * out_channels * out_size * out_size * channels * kernel * kernel


def bench_convs(batch):
    for name, stride, padding, *shape in RESNET18_CONVS:
        x, w, flops = conv_case(batch, stride, padding, *shape)
        compare(
            f"conv2d {name} N={batch}",
            "aten::conv2d",
            lambda x, w: F.conv2d(x, w, stride=stride, padding=padding),
            [x, w],
            flops,
            stride=stride,
            padding=padding,
        )


def bench_conv_training():
    """opgraph::conv2d with a fused activation against torch's convolution and
    activation, and the convolution's gradients against torch's."""
    for name, stride, padding, *shape in [RESNET18_CONVS[1], RESNET18_CONVS[6]]:
        x, w, flops = conv_case(8, stride, padding, *shape)
        b = random(w.shape[0])
        for activation, torch_activation in [("relu", F.relu), ("gelu", F.gelu)]:
            compare(
                f"conv2d+{activation} {name} N=8",
                "opgraph::conv2d",
                lambda x, w, b: torch_activation(F.conv2d(x, w, b, stride=stride, padding=padding)),
                [x, w, b],
                flops,
                stride=stride,
                padding=padding,
                activation=activation,
            )
        grad = random(*F.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=padding).shape)

        def torch_backward(grad, x, w):
            return torch.ops.aten.convolution_backward(
                grad, x, w, [w.shape[0]], [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1, [True, True, True]
            )

        compare(
            f"conv2d backward {name} N=8",
            "opgraph::conv2d_backward",
            torch_backward,
            [grad, x, w],
            2 * flops,
            stride=stride,
            padding=padding,
        )


def bench_pool():
    compare(
        "max_pool2d (1, 64, 112, 112) 3/2",
        "aten::max_pool2d",
        lambda x: F.max_pool2d(x, 3, 2, 1),
        [random(1, 64, 112, 112)],
        kernel_size=3,
        stride=2,
        padding=1,
    )
    compare(
        "avg_pool2d (1, 64, 112, 112) 3/2",
        "aten::avg_pool2d",
        lambda x: F.avg_pool2d(x, 3, 2, 1),
        [random(1, 64, 112, 112)],
        kernel_size=3,
        stride=2,
        padding=1,
    )
    compare(
        "avg_pool2d (8, 256, 14, 14) 2/2",
        "aten::avg_pool2d",
        lambda x: F.avg_pool2d(x, 2, 2),
        [random(8, 256, 14, 14)],
        kernel_size=2,
        stride=2,
    )


def bench_softmax():
    compare("softmax (64, 1000)", "aten::softmax.int", lambda x: torch.softmax(x, -1), [random(64, 1000)], dim=-1)
    compare(
        "softmax (8, 12, 128, 128)",
        "aten::softmax.int",
        lambda x: torch.softmax(x, -1),
        [random(8, 12, 128, 128)],
        dim=-1,
    )
    compare(
        "log_softmax (64, 1000)",
        "aten::log_softmax.int",
        lambda x: torch.log_softmax(x, -1),
        [random(64, 1000)],
        dim=-1,
    )


def bench_norm():
    compare(
        "layer_norm (64, 128, 768)",
        "aten::layer_norm",
        lambda x: F.layer_norm(x, [768]),
        [random(64, 128, 768)],
        normalized_shape=[768],
    )


def bench_concat():
    # DenseNet-style channel concatenation, batch concatenation, narrow rows, stacked frames.
    cases = [
        ("cat 4 x (8, 64, 56, 56) dim 1", "aten::cat", [(8, 64, 56, 56)] * 4, 1),
        ("cat 2 x (64, 128, 768) dim 0", "aten::cat", [(64, 128, 768)] * 2, 0),
        ("cat (65536, 3) (65536, 5) dim -1", "aten::cat", [(65536, 3), (65536, 5)], -1),
        ("cat 3 x (64, 64) dim 1", "aten::cat", [(64, 64)] * 3, 1),
        ("stack 16 x (3, 224, 224) dim 0", "aten::stack", [(3, 224, 224)] * 16, 0),
        ("stack 4 x (256, 1024) dim -1", "aten::stack", [(256, 1024)] * 4, -1),
    ]
    for label, op, shapes, dim in cases:
        torch_fn = torch.cat if op == "aten::cat" else torch.stack
        compare(label, op, lambda ts: torch_fn(ts, dim), [[random(*shape) for shape in shapes]], dim=dim)


def bench_elementwise():
    x, y, bias = random(64, 128, 768), random(64, 128, 768), random(768)
    for name, fn in [("relu", torch.relu), ("gelu", F.gelu), ("silu", F.silu), ("sigmoid", torch.sigmoid)]:
        compare(f"{name} (64, 128, 768)", f"aten::{name}", fn, [x])
    compare("add (64, 128, 768) + same", "aten::add.Tensor", torch.add, [x, y])
    compare("add (64, 128, 768) + (768,)", "aten::add.Tensor", torch.add, [x, bias])
    compare("mul (64, 128, 768) * scalar", "aten::mul.Scalar", lambda t: t * 0.5, [x], other=0.5)


def bench_attention():
    """Fused attention against torch's F.scaled_dot_product_attention (its own
    fused CPU kernel): BERT-base heads at 128 and 512 tokens, with a padding
    mask, causal, and a one-token decoding step over a long context; then the
    real-size models' attention at batch 1: ViT-B/16's 197 patches,
    Whisper-tiny's encoder over 1500 frames, GPT-2's causal prefill of 128
    tokens and SmolLM-135M's, whose 9 query heads share 3 key/value heads."""
    padding = np.ones((8, 1, 1, 128), dtype=bool)
    padding[::2, ..., 100:] = False
    cases = [
        ("(8, 12, 128, 64)", [random(8, 12, 128, 64) for _ in range(3)], {}),
        ("(8, 12, 128, 64) padding mask", [random(8, 12, 128, 64) for _ in range(3)] + [padding], {}),
        ("(1, 12, 512, 64) causal", [random(1, 12, 512, 64) for _ in range(3)], dict(is_causal=True)),
        ("(1, 12, 1, 64) x 1024 keys", [random(1, 12, 1, 64), random(1, 12, 1024, 64), random(1, 12, 1024, 64)], {}),
        ("ViT-B (1, 12, 197, 64)", [random(1, 12, 197, 64) for _ in range(3)], {}),
        ("Whisper-tiny (1, 6, 1500, 64)", [random(1, 6, 1500, 64) for _ in range(3)], {}),
        ("GPT-2 (1, 12, 128, 64) causal", [random(1, 12, 128, 64) for _ in range(3)], dict(is_causal=True)),
        (
            "SmolLM (1, 9, 128, 64), 3 kv heads, causal",
            [random(1, 9, 128, 64), random(1, 3, 128, 64), random(1, 3, 128, 64)],
            dict(is_causal=True, enable_gqa=True),
        ),
    ]
    for label, inputs, attrs in cases:
        compare(
            f"attention {label}",
            "aten::scaled_dot_product_attention",
            lambda q, k, v, mask=None: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **attrs),
            inputs,
            4 * np.prod(inputs[0].shape[:-1]) * inputs[1].shape[-2] * inputs[0].shape[-1],
            **attrs,
        )


def conv_block(index, source, channels, out_channels):
    """conv2d 3x3 (padding 1) -> relu -> max_pool2d 2 as graph nodes, with weights."""
    weights = {
        f"conv{index}.weight": random(out_channels, channels, 3, 3) * 0.1,
        f"conv{index}.bias": random(out_channels),
    }
    nodes = [
        {
            "name": f"conv{index}",
            "op_type": "aten::conv2d",
            "outputs": [f"c{index}"],
            "inputs": [source, f"conv{index}.weight", f"conv{index}.bias"],
            "attrs": {"padding": {"type": "ints", "value": [1, 1]}},
        },
        {"name": f"relu{index}", "op_type": "aten::relu", "inputs": [f"c{index}"], "outputs": [f"r{index}"]},
        {
            "name": f"pool{index}",
            "op_type": "aten::max_pool2d",
            "inputs": [f"r{index}"],
            "outputs": [f"p{index}"],
            "attrs": {"kernel_size": {"type": "ints", "value": [2, 2]}},
        },
    ]
    return nodes, weights


def bench_session(batch):
    """A small CNN run by opgraph.Session against the same layers in PyTorch eager."""
    nodes1, weights1 = conv_block(1, "x", 3, 16)
    nodes2, weights2 = conv_block(2, "p1", 16, 32)
    weights = {**weights1, **weights2, "fc.weight": random(10, 32 * 8 * 8) * 0.01, "fc.bias": random(10)}
    graph = opgraph.Graph.from_json(
        json.dumps(
            {
                "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 3, 32, 32]}],
                "outputs": [{"name": "logits"}],
                "constants": [{"name": k, "dtype": "float32", "shape": list(v.shape)} for k, v in weights.items()],
                "nodes": nodes1
                + nodes2
                + [
                    {
                        "name": "flatten",
                        "op_type": "aten::flatten.using_ints",
                        "inputs": ["p2"],
                        "outputs": ["f"],
                        "attrs": {"start_dim": {"type": "int", "value": 1}},
                    },
                    {
                        "name": "fc",
                        "op_type": "aten::linear",
                        "inputs": ["f", "fc.weight", "fc.bias"],
                        "outputs": ["logits"],
                    },
                ],
            }
        )
    )
    session = opgraph.Session(graph, weights=weights)
    t = {k: torch.from_numpy(v) for k, v in weights.items()}

    def theirs(x):
        for i in (1, 2):
            x = F.max_pool2d(F.relu(F.conv2d(x, t[f"conv{i}.weight"], t[f"conv{i}.bias"], padding=1)), 2)
        return F.linear(x.flatten(1), t["fc.weight"], t["fc.bias"])

    x = random(batch, 3, 32, 32)
    tx = torch.from_numpy(x)
    with torch.no_grad():
        np.testing.assert_allclose(session.run(x)[0], theirs(tx).numpy(), rtol=2e-3, atol=2e-3)
        row(f"Session small CNN N={batch}", *paired_seconds(lambda: session.run(x), lambda: theirs(tx)))


FAMILIES = {
    "matmul": [bench_gemm, bench_linear_relu, bench_gemm_backward],
    "conv": [lambda: bench_convs(1), lambda: bench_convs(8)],
    "conv-train": [bench_conv_training],
    "pool": [bench_pool],
    "softmax": [bench_softmax],
    "norm": [bench_norm],
    "elementwise": [bench_elementwise],
    "concat": [bench_concat],
    "attention": [bench_attention],
    "session": [lambda: bench_session(1), lambda: bench_session(32)],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--only", nargs="+", choices=FAMILIES, default=list(FAMILIES), help="op families to time (default: all)"
    )
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="cuda: gemm and ResNet-18 conv2d on the GPU against torch (bench/gpu.py)",
    )
    args = parser.parse_args()
    if args.device == "cuda":
        import gpu

        gpu.main(["gemm", "conv2d"])
        return
    print(f"torch {torch.__version__}, opgraph vector code {opgraph.get_cpu_capability()}, float32; times in ms")
    for threads in args.threads:
        opgraph.set_num_threads(threads)
        torch.set_num_threads(threads)
        print(f"\nthreads: opgraph {opgraph.get_num_threads()}, torch {torch.get_num_threads()}")
        print(f"  {'op':<44} {'opgraph':>10} {'torch':>10} {'vs torch':>9} {'GFLOP/s':>8}")
        for family in args.only:
            for bench in FAMILIES[family]:
                bench()


if __name__ == "__main__":
    main()
