"""Built-in ops vs PyTorch on the same shapes, in the same process.

Each row times opgraph.ops.call (writing into a preallocated output, as the
graph executor runs kernels) against the PyTorch eager call, with the same
thread count for both. Ratios above 1 mean opgraph is faster.
"""
import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

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


def seconds_per_call(fn, budget=0.25):
    fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    samples = []
    for _ in range(max(3, min(30, int(budget / max(once, 1e-9))))):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def random(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def row(label, ours, theirs, flops=None):
    rate = f"{flops / ours / 1e9:8.1f}" if flops else " " * 8
    print(f"  {label:<34} {ours * 1e3:10.3f} {theirs * 1e3:10.3f} {theirs / ours:8.2f}x {rate}")


def compare(label, op, torch_fn, inputs, flops=None, **attrs):
    expected = torch_fn(*[torch.from_numpy(x) for x in inputs])
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    out = [np.empty(tuple(want.shape), np.float32) for want in expected]
    ours = seconds_per_call(lambda: call(op, *inputs, out=out if len(out) > 1 else out[0], **attrs))
    theirs = seconds_per_call(lambda: torch_fn(*[torch.from_numpy(x) for x in inputs]))
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got, want.numpy(), rtol=2e-3, atol=2e-3)
    row(label, ours, theirs, flops)


def bench_gemm():
    for m, n, k in [(1, 4096, 4096), (64, 1024, 1024), (1024, 1024, 1024)]:
        compare(f"mm ({m}, {n}, {k})", "aten::mm", torch.mm, [random(m, k), random(k, n)], 2 * m * n * k)


def bench_linear_relu():
    x, w, b = random(64, 1024), random(1024, 1024) * 0.03, random(1024)
    expected = F.relu(F.linear(*map(torch.from_numpy, (x, w, b))))
    hidden, out = np.empty((64, 1024), np.float32), np.empty((64, 1024), np.float32)

    def ours():
        call("aten::linear", x, w, b, out=hidden)
        call("aten::relu", hidden, out=out)

    tx, tw, tb = map(torch.from_numpy, (x, w, b))
    ours_time = seconds_per_call(ours)
    theirs_time = seconds_per_call(lambda: F.relu(F.linear(tx, tw, tb)))
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
        compare(f"conv2d {name} N={batch}", "aten::conv2d",
                lambda x, w: F.conv2d(x, w, stride=stride, padding=padding), [x, w], flops,
                stride=stride, padding=padding)


def bench_conv_training():
    """opgraph::conv2d with a fused activation against torch's convolution and
    activation, and the convolution's gradients against torch's."""
    for name, stride, padding, *shape in [RESNET18_CONVS[1], RESNET18_CONVS[6]]:
        x, w, flops = conv_case(8, stride, padding, *shape)
        b = random(w.shape[0])
        for activation, torch_activation in [("relu", F.relu), ("gelu", F.gelu)]:
            compare(f"conv2d+{activation} {name} N=8", "opgraph::conv2d",
                    lambda x, w, b: torch_activation(F.conv2d(x, w, b, stride=stride, padding=padding)), [x, w, b],
                    flops, stride=stride, padding=padding, activation=activation)
        grad = random(*F.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=padding).shape)

        def torch_backward(grad, x, w):
            return torch.ops.aten.convolution_backward(grad, x, w, [w.shape[0]], [stride] * 2, [padding] * 2, [1, 1],
                                                       False, [0, 0], 1, [True, True, True])

        compare(f"conv2d backward {name} N=8", "opgraph::conv2d_backward", torch_backward, [grad, x, w], 2 * flops,
                stride=stride, padding=padding)


def bench_rest():
    compare("max_pool2d (1, 64, 112, 112) 3/2", "aten::max_pool2d",
            lambda x: F.max_pool2d(x, 3, 2, 1), [random(1, 64, 112, 112)], kernel_size=3, stride=2, padding=1)
    compare("softmax (64, 1000)", "aten::softmax.int", lambda x: torch.softmax(x, -1), [random(64, 1000)], dim=-1)
    compare("softmax (8, 12, 128, 128)", "aten::softmax.int", lambda x: torch.softmax(x, -1),
            [random(8, 12, 128, 128)], dim=-1)
    compare("layer_norm (64, 128, 768)", "aten::layer_norm", lambda x: F.layer_norm(x, [768]),
            [random(64, 128, 768)], normalized_shape=[768])


GROUPS = {
    "gemm": [bench_gemm, bench_linear_relu],
    "conv": [lambda: bench_convs(1), lambda: bench_convs(8)],
    "conv-train": [bench_conv_training],
    "rest": [bench_rest],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", choices=list(GROUPS), nargs="+", default=list(GROUPS), help="which rows to run")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, float32; times in ms")
    for threads in args.threads:
        opgraph.set_num_threads(threads)
        torch.set_num_threads(threads)
        print(f"\nthreads: opgraph {opgraph.get_num_threads()}, torch {torch.get_num_threads()}")
        print(f"  {'op':<34} {'opgraph':>10} {'torch':>10} {'vs torch':>9} {'GFLOP/s':>8}")
        for group in args.only:
            for bench in GROUPS[group]:
                bench()


if __name__ == "__main__":
    main()
