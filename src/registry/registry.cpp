#include "opgraph/registry/registry.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "opgraph/core/error.h"

namespace opgraph {

void OpDef::finalize() {
  OPGRAPH_CHECK(!schema.ns.empty(), "op '", schema.qualified_name(),
                "' has no namespace; write it as ns::", schema.name, " (", source, ")");
  qualified_name_ = schema.qualified_name();
  tensor_arguments_.clear();
  num_tensor_lists_ = 0;
  for (size_t i = 0; i < schema.arguments.size(); ++i) {
    const Type& type = schema.arguments[i].type;
    if (!type.is_tensor()) continue;
    OPGRAPH_CHECK(!type.is_list || (!type.optional && !type.list_size), qualified_name_, ": argument '",
                  schema.arguments[i].name, "' is a ", type.str(),
                  "; the registry runs tensor arguments of type "
                  "Tensor, Tensor?, Tensor[] and Tensor?[] (",
                  source, ")");
    tensor_arguments_.push_back(i);
    num_tensor_lists_ += type.is_list;
  }
  for (const Argument& ret : schema.returns) {
    const bool list = ret.type.is_list && !ret.type.list_size && !ret.type.optional_elements;
    const bool scalar = !ret.type.is_list && !ret.type.optional &&
                        (ret.type.kind == Type::Kind::Int || ret.type.kind == Type::Kind::Float ||
                         ret.type.kind == Type::Kind::Bool || ret.type.kind == Type::Kind::Scalar);
    OPGRAPH_CHECK(scalar || (ret.type.is_tensor() && !ret.type.optional && (!list || schema.returns.size() == 1) &&
                             (list || !ret.type.is_list)),
                  qualified_name_, ": returns ", ret.type.str(),
                  "; the registry runs ops that return Tensors, "
                  "one Tensor[], or scalars (as 0-d tensors) (",
                  source, ")");
  }
  returns_list_ = schema.returns.size() == 1 && schema.returns[0].type.is_list;
  OPGRAPH_CHECK(static_cast<bool>(shape_fn), qualified_name_, ": no shape function (", source, ")");
}

size_t OpDef::num_inputs(const Attrs& attrs) const {
  size_t total = 0;
  for_each_tensor_argument(attrs, [&total](const Argument&, size_t, size_t count) { total += count; });
  return total;
}

std::string OpDef::input_name(size_t i, const Attrs& attrs) const {
  std::string name = "input " + std::to_string(i);
  for_each_tensor_argument(attrs, [&](const Argument& argument, size_t first, size_t count) {
    if (i < first || i >= first + count) return;
    name = argument.type.is_list ? detail::concat(argument.name, "[", i - first, "]") : argument.name;
  });
  return name;
}

void Registry::add(OpDef op) {
  std::vector<OpDef> batch;
  batch.push_back(std::move(op));
  add(std::move(batch));
}

void Registry::add(std::vector<OpDef> ops) {
  for (OpDef& op : ops) op.finalize();
  std::unique_lock lock(mutex_);
  std::unordered_set<std::string> batch_names;
  for (const OpDef& op : ops) {
    if (auto it = ops_.find(op.name()); it != ops_.end()) {
      throw Error(detail::concat("op '", op.name(), "' is already registered (by ", it->second->source,
                                 "); cannot register it again (from ", op.source, ")"));
    }
    OPGRAPH_CHECK(batch_names.insert(op.name()).second, "op '", op.name(), "' is declared twice (", op.source, ")");
  }
  for (const OpDef& op : ops) {
    if (op.backward.empty()) continue;
    OPGRAPH_CHECK(batch_names.count(op.backward) || ops_.count(op.backward), op.name(), ": its backward op '",
                  op.backward, "' is not declared (", op.source, ")");
  }
  for (OpDef& op : ops) {
    std::string name = op.name();
    ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(op)));
  }
}

void Registry::add_kernels(std::vector<KernelDef> kernels) {
  std::unique_lock lock(mutex_);
  std::vector<KernelFn*> slots;
  slots.reserve(kernels.size());
  for (KernelDef& def : kernels) {
    auto it = ops_.find(def.op);
    OPGRAPH_CHECK(it != ops_.end(), "cannot add a ", device_type_name(def.device), " kernel for op '", def.op, "' (",
                  def.source, "): no such op is declared");
    if (def.bind) def.kernel = def.bind(*it->second);
    KernelFn* slot = &it->second->kernels[static_cast<size_t>(def.device)];
    OPGRAPH_CHECK(!*slot && std::find(slots.begin(), slots.end(), slot) == slots.end(), "op '", def.op,
                  "' already has a ", device_type_name(def.device), " kernel; cannot add another (", def.source, ")");
    slots.push_back(slot);
  }
  for (size_t i = 0; i < kernels.size(); ++i) *slots[i] = std::move(kernels[i].kernel);
}

void Registry::add_samples(std::string_view op, std::vector<Sample> samples) {
  std::unique_lock lock(mutex_);
  auto it = ops_.find(op);
  OPGRAPH_CHECK(it != ops_.end(), "cannot add samples for op '", op, "': no such op is declared");
  auto& existing = it->second->samples;
  existing.insert(existing.end(), std::make_move_iterator(samples.begin()), std::make_move_iterator(samples.end()));
}

const OpDef* Registry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

const OpDef& Registry::get(std::string_view name) const {
  if (const OpDef* op = find(name)) return *op;
  // Suggest ops that share the name without the namespace or overload.
  std::string_view base = name.substr(name.rfind("::") == std::string_view::npos ? 0 : name.rfind("::") + 2);
  base = base.substr(0, base.find('.'));
  std::string similar;
  for (const std::string& known : list()) {
    if (!base.empty() && known.find(base) != std::string::npos) similar += (similar.empty() ? "" : ", ") + known;
  }
  throw Error(detail::concat(
      "unknown op '", name, "'",
      similar.empty() ? std::string("; load the package that provides it") : "; did you mean: " + similar));
}

std::vector<std::string> Registry::list() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> names;
  names.reserve(ops_.size());
  for (const auto& entry : ops_) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<ProductEngine> product_engine_from_name(std::string_view name) {
  if (name == "auto") return ProductEngine::Auto;
  if (name == "onednn") return ProductEngine::OneDnn;
  if (name == "mkl") return ProductEngine::Mkl;
  if (name == "panels") return ProductEngine::Panels;
  return std::nullopt;
}

std::optional<WeightQuantization> weight_format_from_name(std::string_view name) {
  if (name == "int8") return WeightQuantization{.bits = 8};
  if (name == "int4") return WeightQuantization{.bits = 4};
  if (name == "int8_asym") return WeightQuantization{.bits = 8, .symmetric = false};
  if (name == "int4_asym") return WeightQuantization{.bits = 4, .symmetric = false};
  return std::nullopt;
}

}  // namespace opgraph
