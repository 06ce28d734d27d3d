// The attributes that only say where and how a result lies (layout, device,
// memory_format), which factory and conversion ops carry: opgraph's results
// are always dense, contiguous CPU tensors, so each must be None or say so.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

#include "kernels/define.h"

namespace opgraph::kernels {

// Whether `value` is None or one of `names`. Layout and MemoryFormat arrive
// as names with or without PyTorch's "torch." in front (torch.strided); a
// Device is printed without it ("cpu", "cpu:0").
inline bool none_or_one_of(const AttrValue& value, std::initializer_list<std::string_view> names, bool torch_prefix) {
  const auto* name = std::get_if<std::string>(&value);
  if (name == nullptr) return std::holds_alternative<std::monostate>(value);
  std::string_view bare = *name;
  if (torch_prefix && bare.starts_with("torch.")) bare.remove_prefix(6);
  return std::find(names.begin(), names.end(), bare) != names.end();
}

// Which of those attributes an op's schema has.
enum Placement : unsigned { kNone = 0, kLayout = 1, kDevice = 2, kMemoryFormat = 4 };

inline void check_placement(const Attrs& attrs, unsigned placement) {
  if (placement & kLayout) {
    const AttrValue& value = attrs.get("layout");
    OPGRAPH_CHECK(none_or_one_of(value, {"strided"}, true), "layout: expected None or strided, got ", attr_str(value));
  }
  if (placement & kDevice) {
    const AttrValue& value = attrs.get("device");
    OPGRAPH_CHECK(none_or_one_of(value, {"cpu", "cpu:0"}, false), "device: expected None or cpu, got ",
                  attr_str(value));
  }
  if (placement & kMemoryFormat) {
    const AttrValue& value = attrs.get("memory_format");
    OPGRAPH_CHECK(none_or_one_of(value, {"contiguous_format", "preserve_format"}, true),
                  "memory_format: expected None, contiguous_format or preserve_format, got ", attr_str(value));
  }
}

}  // namespace opgraph::kernels
