// A kernel whose parameters do not match its schema: the load must fail.
#include <opgraph/sdk.h>

namespace sdk = opgraph::sdk;

static sdk::Meta shape(sdk::Meta x, int64_t) { return x; }
static void kernel_missing_attr(sdk::OutputTensor, sdk::InputTensor) {}

OPGRAPH_LIBRARY(test_bad_arity, m) {
  m.def("op(Tensor x, *, int k) -> Tensor", shape);
  m.impl("op", sdk::Device::CPU, kernel_missing_attr);
}
