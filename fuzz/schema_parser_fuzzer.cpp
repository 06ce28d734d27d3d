// libFuzzer target for the schema parser: any byte string either parses or
// throws opgraph::Error, and a schema that parses prints (Schema::str()) as
// text that parses back to the same schema. Anything else (a crash, a
// sanitizer report, another exception type, a round trip that changes the
// schema) is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "opgraph/core/error.h"
#include "opgraph/registry/schema.h"

namespace {

[[noreturn]] void finding(const char* what, std::string_view input, const std::string& printed) {
  std::fprintf(stderr, "schema_parser_fuzzer: %s\n  input:   %.*s\n  printed: %s\n", what,
               static_cast<int>(input.size()), input.data(), printed.c_str());
  std::abort();
}

// A nan default is unequal to itself, so such schemas are compared as text.
bool has_nan_default(const opgraph::Schema& schema) {
  for (const opgraph::Argument& argument : schema.arguments) {
    if (!argument.default_value) continue;
    if (const auto* value = std::get_if<double>(&*argument.default_value); value && std::isnan(*value)) return true;
    if (const auto* values = std::get_if<std::vector<double>>(&*argument.default_value)) {
      for (double value : *values) {
        if (std::isnan(value)) return true;
      }
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  opgraph::Schema schema;
  try {
    schema = opgraph::Schema::parse(text);
  } catch (const opgraph::Error&) {
    return 0;  // not a schema, reported as such
  }
  const std::string printed = schema.str();
  opgraph::Schema reparsed;
  try {
    reparsed = opgraph::Schema::parse(printed);
  } catch (const opgraph::Error& error) {
    finding(error.what(), text, printed);
  }
  if (reparsed.str() != printed) finding("the printed schema prints differently once parsed", text, printed);
  if (!has_nan_default(schema) && !(reparsed == schema)) {
    finding("the printed schema parses to another schema", text, printed);
  }
  return 0;
}
