// A sample for an op the package does not declare: the load must fail.
#include <opgraph/sdk.h>

namespace sdk = opgraph::sdk;

static sdk::Meta shape(sdk::Meta x) { return x; }

OPGRAPH_LIBRARY(test_bad_sample, m) {
  m.def("op(Tensor x) -> Tensor", shape);
  m.sample("other", {.inputs = {{sdk::DType::Float32, {3}}}});
}
