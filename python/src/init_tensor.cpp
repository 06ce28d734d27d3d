// opgraph.Tensor and the DLPack protocol in both directions.
#include <dlpack/dlpack.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"
#include "opgraph/core/device_backend.h"

namespace opgraph::python {
namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

Tensor from_dlpack(nb::handle source) {
  if (nb::isinstance<Tensor>(source)) return nb::cast<Tensor>(source);
  nb::object capsule;
  if (PyCapsule_CheckExact(source.ptr())) {
    capsule = nb::borrow(source);
  } else if (nb::hasattr(source, "__dlpack__")) {
    capsule = source.attr("__dlpack__")();
  } else {
    throw Error(
        detail::concat("from_dlpack: expected an object with __dlpack__ (NumPy, PyTorch, JAX, CuPy) or a "
                       "DLPack capsule, got ",
                       nb::type_name(source.type()).c_str()));
  }
  OPGRAPH_CHECK(PyCapsule_IsValid(capsule.ptr(), kCapsuleName),
                "from_dlpack: expected an unconsumed 'dltensor' capsule, got one named '",
                PyCapsule_GetName(capsule.ptr()) ? PyCapsule_GetName(capsule.ptr()) : "", "'");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  // From here the tensor owns the DLManagedTensor, as the protocol says.
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  return Tensor::from_dlpack(managed);
}

// The DLPack stream handshake from the producer's side: the consumer names the
// stream it will read on (None or 1: the legacy default stream, -1: no
// synchronization wanted); if that is not the stream opgraph's work on the
// tensor was queued on, wait for that work first.
void ready_for_consumer(const Tensor& t, const nb::kwargs& kwargs) {
  if (t.device().type == DeviceType::CPU || !device_available(t.device().type)) return;
  intptr_t consumer = 1;
  if (kwargs.contains("stream") && !kwargs["stream"].is_none()) consumer = nb::cast<intptr_t>(kwargs["stream"]);
  if (consumer == -1) return;
  DeviceBackend& backend = device_backend(t.device().type);
  void* ours = backend.current_stream(t.device().index);
  const bool same = consumer == 1 ? ours == nullptr : reinterpret_cast<void*>(consumer) == ours;
  if (!same) {
    nb::gil_scoped_release release;
    backend.synchronize(t.device().index);
  }
}

nb::tuple as_tuple(const std::vector<int64_t>& values) {
  nb::list list;
  for (int64_t v : values) list.append(v);
  return nb::tuple(list);
}

}  // namespace

void init_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor",
                     "An n-dimensional array over owned or borrowed memory. Exchanges data with NumPy, "
                     "PyTorch and any DLPack producer without copying.")
      .def_prop_ro("shape", [](const Tensor& t) { return as_tuple(t.shape()); })
      .def_prop_ro(
          "strides", [](const Tensor& t) { return as_tuple(t.strides()); },
          "Strides in elements, as DLPack and PyTorch count them.")
      .def_prop_ro("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_prop_ro("device", [](const Tensor& t) { return device_str(t.device()); })
      .def_prop_ro("ndim", &Tensor::dim)
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def("numel", &Tensor::numel)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("contiguous", &Tensor::contiguous)
      .def(
          "to",
          [](const Tensor& t, const std::string& device) {
            nb::gil_scoped_release release;
            return t.to(device_from_string(device));
          },
          nb::arg("device"),
          "This tensor on `device` ('cpu', 'cuda', 'cuda:N'): itself when already there, else a copy.")
      .def("numpy", &to_numpy, "A NumPy array sharing this tensor's memory.")
      .def(
          "__array__", [](const Tensor& t, nb::handle, nb::handle) { return to_numpy(t); },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      // nanobind's ndarray speaks every DLPack version (read-write, versioned
      // capsules for consumers that ask for them): export through it.
      .def("__dlpack__",
           [](const Tensor& t, nb::args args, nb::kwargs kwargs) {
             ready_for_consumer(t, kwargs);
             return to_dlpack_producer(t).attr("__dlpack__")(*args, **kwargs);
           })
      .def("__dlpack_device__", [](const Tensor& t) { return to_dlpack_producer(t).attr("__dlpack_device__")(); })
      .def("__repr__", [](const Tensor& t) { return "opgraph.Tensor(" + t.str() + ")"; });

  m.def(
      "dtype_names",
      [] {
        std::vector<std::string> names;
        for (int i = 0; i < kNumDTypes; ++i) names.emplace_back(dtype_name(static_cast<DType>(i)));
        return names;
      },
      "opgraph's dtype names, in the order of their numbers in the package C ABI.");
  m.def("from_dlpack", &from_dlpack, nb::arg("array"),
        "Wraps any DLPack producer (or capsule) as an opgraph.Tensor, sharing its memory; the producer stays "
        "alive while the tensor does.");
  m.def(
      "empty",
      [](const std::vector<int64_t>& shape, const std::string& dtype, const std::string& device) {
        auto parsed = dtype_from_name(dtype);
        OPGRAPH_CHECK(parsed.has_value(), "empty: unknown dtype '", dtype, "'");
        return Tensor::empty(shape, *parsed, device_from_string(device));
      },
      nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("device") = "cpu",
      "A new uninitialized tensor: 64-byte aligned on the CPU, from the stream-ordered pool on a GPU.");
}

}  // namespace opgraph::python
