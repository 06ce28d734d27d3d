"""opgraph ops inside PyTorch (opgraph.torch) against native aten ops.

Rows, all in this process:
  per-call cost of a tiny op, 16 float32 elements: the package op `add`
    (out = x + y, built here with cpp_extension.load_inline) through
    torch.ops, eager and under torch.compile, against torch.add; once with
    the Python kernels (bench_py::add) and once with the C++ kernels
    (bench_cpp::add, CustomOpLibrary(..., kernels="cpp"));
  conv1d through the bridge (destination-passing, as in the seed) against
    F.conv1d(F.pad(x, (0, k-1)), k), for the sizes of bench/conv1d.py, the
    two in interleaved rounds.
Each figure is a median per call (bench/timing.py). Ratios above 1 mean the
opgraph side is faster.
"""

import argparse
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from timing import interleaved, seconds_per_call

import opgraph
from opgraph import cpp_extension
from opgraph.torch import CustomOpLibrary

ROOT = Path(__file__).resolve().parents[1]

ADD_SOURCE = """
namespace sdk = opgraph::sdk;
static sdk::Meta add_shape(sdk::Meta x, sdk::Meta y) {
  OPGRAPH_SDK_CHECK(x.dtype() == sdk::DType::Float32 && y.dtype() == x.dtype() && y.shape() == x.shape(),
                    "expected two float32 tensors of one shape, got ", x.str(), " and ", y.str());
  return x;
}
static void add_cpu(sdk::OutputTensor out, sdk::InputTensor x, sdk::InputTensor y) {
  const float* a = x.data<float>();
  const float* b = y.data<float>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] + b[i];
}
OPGRAPH_LIBRARY(NAMESPACE, m) {
  m.def("add(Tensor x, Tensor y) -> Tensor", add_shape);
  m.impl("add", sdk::Device::CPU, add_cpu);
}
"""


def add_op(kernels):
    namespace = f"bench_{'py' if kernels == 'python' else kernels}"
    library = cpp_extension.load_inline(
        namespace, ADD_SOURCE.replace("NAMESPACE", namespace), build_directory=ROOT / "build" / "bench" / namespace
    )
    return CustomOpLibrary(library, kernels=kernels).add


def overhead_rows():
    x, y, out = torch.randn(16), torch.randn(16), torch.empty(16)
    eager = [("torch.add (aten)", seconds_per_call(lambda: torch.add(x, y)))]
    compiled_native = torch.compile(lambda a, b: torch.add(a, b), fullgraph=True)
    compiled = [("torch.compile(torch.add)", seconds_per_call(lambda: compiled_native(x, y)))]
    for kernels in ("python", "cpp"):
        op = add_op(kernels)
        add, add_out = op.functional, op[{}]
        torch.testing.assert_close(add(x, y), x + y)
        name = str(add).removesuffix(".default")
        eager += [
            (f"{name}, {kernels} kernels", seconds_per_call(lambda: add(x, y))),
            ("  ... under torch.inference_mode", _inference(lambda: seconds_per_call(lambda: add(x, y)))),
            ("  ... destination-passing: add[{}](out, x, y)", seconds_per_call(lambda: add_out(out, x, y))),
        ]
        compiled_ours = torch.compile(lambda a, b: add(a, b), fullgraph=True)
        torch.testing.assert_close(compiled_ours(x, y), compiled_native(x, y))
        compiled.append((f"torch.compile({name}), {kernels} kernels", seconds_per_call(lambda: compiled_ours(x, y))))
    eager.append(("opgraph.ops.call, no torch", seconds_per_call(lambda: opgraph.ops.call("bench_py::add", x, y))))
    return eager, compiled


def _inference(fn):
    # No autograd key: the call goes straight to the device kernel.
    with torch.inference_mode():
        return fn()


def conv1d_row(ops, n, k):
    x, kernel, out = torch.randn(n), torch.randn(k), torch.empty(n)
    conv1d = ops.conv1d[{"input_size": n, "conv_size": k}]
    xt, kt = x.view(1, 1, n), kernel.view(1, 1, k)
    ours, theirs = (
        t.seconds
        for t in interleaved([lambda: conv1d(out, x, kernel), lambda: F.conv1d(F.pad(xt, (0, k - 1)), kt)], budget=0.3)
    )
    torch.testing.assert_close(out, F.conv1d(F.pad(xt, (0, k - 1)), kt).view(n), rtol=1e-3, atol=1e-3 * np.sqrt(k))
    return ours, theirs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e5, 1e7])
    parser.add_argument("--kernels", type=int, nargs="+", default=[4, 31, 255])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--conv1d-kernels",
        choices=["python", "cpp"],
        default="python",
        help="the kernels conv1d is registered with (one choice per process)",
    )
    args = parser.parse_args()
    print(f"torch {torch.__version__}, float32\n")

    opgraph.set_num_threads(1)
    torch.set_num_threads(1)
    eager, compiled = overhead_rows()
    print("per-call cost, 16 elements (threads: 1)")
    for rows in (eager, compiled):
        base = rows[0][1]
        for name, seconds in rows:
            print(f"  {name:<48} {seconds * 1e6:8.2f} us {seconds / base:6.1f}x {rows[0][0]}")
    print()

    ops = CustomOpLibrary(
        opgraph.build_package(ROOT / "examples" / "conv1d", target="conv1d"), kernels=args.conv1d_kernels
    )
    for threads in args.threads:
        opgraph.set_num_threads(threads)
        torch.set_num_threads(threads)
        print(
            f"conv1d, destination-passing through the bridge ({args.conv1d_kernels} kernels) vs F.conv1d "
            f"(threads: opgraph "
            f"{opgraph.get_num_threads()}, torch {torch.get_num_threads()})"
        )
        print(f"{'n':>10} {'k':>4} {'bridge ms':>10} {'F.conv1d ms':>12} {'vs torch':>9}")
        for n in map(int, args.sizes):
            for k in args.kernels:
                ours, theirs = conv1d_row(ops, n, k)
                print(f"{n:>10} {k:>4} {ours * 1e3:>10.4f} {theirs * 1e3:>12.4f} {theirs / ours:>8.2f}x")
        print()


if __name__ == "__main__":
    main()
