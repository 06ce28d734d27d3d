"""conv1d package vs PyTorch and NumPy, and the cost of one opgraph.ops.call.

Every row times the same computation (output[i] = sum_j x[i+j] * k[j], zero
past the end) in the same process, opgraph and torch in interleaved rounds
(bench/timing.py), numpy (slow at the largest sizes) alone after them:
  torch:  F.conv1d(F.pad(x, (0, k-1)), k)         (the fastest form: conv1d's own
          padding=k-1 argument takes a path 30x slower here)
  numpy:  np.correlate(x, k, "full")[k-1:]        (always single-threaded)
Ratios above 1 mean opgraph is faster.
"""

import argparse
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from timing import interleaved, seconds_per_call

import opgraph
from opgraph._C import _noop

ROOT = Path(__file__).resolve().parents[1]


def conv1d_row(n, k, rng):
    x = rng.standard_normal(n).astype(np.float32)
    kernel = rng.standard_normal(k).astype(np.float32)
    out = np.empty_like(x)
    xt, kt = torch.from_numpy(x).view(1, 1, n), torch.from_numpy(kernel).view(1, 1, k)
    ours, theirs = (
        t.seconds
        for t in interleaved(
            [
                lambda: opgraph.ops.call("examples::conv1d", x, kernel, input_size=n, conv_size=k, out=out),
                lambda: F.conv1d(F.pad(xt, (0, k - 1)), kt),
            ],
            budget=0.3,
        )
    )
    numpy_time = seconds_per_call(lambda: np.correlate(x, kernel, "full")[k - 1 :], budget=0.1, rounds=1)
    expected = F.conv1d(F.pad(xt, (0, k - 1)), kt).view(n).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3 * np.sqrt(k))
    return ours, theirs, numpy_time


def call_overhead():
    x, kernel = np.arange(15, dtype=np.float32), np.arange(4, dtype=np.float32)
    out = np.empty_like(x)
    call = opgraph.ops.call
    return tuple(
        t.seconds
        for t in interleaved(
            [
                lambda: call("examples::conv1d", x, kernel, input_size=15, conv_size=4),
                lambda: call("examples::conv1d", x, kernel, input_size=15, conv_size=4, out=out),
                lambda: _noop(x, kernel, input_size=15, conv_size=4),
            ],
            budget=0.3,
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e5, 1e7])
    parser.add_argument("--kernels", type=int, nargs="+", default=[4, 31, 255])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="cuda: the package's CUDA kernel against torch and CuPy on the GPU (bench/gpu.py)",
    )
    args = parser.parse_args()
    if args.device == "cuda":
        import gpu

        gpu.main(["conv1d", "call"], sizes=[*args.sizes, 1e8], kernels=args.kernels)
        return

    library = opgraph.load_library(opgraph.build_package(ROOT / "examples" / "conv1d", target="conv1d"))
    print(f"conv1d package: {library.path}")
    print(f"torch {torch.__version__}, numpy {np.__version__}, float32\n")
    rng = np.random.default_rng(0)
    for threads in args.threads:
        opgraph.set_num_threads(threads)
        torch.set_num_threads(threads)
        print(f"threads: opgraph {opgraph.get_num_threads()}, torch {torch.get_num_threads()}, numpy 1")
        print(
            f"{'n':>10} {'k':>4} {'opgraph ms':>11} {'GMAC/s':>7} {'torch ms':>9} {'numpy ms':>9}"
            f" {'vs torch':>9} {'vs numpy':>9}"
        )
        for n in map(int, args.sizes):
            for k in args.kernels:
                ours, theirs, numpy_time = conv1d_row(n, k, rng)
                print(
                    f"{n:>10} {k:>4} {ours * 1e3:>11.4f} {n * k / ours / 1e9:>7.2f} {theirs * 1e3:>9.4f}"
                    f" {numpy_time * 1e3:>9.4f} {theirs / ours:>8.2f}x {numpy_time / ours:>8.2f}x"
                )
        print()

    opgraph.set_num_threads(1)
    allocating, into_out, bare = call_overhead()
    print("per-call cost, 15-element conv1d (threads: 1)")
    print(f"  opgraph.ops.call, new output     {allocating * 1e6:6.2f} us")
    print(f"  opgraph.ops.call, out=           {into_out * 1e6:6.2f} us")
    print(f"  bare nanobind call, same args    {bare * 1e6:6.2f} us")
    print(
        f"  overhead over the bare call      {(allocating - bare) * 1e6:6.2f} us (new output),"
        f" {(into_out - bare) * 1e6:.2f} us (out=)"
    )


if __name__ == "__main__":
    main()
