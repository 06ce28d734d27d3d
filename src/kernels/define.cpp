#include "define.h"

#include <filesystem>

namespace opgraph::kernels {

void define(Registry& registry, OpSpec spec, std::source_location where) {
  OpDef op;
  op.schema = Schema::parse(spec.schema);
  op.shape_fn = std::move(spec.shape);
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = std::move(spec.cpu);
  op.reference = std::move(spec.reference);
  if (spec.backward) op.backward = spec.backward;
  op.accepts_strided_inputs = spec.accepts_strided_inputs;
  op.data_dependent_shapes = spec.data_dependent_shapes;
  op.source =
      detail::concat("built-in, ", std::filesystem::path(where.file_name()).filename().string(), ":", where.line());
  registry.add(std::move(op));
}

}  // namespace opgraph::kernels
