// opgraph._C's CUDA functions (wrapped by opgraph.cuda) and the device
// strings ("cpu", "cuda", "cuda:1") the bindings accept.
#include <nanobind/stl/string.h>

#include "convert.h"
#include "opgraph/core/device_backend.h"

namespace opgraph::python {

Device device_from_string(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return {DeviceType::CUDA, 0};
  if (text.starts_with("cuda:")) {
    const std::string index = text.substr(5);
    const bool digits =
        !index.empty() && index.size() < 6 && index.find_first_not_of("0123456789") == std::string::npos;
    if (digits) return {DeviceType::CUDA, std::stoi(index)};
  }
  throw Error(detail::concat("device: expected 'cpu', 'cuda' or 'cuda:N', got '", text, "'"));
}

void init_cuda(nb::module_& m) {
  m.def(
      "cuda_is_available", [] { return device_available(DeviceType::CUDA); },
      "Whether CUDA kernels can run here: the backend is built and loads, and the driver reports a device.");
  m.def(
      "cuda_unavailable_reason",
      [] {
        std::string why;
        device_available(DeviceType::CUDA, &why);
        return why;
      },
      "Why CUDA is not available (empty when it is).");
  m.def("cuda_device_count",
        [] { return device_available(DeviceType::CUDA) ? device_backend(DeviceType::CUDA).device_count() : 0; });
  m.def(
      "cuda_synchronize",
      [](int index) {
        nb::gil_scoped_release release;
        device_backend(DeviceType::CUDA).synchronize(index);
      },
      nb::arg("device") = 0, "Waits for the work opgraph queued on the device's current stream.");
  m.def(
      "cuda_current_stream",
      [](int index) { return reinterpret_cast<uintptr_t>(device_backend(DeviceType::CUDA).current_stream(index)); },
      nb::arg("device") = 0,
      "The calling thread's stream for the device, as an integer cudaStream_t (0: legacy default).");
  m.def(
      "cuda_set_stream",
      [](int index, uintptr_t stream) {
        check_device({DeviceType::CUDA, index});
        device_backend(DeviceType::CUDA).set_current_stream(index, reinterpret_cast<void*>(stream));
      },
      nb::arg("device"), nb::arg("stream"),
      "Sets the calling thread's stream for the device (an integer cudaStream_t, as torch's "
      "Stream.cuda_stream and CuPy's Stream.ptr give).");
}

}  // namespace opgraph::python
