// Declares a new op and one test_ops already has: loading it after test_ops
// must fail and register neither.
#include <opgraph/sdk.h>

namespace sdk = opgraph::sdk;

static sdk::Meta same_shape(sdk::Meta x) { return x; }
static void copy_cpu(sdk::OutputTensor, sdk::InputTensor) {}

OPGRAPH_LIBRARY(test_ops, m) {
  m.def("only_in_clash(Tensor x) -> Tensor", same_shape);
  m.impl("only_in_clash", sdk::Device::CPU, copy_cpu);
  m.def("fail(Tensor x) -> Tensor", same_shape);
}
