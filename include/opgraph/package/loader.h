// Loading op packages (shared libraries built with the SDK in opgraph/sdk.h).
#pragma once

#include <string>
#include <vector>

namespace opgraph {

struct LoadedLibrary {
  std::string path;              // canonical path of the shared library
  std::string ns;                // the package's namespace
  std::vector<std::string> ops;  // qualified names of the ops it registered
};

// Loads the package at `path` and registers its ops. Loading the same file
// again returns the earlier result. A missing file, a library that is not an
// opgraph package, an ABI version mismatch or an op that is already
// registered raises opgraph::Error and leaves the registry as it was.
const LoadedLibrary& load_library(const std::string& path);
std::vector<LoadedLibrary> loaded_libraries();

// Loads each package in `packages`. A package is a path to a package file,
// or a name: "mylib" is found as libmylib.so, mylib.so or mylib in one of
// `search_paths` (folders, or package files with one of those names), or as
// a package already loaded from a file of one of those names. Throws
// opgraph::Error naming the package and every place it looked.
void load_packages(const std::vector<std::string>& packages, const std::vector<std::string>& search_paths);

}  // namespace opgraph
