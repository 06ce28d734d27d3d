// Finding op packages by name or path and loading them.
#include <algorithm>
#include <filesystem>

#include "opgraph/core/error.h"
#include "opgraph/package/loader.h"

namespace opgraph {
namespace {

namespace fs = std::filesystem;

bool is_path(const std::string& package) {
  return package.find('/') != std::string::npos || fs::path(package).extension() == ".so";
}

// The file names a package name may have.
std::vector<std::string> file_names(const std::string& package) {
  if (is_path(package)) return {fs::path(package).filename().string()};
  return {"lib" + package + ".so", package + ".so", package};
}

std::string find_package(const std::string& package, const std::vector<std::string>& search_paths) {
  std::error_code ec;
  if (is_path(package) && fs::is_regular_file(package, ec)) return package;
  const std::vector<std::string> names = file_names(package);
  auto named = [&](const fs::path& file) {
    return std::find(names.begin(), names.end(), file.filename().string()) != names.end();
  };
  for (const std::string& search_path : search_paths) {
    if (fs::is_regular_file(search_path, ec)) {
      if (named(search_path)) return search_path;
      continue;
    }
    // A relative package path is tried below each folder too.
    for (const std::string& name : is_path(package) ? std::vector<std::string>{package} : names) {
      const fs::path candidate = fs::path(search_path) / name;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
  }
  for (const LoadedLibrary& library : loaded_libraries()) {
    if (named(library.path)) return library.path;
  }
  std::string looked_for, looked_in;
  for (const std::string& name : names) looked_for += (looked_for.empty() ? "" : ", ") + name;
  for (const std::string& search_path : search_paths) looked_in += (looked_in.empty() ? "" : ", ") + search_path;
  throw Error(detail::concat("op package '", package, "' not found: looked for ", looked_for, " in ",
                             looked_in.empty() ? std::string("no folders (package_paths is empty)") : looked_in,
                             "; add the folder that holds it to package_paths"));
}

}  // namespace

void load_packages(const std::vector<std::string>& packages, const std::vector<std::string>& search_paths) {
  for (const std::string& package : packages) load_library(find_package(package, search_paths));
}

}  // namespace opgraph
