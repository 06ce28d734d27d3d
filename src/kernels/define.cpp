#include "define.h"

#include <filesystem>

namespace opgraph::kernels {

void BuiltinOps::add_samples(std::string_view op, const std::vector<Sample>& samples) {
  auto it = samples_.find(op);
  if (it == samples_.end()) it = samples_.emplace(std::string(op), std::vector<Sample>()).first;
  it->second.insert(it->second.end(), samples.begin(), samples.end());
}

const std::vector<Sample>& BuiltinOps::samples(std::string_view op) const {
  auto it = samples_.find(op);
  OPGRAPH_CHECK(it != samples_.end(), "built-in op '", op, "' has no samples yet");
  return it->second;
}

std::vector<OpDef> BuiltinOps::take() && {
  for (OpDef& op : ops_) {
    auto it = samples_.find(op.schema.qualified_name());
    if (it == samples_.end()) continue;
    op.samples = std::move(it->second);
    samples_.erase(it);
  }
  OPGRAPH_CHECK(samples_.empty(), "samples for built-in op '", samples_.begin()->first,
                "': no such built-in op is defined");
  return std::move(ops_);
}

void define(BuiltinOps& builtins, OpSpec spec, std::source_location where) {
  OpDef op;
  op.schema = Schema::parse(spec.schema);
  op.source =
      detail::concat("built-in, ", std::filesystem::path(where.file_name()).filename().string(), ":", where.line());
  op.shape_fn = spec.shape.bind(op.schema, op.source);
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = spec.cpu.bind(op.schema, "cpu kernel", op.source);
  op.reference = spec.reference.bind(op.schema, "reference kernel", op.source);
  if (spec.backward) op.backward = spec.backward;
  op.accepts_strided_inputs = spec.accepts_strided_inputs;
  op.data_dependent_shapes = spec.data_dependent_shapes;
  op.reshapes_input = spec.reshapes_input;
  op.in_place_input = spec.in_place_input;
  op.prepare = std::move(spec.prepare);
  builtins.add(std::move(op));
}

}  // namespace opgraph::kernels
