// opgraph::Error and the check macro every layer uses to report bad input.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace opgraph {

// The one exception type opgraph throws. Messages say what was expected and
// what was given, and name the op and argument when there is one.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
}  // namespace detail

}  // namespace opgraph

// Throws opgraph::Error with the streamed arguments as message unless `cond`.
#define OPGRAPH_CHECK(cond, ...)                                      \
  do {                                                                \
    if (!(cond)) {                                                    \
      throw ::opgraph::Error(::opgraph::detail::concat(__VA_ARGS__)); \
    }                                                                 \
  } while (0)
