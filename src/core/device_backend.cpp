// Opens the CUDA backend library on first use. It sits next to libopgraph
// (installed together) and exports an entry point that checks the driver
// and the devices and returns the backend; the library hook then takes its
// kernels. A failure's message is kept and repeated to every later caller.
#include "opgraph/core/device_backend.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "opgraph/core/error.h"
#include "opgraph/core/tensor.h"

namespace opgraph {
namespace {

// What the backend library exports, with C linkage so dlsym finds it by name.
using OpenBackendFn = DeviceBackend* (*)(std::string* error);
constexpr const char* kCudaLibrary = "libopgraph_cuda.so";
constexpr const char* kCudaEntryPoint = "opgraph_cuda_backend_open";

std::atomic<BackendLibraryHook> library_hook{nullptr};

struct LoadedBackend {
  DeviceBackend* backend = nullptr;
  std::string why_not;
};

// Where libopgraph itself was loaded from; the backend library sits beside it.
std::filesystem::path core_library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&device_backend), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

LoadedBackend open_cuda_backend() {
  // OPGRAPH_CUDA_BACKEND names another build of the library (tests give a fake one, tests/cpp/fake_backend).
  const char* override_path = std::getenv("OPGRAPH_CUDA_BACKEND");
  const std::filesystem::path path =
      override_path ? std::filesystem::path(override_path) : core_library_directory() / kCudaLibrary;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return {nullptr, detail::concat("this opgraph was built without CUDA (no ", path.string(),
                                    "; configure with -DOPGRAPH_CUDA=ON where nvcc is installed)")};
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return {nullptr, detail::concat("cannot load ", path.string(), ": ", reason ? reason : "unknown error")};
  }
  auto open = reinterpret_cast<OpenBackendFn>(dlsym(handle, kCudaEntryPoint));
  if (open == nullptr) {
    dlclose(handle);
    return {nullptr, detail::concat(path.string(), " does not export ", kCudaEntryPoint)};
  }
  // The library stays loaded for the life of the process: its kernels are in the registry.
  LoadedBackend loaded;
  loaded.backend = open(&loaded.why_not);
  const BackendLibraryHook hook = library_hook.load();
  if (loaded.backend != nullptr && hook != nullptr) {
    try {
      hook(DeviceType::CUDA, handle);
    } catch (const std::exception& e) {
      return {nullptr, detail::concat("taking the kernels of ", path.string(), " failed: ", e.what())};
    }
  }
  return loaded;
}

const LoadedBackend& cuda_backend() {
  static const LoadedBackend loaded = open_cuda_backend();
  return loaded;
}

}  // namespace

void set_backend_library_hook(BackendLibraryHook hook) { library_hook = hook; }

DeviceBackend& device_backend(DeviceType type) {
  OPGRAPH_CHECK(type == DeviceType::CUDA, "device_backend: ", device_type_name(type), " has no device backend");
  const LoadedBackend& loaded = cuda_backend();
  OPGRAPH_CHECK(loaded.backend != nullptr, "CUDA is not available: ", loaded.why_not);
  return *loaded.backend;
}

bool device_available(DeviceType type, std::string* why) {
  if (type == DeviceType::CPU) return true;
  const LoadedBackend& loaded = cuda_backend();
  if (why != nullptr && loaded.backend == nullptr) *why = loaded.why_not;
  return loaded.backend != nullptr;
}

void check_device(Device device) {
  if (device.type == DeviceType::CPU) return;
  const int count = device_backend(device.type).device_count();
  OPGRAPH_CHECK(device.index >= 0 && device.index < count, "device ", device_str(device),
                " does not exist: this "
                "machine has ",
                count, " ", device_type_name(device.type), " device", count == 1 ? "" : "s");
}

}  // namespace opgraph
