// Small ops that exercise each part of the SDK and the host ABI.
#include <opgraph/sdk.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sdk = opgraph::sdk;

namespace {

void check_float(const sdk::Meta& x, const char* name) {
  OPGRAPH_SDK_CHECK(x.dtype() == sdk::DType::Float32 || x.dtype() == sdk::DType::Float64, name,
                    ": expected float32 or float64, got ", x.str());
}

template <typename Fn>
void dispatch_float(sdk::DType dtype, Fn&& fn) {
  if (dtype == sdk::DType::Float32) {
    fn(float{});
  } else {
    fn(double{});
  }
}

sdk::Meta scale_shape(sdk::Meta x, double) {
  check_float(x, "x");
  return x;
}

void scale_cpu(sdk::OutputTensor out, sdk::InputTensor x, double factor) {
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<T>(in[i] * factor);
  });
}

// Gradient of scale: (grad_out, x, factor) -> grad_x.
sdk::Meta scale_backward_shape(sdk::Meta grad, sdk::Meta x, double) {
  OPGRAPH_SDK_CHECK(grad.shape() == x.shape(), "grad: expected ", x.str(), ", got ", grad.str());
  return x;
}

void scale_backward_cpu(sdk::OutputTensor grad_x, sdk::InputTensor grad, sdk::InputTensor, double factor) {
  scale_cpu(grad_x, grad, factor);
}

sdk::Meta add_bias_shape(sdk::Meta x, std::optional<sdk::Meta> bias) {
  OPGRAPH_SDK_CHECK(x.dtype() == sdk::DType::Float32, "x: expected float32, got ", x.str());
  if (bias) {
    OPGRAPH_SDK_CHECK(bias->dim() == 1 && bias->size(0) == x.size(-1) && bias->dtype() == x.dtype(),
                      "bias: expected float32[", x.size(-1), "], got ", bias->str());
  }
  return x;
}

void add_bias_cpu(sdk::OutputTensor out, sdk::InputTensor x, std::optional<sdk::InputTensor> bias) {
  const int64_t n = x.numel(), cols = x.dim() ? x.size(-1) : 1;
  for (int64_t i = 0; i < n; ++i) {
    out.data<float>()[i] = x.data<float>()[i] + (bias ? bias->data<float>()[i % cols] : 0.0f);
  }
}

std::vector<sdk::Meta> split_sign_shape(sdk::Meta x) {
  check_float(x, "x");
  return {x, x};
}

void split_sign_cpu(sdk::OutputTensor positive, sdk::OutputTensor negative, sdk::InputTensor x) {
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.numel(); ++i) {
      T v = x.data<T>()[i];
      positive.data<T>()[i] = v > 0 ? v : 0;
      negative.data<T>()[i] = v < 0 ? v : 0;
    }
  });
}

sdk::Meta same_shape(sdk::Meta x) { return x; }

void fail_cpu(sdk::OutputTensor, sdk::InputTensor x) { OPGRAPH_SDK_CHECK(false, "kernel refused ", x.meta().str()); }

// Writes each element's index from whichever host thread runs its chunk.
void parallel_iota_cpu(sdk::OutputTensor out, sdk::InputTensor, sdk::Context ctx) {
  int64_t* o = out.data<int64_t>();
  ctx.parallel_for(0, out.numel(), 1024, [&](int64_t begin, int64_t end) { std::iota(o + begin, o + end, begin); });
}

sdk::Meta parallel_iota_shape(sdk::Meta x) { return sdk::Meta(sdk::DType::Int64, x.shape()); }

// Echoes every attribute kind back as numbers, to check the ABI carries them.
sdk::Meta echo_attrs_shape(sdk::Meta, int64_t, double, bool, std::string_view, std::vector<int64_t>,
                           std::vector<double>, sdk::DType, std::optional<int64_t>) {
  return sdk::Meta(sdk::DType::Float64, {8});
}

void echo_attrs_cpu(sdk::OutputTensor out, sdk::InputTensor, int64_t i, double f, bool b, std::string_view s,
                    std::vector<int64_t> ints, std::vector<double> floats, sdk::DType dtype,
                    std::optional<int64_t> maybe) {
  double* o = out.data<double>();
  o[0] = static_cast<double>(i);
  o[1] = f;
  o[2] = b;
  o[3] = static_cast<double>(s.size());
  o[4] = static_cast<double>(std::accumulate(ints.begin(), ints.end(), int64_t{0}));
  o[5] = std::accumulate(floats.begin(), floats.end(), 0.0);
  o[6] = static_cast<double>(dtype);
  o[7] = maybe ? static_cast<double>(*maybe) : -1.0;
}

// Tensor[] arguments: out = bias + xs[0] * ys[0] + xs[1] * ys[1] + ..., two
// lists around an optional tensor, all float32 of one shape.
sdk::Meta sum_products_shape(std::vector<sdk::Meta> xs, std::optional<sdk::Meta> bias, std::vector<sdk::Meta> ys) {
  OPGRAPH_SDK_CHECK(!xs.empty(), "xs: expected at least one tensor");
  OPGRAPH_SDK_CHECK(ys.size() == xs.size(), "ys: expected ", xs.size(), " tensors like xs, got ", ys.size());
  const sdk::Meta expected(sdk::DType::Float32, xs[0].shape());
  auto check = [&](const sdk::Meta& meta, const char* name, size_t i) {
    OPGRAPH_SDK_CHECK(meta.dtype() == expected.dtype() && meta.shape() == expected.shape(), name, "[", i,
                      "]: expected ", expected.str(), ", got ", meta.str());
  };
  for (size_t i = 0; i < xs.size(); ++i) {
    check(xs[i], "xs", i);
    check(ys[i], "ys", i);
  }
  if (bias) check(*bias, "bias", 0);
  return expected;
}

void sum_products_cpu(sdk::OutputTensor out, sdk::InputTensorList xs, std::optional<sdk::InputTensor> bias,
                      sdk::InputTensorList ys) {
  float* o = out.data<float>();
  for (int64_t k = 0; k < out.numel(); ++k) o[k] = bias ? bias->data<float>()[k] : 0.0f;
  size_t i = 0;
  for (sdk::InputTensor x : xs) {
    const float* y = ys[i++].data<float>();
    for (int64_t k = 0; k < out.numel(); ++k) o[k] += x.data<float>()[k] * y[k];
  }
}

}  // namespace

// Which kernel the registry chose, told by each kernel in its own way: the
// CPU one writes its device index, the CUDA one (plain C++: the tests give it
// device pointers it never reads) fails with a message that names its device,
// after asking for scratch memory if told to.
void device_probe_cpu(sdk::Context context, sdk::OutputTensor out, sdk::InputTensor, bool) {
  std::fill_n(out.data<float>(), out.numel(), static_cast<float>(context.device_index()));
}

void device_probe_cuda(sdk::Context context, sdk::OutputTensor, sdk::InputTensor, bool use_scratch) {
  if (use_scratch) context.scratch<float>(16);
  throw sdk::Error(sdk::concat("the CUDA kernel ran for cuda:", context.device_index()));
}

OPGRAPH_LIBRARY(test_ops, m) {
  m.def("scale(Tensor x, *, float factor=2.0) -> Tensor", scale_shape, {.backward = "scale_backward"});
  m.impl("scale", sdk::Device::CPU, scale_cpu);
  m.def("scale_backward(Tensor grad, Tensor x, *, float factor=2.0) -> Tensor", scale_backward_shape);
  m.impl("scale_backward", sdk::Device::CPU, scale_backward_cpu);
  m.def("add_bias(Tensor x, Tensor? bias=None) -> Tensor", add_bias_shape);
  m.impl("add_bias", sdk::Device::CPU, add_bias_cpu);
  m.def("split_sign(Tensor x) -> (Tensor positive, Tensor negative)", split_sign_shape);
  m.impl("split_sign", sdk::Device::CPU, split_sign_cpu);
  m.def("fail(Tensor x) -> Tensor", same_shape);
  m.impl("fail", sdk::Device::CPU, fail_cpu);
  m.def("parallel_iota(Tensor x) -> Tensor", parallel_iota_shape);
  m.impl("parallel_iota", sdk::Device::CPU, parallel_iota_cpu);
  m.def(
      "echo_attrs(Tensor x, *, int i, float f, bool b, str s, int[] ints, float[] floats, "
      "ScalarType dtype, int? maybe=None) -> Tensor",
      echo_attrs_shape);
  m.impl("echo_attrs", sdk::Device::CPU, echo_attrs_cpu);
  m.def("sum_products(Tensor[] xs, Tensor? bias, Tensor[] ys) -> Tensor", sum_products_shape);
  m.impl("sum_products", sdk::Device::CPU, sum_products_cpu);
  // Takes its Tensor[] as a single tensor: every call is refused.
  m.def("list_as_tensor(Tensor[] xs) -> Tensor", same_shape);
  m.def("device_probe(Tensor x, *, bool use_scratch=False) -> Tensor", [](sdk::Meta x, bool) { return x; });
  m.impl("device_probe", sdk::Device::CPU, device_probe_cpu);
  m.impl("device_probe", sdk::Device::CUDA, device_probe_cuda);
}
