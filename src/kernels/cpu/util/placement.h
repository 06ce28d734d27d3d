// The attributes that only say where and how a result lies (layout, device,
// memory_format), which factory and conversion ops carry: opgraph's results
// are always dense, contiguous CPU tensors, so each must be None or say so.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "kernels/define.h"

namespace opgraph::kernels {

// Whether `name` is None or one of `names`. Layout and MemoryFormat arrive as
// names with or without PyTorch's "torch." in front (torch.strided); a Device
// is printed without it ("cpu", "cpu:0").
inline bool none_or_one_of(std::optional<std::string_view> name, std::initializer_list<std::string_view> names,
                           bool torch_prefix) {
  if (!name) return true;
  std::string_view bare = *name;
  if (torch_prefix && bare.starts_with("torch.")) bare.remove_prefix(6);
  return std::find(names.begin(), names.end(), bare) != names.end();
}

inline void check_layout(std::optional<std::string_view> layout) {
  OPGRAPH_CHECK(none_or_one_of(layout, {"strided"}, true), "layout: expected None or strided, got \"", *layout, "\"");
}

inline void check_device(std::optional<std::string_view> device) {
  OPGRAPH_CHECK(none_or_one_of(device, {"cpu", "cpu:0"}, false), "device: expected None or cpu, got \"", *device, "\"");
}

inline void check_memory_format(std::optional<std::string_view> memory_format) {
  OPGRAPH_CHECK(none_or_one_of(memory_format, {"contiguous_format", "preserve_format"}, true),
                "memory_format: expected None, contiguous_format or preserve_format, got \"", *memory_format, "\"");
}

// Where an op's schema has each of those attributes, for the factory and
// conversion kernels that serve several schemas in the raw kernel form: found
// once, when the op is defined.
struct PlacementPositions {
  std::optional<size_t> layout, device, memory_format;
  explicit PlacementPositions(const Schema& schema)
      : layout(attribute_index(schema, "layout")),
        device(attribute_index(schema, "device")),
        memory_format(attribute_index(schema, "memory_format")) {}

  // Checks each of them the schema has in a call's attributes.
  void check(const Attrs& attrs) const {
    if (layout) check_layout(name_at(attrs, *layout));
    if (device) check_device(name_at(attrs, *device));
    if (memory_format) check_memory_format(name_at(attrs, *memory_format));
  }

  static std::optional<std::string_view> name_at(const Attrs& attrs, size_t i) {
    const auto* name = std::get_if<std::string>(&attrs[i]);
    return name ? std::optional<std::string_view>(*name) : std::nullopt;
  }
};

}  // namespace opgraph::kernels
