// JSON values quoted in error messages.
#pragma once

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "opgraph/core/error.h"

namespace opgraph {

// Short text for a JSON value: the value itself when it is a scalar or a
// short list of scalars, else its kind and size. It never recurses, since
// dump() would overflow the stack on a file that nests arrays a million deep.
inline std::string json_summary(const nlohmann::ordered_json& value) {
  if (value.is_structured()) {
    const bool flat = value.size() <= 8 &&
                      std::all_of(value.begin(), value.end(), [](const auto& item) { return item.is_primitive(); });
    if (!flat) {
      return value.is_array() ? detail::concat("[... ", value.size(), " items]")
                              : detail::concat("{... ", value.size(), " fields}");
    }
  }
  std::string text = value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

}  // namespace opgraph
