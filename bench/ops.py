"""Built-in ops vs PyTorch on the same shapes, in the same process.

Each row times opgraph.ops.call (writing into a preallocated output, as the
graph executor runs kernels) against the PyTorch eager call, with the same
thread count for both, alternating calls so that both see the same load from
whatever else runs on the machine. Ratios above 1 mean opgraph is faster.
"""
import argparse
import os
import statistics
import time

# torch and oneDNN each bring an OpenMP runtime whose idle threads spin for
# milliseconds after a parallel region, on the cores the other library's next
# call runs on. Rows alternate between the two libraries, so with spinning
# threads they would time the contention; threads that sleep when idle leave
# the kernels to be timed. (Set before torch and opgraph load their runtimes.)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

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


def seconds_per_call(ours, theirs, budget=0.5):
    """Median seconds per call of `ours` and of `theirs`, timed in alternation."""
    for fn in (ours, theirs):
        fn()
    start = time.perf_counter()
    ours()
    theirs()
    once = time.perf_counter() - start
    samples = ([], [])
    for _ in range(max(3, min(30, int(budget / max(once, 1e-9))))):
        for fn, times in zip((ours, theirs), samples):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(samples[0]), statistics.median(samples[1])


def random(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def row(label, ours, theirs, flops=None):
    rate = f"{flops / ours / 1e9:8.1f}" if flops else " " * 8
    print(f"  {label:<44} {ours * 1e3:10.3f} {theirs * 1e3:10.3f} {theirs / ours:8.2f}x {rate}")


def compare(label, op, torch_fn, inputs, flops=None, **attrs):
    expected = torch_fn(*[torch.from_numpy(x) for x in inputs])
    out = np.empty(tuple(expected.shape), np.float32)
    ours, theirs = seconds_per_call(lambda: call(op, *inputs, out=out, **attrs),
                                    lambda: torch_fn(*[torch.from_numpy(x) for x in inputs]))
    np.testing.assert_allclose(out, expected.numpy(), rtol=2e-3, atol=2e-3)
    row(label, ours, theirs, flops)


GEMM_SHAPES = [(1, 4096, 4096), (64, 1024, 1024), (1024, 1024, 1024)]  # (M, N, K)


def bench_gemm():
    for m, n, k in GEMM_SHAPES:
        compare(f"mm ({m}, {n}, {k})", "aten::mm", torch.mm, [random(m, k), random(k, n)], 2 * m * n * k)
    # A dense layer's forward: opgraph fuses the bias and relu into the product.
    for m, n, k in GEMM_SHAPES:
        compare(f"gemm+bias+relu ({m}, {n}, {k})", "opgraph::gemm", lambda a, b, bias: F.relu(torch.addmm(bias, a, b)),
                [random(m, k), random(k, n), random(n)], 2 * m * n * k, activation="relu")


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

            ours, theirs = seconds_per_call(
                lambda: call("opgraph::gemm_backward", grad, a, b, bias, output, activation=activation, out=grads),
                torch_backward)
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
    ours_time, theirs_time = seconds_per_call(ours, lambda: F.relu(F.linear(tx, tw, tb)))
    np.testing.assert_allclose(out, expected.numpy(), rtol=2e-3, atol=2e-3)
    row("linear+bias+relu (64, 1024, 1024)", ours_time, theirs_time, 2 * 64 * 1024 * 1024)


def bench_convs(batch):
    for name, stride, padding, channels, size, out_channels, kernel in RESNET18_CONVS:
        x, w = random(batch, channels, size, size), random(out_channels, channels, kernel, kernel) * 0.05
        out_size = (size + 2 * padding - kernel) // stride + 1
        flops = 2 * batch * out_channels * out_size * out_size * channels * kernel * kernel
        compare(f"conv2d {name} N={batch}", "aten::conv2d",
                lambda x, w: F.conv2d(x, w, stride=stride, padding=padding), [x, w], flops,
                stride=stride, padding=padding)


def bench_rest():
    compare("max_pool2d (1, 64, 112, 112) 3/2", "aten::max_pool2d",
            lambda x: F.max_pool2d(x, 3, 2, 1), [random(1, 64, 112, 112)], kernel_size=3, stride=2, padding=1)
    compare("softmax (64, 1000)", "aten::softmax.int", lambda x: torch.softmax(x, -1), [random(64, 1000)], dim=-1)
    compare("softmax (8, 12, 128, 128)", "aten::softmax.int", lambda x: torch.softmax(x, -1),
            [random(8, 12, 128, 128)], dim=-1)
    compare("layer_norm (64, 128, 768)", "aten::layer_norm", lambda x: F.layer_norm(x, [768]),
            [random(64, 128, 768)], normalized_shape=[768])


FAMILIES = {
    "gemm": lambda: (bench_gemm(), bench_linear_relu(), bench_gemm_backward()),
    "conv": lambda: (bench_convs(1), bench_convs(8)),
    "rest": bench_rest,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", nargs="+", choices=FAMILIES, default=list(FAMILIES), help="op families to time")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, float32; times in ms")
    for threads in args.threads:
        opgraph.set_num_threads(threads)
        torch.set_num_threads(threads)
        print(f"\nthreads: opgraph {opgraph.get_num_threads()}, torch {torch.get_num_threads()}")
        print(f"  {'op':<44} {'opgraph':>10} {'torch':>10} {'vs torch':>9} {'GFLOP/s':>8}")
        for family in args.only:
            FAMILIES[family]()


if __name__ == "__main__":
    main()
