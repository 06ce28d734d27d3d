#include "kernels/cpu/util/prepared_weights.h"

namespace opgraph::kernels {

std::unique_ptr<KernelState> prepare_weights(const PrepareContext& context) {
  std::vector<bool> constant;
  for (const Tensor& input : context.constants) constant.push_back(input.defined());
  return std::make_unique<PreparedWeights>(std::move(constant), context.precision);
}

}  // namespace opgraph::kernels
