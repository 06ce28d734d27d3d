#include "opgraph/package/loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "host_api.h"
#include "opgraph/core/error.h"

namespace opgraph {
namespace {

std::mutex loader_mutex;
std::map<std::string, LoadedLibrary>& libraries() {
  static std::map<std::string, LoadedLibrary> loaded;
  return loaded;
}

// Closes the library unless release() was called: a failed load leaves
// nothing behind.
class LibraryHandle {
 public:
  explicit LibraryHandle(void* handle) : handle_(handle) {}
  ~LibraryHandle() {
    if (handle_) dlclose(handle_);
  }
  void* get() const { return handle_; }
  void release() { handle_ = nullptr; }

 private:
  void* handle_;
};

}  // namespace

const LoadedLibrary& load_library(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  OPGRAPH_CHECK(fs::is_regular_file(path, ec), "load_library: no such file: '", path, "'");
  const std::string canonical = fs::canonical(path, ec).string();

  std::lock_guard<std::mutex> lock(loader_mutex);
  if (auto it = libraries().find(canonical); it != libraries().end()) return it->second;

  dlerror();
  LibraryHandle handle(dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!handle.get()) {
    const char* reason = dlerror();
    throw Error(detail::concat("load_library: cannot load '", canonical, "': ", reason ? reason : "unknown error"));
  }
  auto init = reinterpret_cast<og_package_init_fn>(dlsym(handle.get(), OPGRAPH_PACKAGE_INIT_SYMBOL));
  OPGRAPH_CHECK(init != nullptr, "load_library: '", canonical, "' is not an opgraph op package: it does not export ",
                OPGRAPH_PACKAGE_INIT_SYMBOL,
                " (define its ops in an OPGRAPH_LIBRARY block and build it with "
                "opgraph_add_op_library)");

  const char* ns = nullptr;
  og_registrar registrar;
  registrar.package = canonical;
  registrar.ns = &ns;
  og_error error;
  const int32_t status = init(package::api_base(), &registrar, &error, &ns);
  if (status == OG_ABI_MISMATCH) {
    auto [major, minor] = package::last_rejected_version();
    throw Error(detail::concat("load_library: '", canonical, "' was built for op package ABI ", major, ".", minor,
                               "; this opgraph provides ABI ", OPGRAPH_ABI_VERSION_MAJOR, ".",
                               OPGRAPH_ABI_VERSION_MINOR, " and loads packages built for ", OPGRAPH_ABI_VERSION_MAJOR,
                               ".0 to ", OPGRAPH_ABI_VERSION_MAJOR, ".", OPGRAPH_ABI_VERSION_MINOR,
                               "; rebuild the package against this opgraph"));
  }
  OPGRAPH_CHECK(status == OG_OK, "load_library: '", canonical, "': ", error.message);
  OPGRAPH_CHECK(ns != nullptr && *ns, "load_library: '", canonical, "' did not report a namespace");

  LoadedLibrary info{canonical, ns, {}};
  for (const OpDef& op : registrar.ops) info.ops.push_back(op.schema.qualified_name());
  try {
    Registry::global().add(std::move(registrar.ops));
  } catch (const Error& e) {
    throw Error(detail::concat("load_library: '", canonical, "': ", e.what()));
  }
  // Registered kernels point into the library: it stays loaded for good.
  handle.release();
  return libraries().emplace(canonical, std::move(info)).first->second;
}

std::vector<LoadedLibrary> loaded_libraries() {
  std::lock_guard<std::mutex> lock(loader_mutex);
  std::vector<LoadedLibrary> out;
  for (const auto& entry : libraries()) out.push_back(entry.second);
  return out;
}

}  // namespace opgraph
