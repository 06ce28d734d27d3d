// Finding and loading the op packages a graph names.
#pragma once

#include <string>
#include <vector>

namespace opgraph {

// Loads each package in `packages`. A package is a path to a package file,
// or a name: "mylib" is found as libmylib.so, mylib.so or mylib in one of
// `search_paths` (folders, or package files with one of those names), or as
// a package already loaded from a file of one of those names. Throws
// opgraph::Error naming the package and every place it looked.
void load_packages(const std::vector<std::string>& packages, const std::vector<std::string>& search_paths);

}  // namespace opgraph
