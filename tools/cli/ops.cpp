// opgraph ops: every registered op with its schema.
#include <iostream>

#include "commands.h"
#include "opgraph/package/loader.h"
#include "opgraph/registry/registry.h"

namespace opgraph::cli {
namespace {

int ops_main(const Args& args) {
  for (const std::string& path : args.values("--load")) load_library(path);
  const Registry& registry = Registry::global();
  for (const std::string& name : registry.list()) std::cout << registry.get(name).schema.str() << "\n";
  return 0;
}

}  // namespace

Command ops_command() {
  return {"ops",
          "",
          "list every registered op with its schema: the built-in ones and those of the packages given",
          "",
          {{"--load", "PACKAGE", "load an op package (a shared library) first", true}},
          ops_main};
}

}  // namespace opgraph::cli
