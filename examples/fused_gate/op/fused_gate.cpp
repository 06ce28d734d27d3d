// The fused_gate op package: out = sigmoid(gate) * value, elementwise, in one
// pass over memory (PyTorch eager makes two, with a temporary in between).
#include <opgraph/sdk.h>

#include <cmath>

namespace sdk = opgraph::sdk;

namespace {

sdk::Meta fused_gate_shape(sdk::Meta gate, sdk::Meta value) {
  OPGRAPH_SDK_CHECK(gate.dtype() == sdk::DType::Float32, "gate: expected float32, got ", gate.str());
  OPGRAPH_SDK_CHECK(value.dtype() == gate.dtype() && value.shape() == gate.shape(),
                    "value: expected the dtype and shape of gate (", gate.str(), "), got ", value.str());
  return gate;
}

// Work per element is small: chunks of 2^14 elements keep a thread's wake-up
// cost below its share of the work.
void fused_gate_cpu(sdk::OutputTensor out, sdk::InputTensor gate, sdk::InputTensor value, sdk::Context ctx) {
  const float* g = gate.data<float>();
  const float* v = value.data<float>();
  float* o = out.data<float>();
  ctx.parallel_for(0, gate.numel(), int64_t(1) << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = v[i] / (1.0f + std::exp(-g[i]));
  });
}

}  // namespace

OPGRAPH_LIBRARY(custom, m) {
  m.def("fused_gate(Tensor gate, Tensor value) -> Tensor", fused_gate_shape);
  m.impl("fused_gate", sdk::Device::CPU, fused_gate_cpu);
  // What `opgraph test-package` runs it on.
  using sdk::DType;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {0}, {5}, {3, 70000}}) {
    m.sample("fused_gate", {.inputs = {{DType::Float32, shape}, {DType::Float32, shape}}});
  }
  m.sample("fused_gate", {.inputs = {{DType::Float32, {4, 6}, sdk::Layout::Transposed}, {DType::Float32, {4, 6}}}});
  m.sample("fused_gate", {.inputs = {{DType::Float64, {3}}, {DType::Float64, {3}}},
                          .error = "gate: expected float32, got float64[3]"});
  m.sample("fused_gate", {.inputs = {{DType::Float32, {3}}, {DType::Float32, {4}}},
                          .error = "value: expected the dtype and shape of gate (float32[3]), got float32[4]"});
}
