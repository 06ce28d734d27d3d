// Binding the attributes (non-tensor arguments) of a call to an op's schema.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opgraph/core/error.h"
#include "opgraph/registry/schema.h"

namespace opgraph {

// Attribute values by name, as a call gives them; the names are only read
// during bind().
using NamedAttrs = std::vector<std::pair<std::string_view, AttrValue>>;

// The non-tensor side of one call: the attribute values, one per non-tensor
// schema argument, in schema order, with defaults filled in and types
// checked; and the length of each Tensor[] argument, which shape functions
// and kernels need to split their flat inputs (see registry.h).
class Attrs {
 public:
  Attrs() = default;
  // `list_sizes` holds how many tensors each Tensor[] argument gets, in
  // schema order; schemas without one take none. Throws opgraph::Error naming
  // the op and argument for an unknown name, a missing required attribute, a
  // value of the wrong type or a missing list size.
  static Attrs bind(const Schema& schema, const NamedAttrs& given, std::span<const size_t> list_sizes = {});

  size_t size() const { return values_.size(); }
  const std::string& name(size_t i) const;
  const AttrValue& operator[](size_t i) const { return values_[i]; }
  const AttrValue& get(std::string_view name) const;
  // How many tensors each Tensor[] argument got, in schema order.
  std::span<const size_t> list_sizes() const { return list_sizes_; }

  template <typename T>
  const T& get(std::string_view name) const {
    const AttrValue& value = get(name);
    const T* typed = std::get_if<T>(&value);
    OPGRAPH_CHECK(typed != nullptr, "attribute '", name, "' holds ", attr_str(value), ", not the requested type");
    return *typed;
  }

 private:
  const Schema* schema_ = nullptr;
  std::vector<AttrValue> values_;
  std::vector<size_t> list_sizes_;
};

// The value of a Scalar (or float) attribute, which a call or a graph node
// may give as an int.
double scalar_attr(const Attrs& attrs, std::string_view name);

}  // namespace opgraph
