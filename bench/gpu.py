"""opgraph's CUDA kernels against PyTorch (cuBLAS, cuDNN) and CuPy on the GPU.

Rows (each timed in the same process, interleaved rounds, bench/timing.py;
every timed call ends with a device synchronization, so a row is the time
the GPU work takes, not the time to queue it):
  conv1d   examples::conv1d vs torch F.conv1d(F.pad(x, (0, k-1)), k) on CUDA and
           a CuPy reference (cupyx.scipy.signal.correlate where CuPy has it)
  gemm     opgraph::gemm (cuBLASLt) vs torch.mm (cuBLAS), float32 (no TF32 on
           either side) and bfloat16 (summed in float32)
  conv2d   opgraph::conv2d (im2col + cuBLASLt) vs torch F.conv2d (cuDNN), ResNet-18 layers,
           float32 without TF32 on either side
  call     the per-call cost of a tiny op from opgraph.ops.call and from the
           PyTorch bridge, against torch.add on CUDA
  kernels  where the time of the rows furthest from torch goes: the GPU time
           of each side's kernels per call (torch.profiler; CUPTI sees
           opgraph's kernels too), the rest of a row's time being the host's
Ratios above 1 mean opgraph is faster. Run with `python bench/conv1d.py
--device cuda`, `python bench/ops.py --device cuda`, or this file for all.
"""

import argparse
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from timing import interleaved

import opgraph
from opgraph.ops import call

ROOT = Path(__file__).resolve().parents[1]


def synchronized(fn):
    def run():
        fn()
        torch.cuda.synchronize()

    return run


# FLOPs per streaming multiprocessor and clock, by compute capability
# (NVIDIA's architecture whitepapers): float32 on the FMA units, bfloat16 on
# the tensor cores, dense. Times the SMs and the maximum clock, the peak.
FLOPS_PER_SM_CLOCK = {
    (8, 0): {torch.float32: 128, torch.bfloat16: 2048},
    (9, 0): {torch.float32: 256, torch.bfloat16: 4096},
}


def peak_tflops(dtype):
    """The device's peak for ``dtype`` in TFLOP/s, or None where this file does not know its architecture."""
    props = torch.cuda.get_device_properties()
    rates = FLOPS_PER_SM_CLOCK.get((props.major, props.minor))
    try:
        import cupy

        clock_khz = cupy.cuda.runtime.deviceGetAttribute(13, torch.cuda.current_device())  # cudaDevAttrClockRate
    except ImportError:
        return None
    return None if rates is None else rates[dtype] * props.multi_processor_count * clock_khz * 1e3 / 1e12


def of_peak(tflops, dtype):
    peak = peak_tflops(dtype)
    return f"{tflops / peak:>7.0%}" if peak else f"{'-':>7}"


def compare(*fns, budget=0.5):
    return [t.seconds for t in interleaved([synchronized(fn) for fn in fns], budget=budget)]


def conv1d_rows(sizes, kernels):
    opgraph.load_library(opgraph.build_package(ROOT / "examples" / "conv1d", target="conv1d"))
    try:
        import cupy
        from cupyx.scipy.signal import correlate
    except ImportError:
        cupy = None
    print(f"{'n':>10} {'k':>4} {'opgraph ms':>11} {'torch ms':>9} {'cupy ms':>9} {'vs torch':>9} {'vs cupy':>8}")
    for n in map(int, sizes):
        for k in kernels:
            x, kernel = torch.randn(n, device="cuda"), torch.randn(k, device="cuda")
            out = torch.empty_like(x)
            xt, kt = x.view(1, 1, n), kernel.view(1, 1, k)
            fns = [
                lambda: call("examples::conv1d", x, kernel, input_size=n, conv_size=k, out=out),
                lambda: F.conv1d(F.pad(xt, (0, k - 1)), kt),
            ]
            if cupy is not None:
                cx, ck = cupy.from_dlpack(x), cupy.from_dlpack(kernel)
                fns.append(lambda: correlate(cx, ck, mode="full")[k - 1 :])
            times = compare(*fns)
            expected = F.conv1d(F.pad(xt, (0, k - 1)), kt).view(n)
            torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3 * np.sqrt(k))
            cupy_ms = f"{times[2] * 1e3:>9.4f}" if len(times) > 2 else f"{'-':>9}"
            vs_cupy = f"{times[2] / times[0]:>7.2f}x" if len(times) > 2 else f"{'-':>8}"
            print(
                f"{n:>10} {k:>4} {times[0] * 1e3:>11.4f} {times[1] * 1e3:>9.4f} {cupy_ms} "
                f"{times[1] / times[0]:>8.2f}x {vs_cupy}"
            )


# Against torch.mm of the same dtype: float32 differs by the order of its
# sums; bfloat16, summed in float32 on both sides, also by the rounding of
# each result to bfloat16 (2^-8 relative).
GEMM_TOLERANCES = {torch.float32: dict(rtol=1e-3, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=1e-2)}


def gemm_rows():
    print(
        f"{'dtype':>9} {'m, k, n':>18} {'opgraph ms':>11} {'torch ms':>9} {'TFLOP/s':>8} {'torch TFLOP/s':>14} "
        f"{'of peak':>7} {'vs torch':>9}"
    )
    for dtype in GEMM_TOLERANCES:
        for m, k, n in [(4096, 4096, 4096), (64, 1024, 1024)]:
            a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            ours, theirs = compare(lambda: call("opgraph::gemm", a, b, None, out=out), lambda: torch.mm(a, b))
            torch.testing.assert_close(out, torch.mm(a, b), **GEMM_TOLERANCES[dtype])
            flops = 2 * m * k * n
            print(
                f"{str(dtype).removeprefix('torch.'):>9} {str((m, k, n)):>18} {ours * 1e3:>11.4f} "
                f"{theirs * 1e3:>9.4f} {flops / ours / 1e12:>8.2f} {flops / theirs / 1e12:>14.2f} "
                f"{of_peak(flops / ours / 1e12, dtype)} {theirs / ours:>8.2f}x"
            )


# ResNet-18's convolutions at batch 8: (channels in, out, size, kernel, stride).
RESNET18_LAYERS = [
    (3, 64, 224, 7, 2),
    (64, 64, 56, 3, 1),
    (64, 128, 56, 3, 2),
    (128, 128, 28, 3, 1),
    (128, 256, 28, 3, 2),
    (256, 256, 14, 3, 1),
    (256, 512, 14, 3, 2),
    (512, 512, 7, 3, 1),
]


def conv2d_rows(batch=8):
    print(f"{'layer':>26} {'opgraph ms':>11} {'torch ms':>9} {'TFLOP/s':>8} {'of peak':>7} {'vs torch':>9}")
    for c_in, c_out, size, kernel, stride in RESNET18_LAYERS:
        x = torch.randn(batch, c_in, size, size, device="cuda")
        w = torch.randn(c_out, c_in, kernel, kernel, device="cuda")
        padding = kernel // 2
        out = call("opgraph::conv2d", x, w, None, stride=[stride] * 2, padding=[padding] * 2)
        torch.testing.assert_close(out, F.conv2d(x, w, stride=stride, padding=padding), rtol=1e-3, atol=1e-2)
        ours, theirs = compare(
            lambda: call("opgraph::conv2d", x, w, None, stride=[stride] * 2, padding=[padding] * 2, out=out),
            lambda: F.conv2d(x, w, stride=stride, padding=padding),
        )
        tflops = 2 * out.numel() * c_in * kernel * kernel / ours / 1e12
        print(
            f"{f'{c_in}->{c_out} {size}x{size} k{kernel} s{stride}':>26} {ours * 1e3:>11.4f} "
            f"{theirs * 1e3:>9.4f} {tflops:>8.2f} {of_peak(tflops, torch.float32)} {theirs / ours:>8.2f}x"
        )


def call_rows():
    from opgraph.torch import CustomOpLibrary

    ops = CustomOpLibrary(opgraph.build_package(ROOT / "examples" / "conv1d", target="conv1d"))
    x, kernel = torch.randn(15, device="cuda"), torch.randn(4, device="cuda")
    out = torch.empty_like(x)
    times = compare(
        lambda: call("examples::conv1d", x, kernel, input_size=15, conv_size=4, out=out),
        lambda: ops.conv1d(x, kernel, input_size=15, conv_size=4),
        lambda: torch.add(x, x),
    )
    print("per-call cost, 15-element conv1d on CUDA (each call synchronized)")
    for label, seconds in zip(["opgraph.ops.call, out=", "PyTorch bridge (CustomOpLibrary)", "torch.add"], times):
        print(f"  {label:<34} {seconds * 1e6:8.2f} us")


def kernels_per_call(fn, calls=20):
    """{kernel name: GPU microseconds per call} of fn's kernels."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return {
        event.key: event.self_device_time_total / calls
        for event in profiler.key_averages()
        if event.self_device_time_total > 0
    }


def kernel_rows():
    a, b = torch.randn(64, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")
    x, w = torch.randn(8, 64, 56, 56, device="cuda"), torch.randn(64, 64, 3, 3, device="cuda")
    x7, w7 = torch.randn(8, 3, 224, 224, device="cuda"), torch.randn(64, 3, 7, 7, device="cuda")
    cases = {
        "gemm float32 (64, 1024, 1024)": (
            lambda: call("opgraph::gemm", a, b, None),
            lambda: torch.mm(a, b),
        ),
        "conv2d 64->64 56x56 k3 s1": (
            lambda: call("opgraph::conv2d", x, w, None, stride=[1, 1], padding=[1, 1]),
            lambda: F.conv2d(x, w, padding=1),
        ),
        "conv2d 3->64 224x224 k7 s2": (
            lambda: call("opgraph::conv2d", x7, w7, None, stride=[2, 2], padding=[3, 3]),
            lambda: F.conv2d(x7, w7, stride=2, padding=3),
        ),
    }
    for label, (ours, theirs) in cases.items():
        print(label)
        for side, fn in [("opgraph", ours), ("torch", theirs)]:
            kernels = kernels_per_call(fn)
            print(f"  {side:<8} {sum(kernels.values()):8.1f} us of GPU time per call")
            for name, us in sorted(kernels.items(), key=lambda item: -item[1])[:4]:
                print(f"    {us:8.1f} us  {name[:90]}")


def main(sections=("conv1d", "gemm", "conv2d", "call", "kernels"), sizes=(1e3, 1e5, 1e7, 1e8), kernels=(4, 31, 255)):
    if not opgraph.cuda.is_available() or not torch.cuda.is_available():
        raise SystemExit(
            f"bench/gpu.py needs a CUDA device: opgraph says '{opgraph.cuda.unavailable_reason()}', "
            f"torch.cuda.is_available() is {torch.cuda.is_available()}"
        )
    # opgraph's float32 products and convolutions use no TF32: neither may
    # torch's (its default for matmuls, not for cuDNN's convolutions).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    peaks = ", ".join(f"{str(t).removeprefix('torch.')} {peak_tflops(t) or 0:.0f}" for t in GEMM_TOLERANCES)
    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, float32 without TF32 on either side; "
        f"peak TFLOP/s at the maximum clock: {peaks}\n"
    )
    rows = {
        "conv1d": lambda: conv1d_rows(sizes, kernels),
        "gemm": gemm_rows,
        "conv2d": conv2d_rows,
        "call": call_rows,
        "kernels": kernel_rows,
    }
    for section in sections:
        rows[section]()
        print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", nargs="+", default=["conv1d", "gemm", "conv2d", "call", "kernels"])
    main(parser.parse_args().sections)
