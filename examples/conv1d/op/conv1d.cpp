// The conv1d op package: out[i] = sum_{j < conv_size, i + j < input_size}
// input[i + j] * kernel[j], zero past the end of the input, and its gradients.
#include <opgraph/sdk.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "conv1d_kernel.h"
#ifdef OPGRAPH_PACKAGE_HAS_CUDA
#include "conv1d_cuda.h"
#endif

namespace sdk = opgraph::sdk;

namespace {

void check_vector(const sdk::Meta& t, const char* name, const char* size_name, int64_t size) {
  OPGRAPH_SDK_CHECK(t.dim() == 1, name, ": expected rank 1, got ", t.str());
  OPGRAPH_SDK_CHECK(t.size(0) == size, name, ": expected shape [", size, "] (", size_name, "=", size, "), got ",
                    t.str());
}

void check_dtype_like(const sdk::Meta& t, const char* name, const sdk::Meta& input) {
  OPGRAPH_SDK_CHECK(t.dtype() == input.dtype(), name, ": expected ", sdk::dtype_name(input.dtype()),
                    " like input, got ", t.str());
}

sdk::Meta conv1d_shape(sdk::Meta input, sdk::Meta kernel, int64_t input_size, int64_t conv_size) {
  OPGRAPH_SDK_CHECK(input_size >= 0, "input_size: expected at least 0, got ", input_size);
  OPGRAPH_SDK_CHECK(conv_size >= 1, "conv_size: expected at least 1, got ", conv_size);
  OPGRAPH_SDK_CHECK(input.dtype() == sdk::DType::Float32 || input.dtype() == sdk::DType::Float64,
                    "input: expected float32 or float64, got ", input.str());
  check_dtype_like(kernel, "kernel", input);
  check_vector(input, "input", "input_size", input_size);
  check_vector(kernel, "kernel", "conv_size", conv_size);
  return input;
}

std::vector<sdk::Meta> conv1d_backward_shape(sdk::Meta grad_output, sdk::Meta input, sdk::Meta kernel,
                                             int64_t input_size, int64_t conv_size) {
  conv1d_shape(input, kernel, input_size, conv_size);
  check_dtype_like(grad_output, "grad_output", input);
  check_vector(grad_output, "grad_output", "input_size", input_size);
  return {input, kernel};
}

// Runs body over [0, n) on the host's threads, in chunks of at least 2^19
// multiply-adds (`work` per item): on smaller jobs, waking a thread costs
// more than it saves, so they run inline.
template <typename Body>
void parallel(const sdk::Context& ctx, int64_t n, int64_t work, Body body) {
  constexpr int64_t min_chunk_work = int64_t(1) << 19;
  ctx.parallel_for(0, n, std::max<int64_t>(1, min_chunk_work / std::max<int64_t>(work, 1)), std::move(body));
}

template <typename T>
void forward(sdk::OutputTensor out, sdk::InputTensor input, sdk::InputTensor kernel, int64_t n, int64_t kn,
             const sdk::Context& ctx) {
  const T* in = input.data<T>();
  const T* k = kernel.data<T>();
  T* o = out.data<T>();
  parallel(ctx, n, kn, [&](int64_t b, int64_t e) { conv1d::conv1d_forward(in, k, o, n, kn, b, e); });
}

template <typename T>
void backward(sdk::OutputTensor grad_input, sdk::OutputTensor grad_kernel, sdk::InputTensor grad_output,
              sdk::InputTensor input, sdk::InputTensor kernel, int64_t n, int64_t kn, const sdk::Context& ctx) {
  const T* g = grad_output.data<T>();
  const T* in = input.data<T>();
  const T* k = kernel.data<T>();
  T* gi = grad_input.data<T>();
  T* gk = grad_kernel.data<T>();
  parallel(ctx, n, kn, [&](int64_t b, int64_t e) { conv1d::conv1d_grad_input(g, k, gi, kn, b, e); });
  parallel(ctx, kn, n, [&](int64_t b, int64_t e) { conv1d::conv1d_grad_kernel(g, in, gk, n, b, e); });
}

// Calls fn(T{}) with T the element type: the shape functions have checked
// that it is float32 or float64.
template <typename Fn>
void on_element_type(sdk::DType dtype, Fn&& fn) {
  if (dtype == sdk::DType::Float32) {
    fn(float{});
  } else {
    fn(double{});
  }
}

// The shape functions have checked dtypes and sizes; inputs are contiguous.
void conv1d_cpu(sdk::OutputTensor out, sdk::InputTensor input, sdk::InputTensor kernel, int64_t input_size,
                int64_t conv_size, sdk::Context ctx) {
  on_element_type(input.dtype(),
                  [&](auto zero) { forward<decltype(zero)>(out, input, kernel, input_size, conv_size, ctx); });
}

void conv1d_backward_cpu(sdk::OutputTensor grad_input, sdk::OutputTensor grad_kernel, sdk::InputTensor grad_output,
                         sdk::InputTensor input, sdk::InputTensor kernel, int64_t input_size, int64_t conv_size,
                         sdk::Context ctx) {
  on_element_type(input.dtype(), [&](auto zero) {
    backward<decltype(zero)>(grad_input, grad_kernel, grad_output, input, kernel, input_size, conv_size, ctx);
  });
}

#ifdef OPGRAPH_PACKAGE_HAS_CUDA
// The same on the GPU (conv1d_cuda.cu), queued on the host's stream.
void conv1d_cuda(sdk::OutputTensor out, sdk::InputTensor input, sdk::InputTensor kernel, int64_t input_size,
                 int64_t conv_size, sdk::Context ctx) {
  on_element_type(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    conv1d::cuda::forward(input.data<T>(), kernel.data<T>(), out.data<T>(), input_size, conv_size, ctx.stream());
  });
}

void conv1d_backward_cuda(sdk::OutputTensor grad_input, sdk::OutputTensor grad_kernel, sdk::InputTensor grad_output,
                          sdk::InputTensor input, sdk::InputTensor kernel, int64_t input_size, int64_t conv_size,
                          sdk::Context ctx) {
  on_element_type(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    conv1d::cuda::backward(grad_output.data<T>(), input.data<T>(), kernel.data<T>(), grad_input.data<T>(),
                           grad_kernel.data<T>(), input_size, conv_size, ctx.stream());
  });
}
#endif

}  // namespace

// What `opgraph test-package` runs the ops on: sizes around the CUDA
// kernel's tiles (256 outputs and taps), both dtypes, and the inputs the shape
// functions refuse.
void declare_samples(sdk::Library& m) {
  using sdk::DType;
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (auto [n, kn] : {std::pair<int64_t, int64_t>{15, 4}, {1, 1}, {0, 3}, {257, 300}, {1000, 9}}) {
      m.sample("conv1d", {.inputs = {{dtype, {n}}, {dtype, {kn}}}, .attrs = {{"input_size", n}, {"conv_size", kn}}});
      m.sample("conv1d_backward", {.inputs = {{dtype, {n}}, {dtype, {n}}, {dtype, {kn}}},
                                   .attrs = {{"input_size", n}, {"conv_size", kn}}});
    }
  }
  auto bad = [&](const char* op, std::vector<sdk::SampleTensor> inputs, int64_t n, int64_t kn, const char* error) {
    m.sample(op, {.inputs = std::move(inputs), .attrs = {{"input_size", n}, {"conv_size", kn}}, .error = error});
  };
  bad("conv1d", {{DType::Int64, {15}}, {DType::Int64, {4}}}, 15, 4,
      "input: expected float32 or float64, got int64[15]");
  bad("conv1d", {{DType::Float32, {15}}, {DType::Float32, {3}}}, 15, 4,
      "kernel: expected shape [4] (conv_size=4), got float32[3]");
  bad("conv1d", {{DType::Float32, {15}}, {DType::Float32, {4}}}, 15, 0, "conv_size: expected at least 1, got 0");
  bad("conv1d_backward", {{DType::Float32, {14}}, {DType::Float32, {15}}, {DType::Float32, {4}}}, 15, 4,
      "grad_output: expected shape [15] (input_size=15), got float32[14]");
  bad("conv1d_backward", {{DType::Float64, {15}}, {DType::Float32, {15}}, {DType::Float32, {4}}}, 15, 4,
      "grad_output: expected float32 like input, got float64[15]");
}

OPGRAPH_LIBRARY(examples, m) {
  m.def("conv1d(Tensor input, Tensor kernel, *, int input_size, int conv_size) -> Tensor", conv1d_shape,
        {.backward = "conv1d_backward"});
  m.def(
      "conv1d_backward(Tensor grad_output, Tensor input, Tensor kernel, *, int input_size, "
      "int conv_size) -> (Tensor grad_input, Tensor grad_kernel)",
      conv1d_backward_shape);
  m.impl("conv1d", sdk::Device::CPU, conv1d_cpu);
  m.impl("conv1d_backward", sdk::Device::CPU, conv1d_backward_cpu);
#ifdef OPGRAPH_PACKAGE_HAS_CUDA
  m.impl("conv1d", sdk::Device::CUDA, conv1d_cuda);
  m.impl("conv1d_backward", sdk::Device::CUDA, conv1d_backward_cuda);
#endif
  declare_samples(m);
}
