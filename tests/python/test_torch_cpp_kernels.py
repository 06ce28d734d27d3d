"""CustomOpLibrary(..., kernels="cpp"): the ops' kernels registered with
PyTorch's dispatcher from C++ (built against the torch wheel with CMake)."""

from pathlib import Path

import pytest
import torch

from opgraph import cpp_extension
from opgraph.torch import CustomOpLibrary

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """
namespace sdk = opgraph::sdk;
static sdk::Meta shape(sdk::Meta x, std::optional<sdk::Meta> bias, double, int64_t, sdk::DType) {
  OPGRAPH_SDK_CHECK(x.dtype() == sdk::DType::Float32, "x: expected float32, got ", x.str());
  OPGRAPH_SDK_CHECK(!bias || bias->shape() == x.shape(), "bias: expected the shape of x, got ", bias->str());
  return x;
}
static void affine(sdk::OutputTensor out, sdk::InputTensor x, std::optional<sdk::InputTensor> bias, double scale,
                   int64_t shift, sdk::DType) {
  for (int64_t i = 0; i < x.numel(); ++i) {
    out.data<float>()[i] = scale * x.data<float>()[i] + shift + (bias ? bias->data<float>()[i] : 0.0f);
  }
}
static std::vector<sdk::Meta> halves_shape(sdk::Meta x) { return {x, x}; }
static void halves(sdk::OutputTensor low, sdk::OutputTensor high, sdk::InputTensor x) {
  for (int64_t i = 0; i < x.numel(); ++i) {
    low.data<float>()[i] = x.data<float>()[i] / 2;
    high.data<float>()[i] = x.data<float>()[i] * 2;
  }
}
OPGRAPH_LIBRARY(ext_cpp, m) {
  m.def("affine(Tensor x, Tensor? bias=None, *, float scale=1.0, int shift=0, ScalarType tag=float) -> Tensor", shape);
  m.impl("affine", sdk::Device::CPU, affine);
  m.def("halves(Tensor x) -> (Tensor low, Tensor high)", halves_shape);
  m.impl("halves", sdk::Device::CPU, halves);
}
"""


@pytest.fixture(scope="module")
def ops():
    library = cpp_extension.load_inline("ext_cpp", SOURCE, build_directory=ROOT / "build" / "extensions" / "ext_cpp")
    with pytest.MonkeyPatch.context() as patch:  # the C++ kernels' build is cached with the others
        patch.setenv("OPGRAPH_CACHE_DIR", str(ROOT / "build" / "cache"))
        return CustomOpLibrary(library, kernels="cpp")


def test_kernels_are_cpp_functions(ops):
    for op in ("ext_cpp::affine", "ext_cpp::affine.out"):
        cpu = [line for line in torch._C._dispatch_dump(op).splitlines() if line.startswith("CPU:")]
        assert len(cpu) == 1 and "torch_kernels.cpp" in cpu[0]


def test_functional_out_and_attributes(ops):
    x, bias = torch.randn(2, 3), torch.randn(2, 3)
    torch.testing.assert_close(ops.affine(x, bias, scale=2.0, shift=3, tag=torch.float64), 2 * x + 3 + bias)
    torch.testing.assert_close(ops.affine(x), x)
    out = torch.zeros(3, 2).t()  # strided: the result is copied in
    assert ops.affine[{"scale": -1.0}](out, x) is out
    torch.testing.assert_close(out, -x)
    low, high = ops.halves(x)
    torch.testing.assert_close((low, high), (x / 2, x * 2))
    outputs = (torch.empty(2, 3), torch.empty(2, 3))
    ops.halves[{}](*outputs, x)
    torch.testing.assert_close(outputs, (x / 2, x * 2))


def test_errors_name_the_op(ops):
    with pytest.raises(RuntimeError, match=r"ext_cpp::affine: x: expected float32, got float64\[2\]"):
        ops.affine(torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"ext_cpp::affine: output 0 must be float32\[2\], got float32\[3\]"):
        ops.affine[{}](torch.empty(3), torch.ones(2))


def test_opcheck_and_compile(ops):
    x, bias = torch.randn(4), torch.randn(4)
    torch.library.opcheck(torch.ops.ext_cpp.affine.default, (x, bias), dict(scale=0.5, shift=1))
    torch.library.opcheck(torch.ops.ext_cpp.halves.out, (x,), dict(low=torch.empty(4), high=torch.empty(4)))
    compiled = torch.compile(lambda a: ops.affine(a, scale=3.0).relu(), backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), (3 * x).relu())
