// The host side of the package C ABI: what opgraph hands a package's init
// function, and the registrar that collects what the package declares.
#pragma once

#include <string>
#include <vector>

#include "opgraph/package/abi.h"
#include "opgraph/registry/registry.h"

struct og_error {
  std::string message;
};

struct og_registrar {
  std::string package;              // path, for messages
  const char* const* ns = nullptr;  // the namespace the init call reported
  std::vector<opgraph::OpDef> ops;
};

namespace opgraph::package {

const og_api_base* api_base();
// The ABI version the last failed get_api() call on this thread asked for.
std::pair<uint32_t, uint32_t> last_rejected_version();

}  // namespace opgraph::package
