// The registry seen from Python: loading packages, listing ops, schemas.
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "convert.h"
#include "opgraph/core/device_backend.h"

namespace opgraph::python {

void init_registry(nb::module_& m) {
  nb::class_<Argument>(m, "Argument", "One argument or return of an op schema.")
      .def_ro("name", &Argument::name)
      .def_prop_ro("type", [](const Argument& a) { return a.type.str(); })
      .def_prop_ro("is_tensor", [](const Argument& a) { return a.type.is_tensor(); })
      .def_prop_ro("optional", [](const Argument& a) { return a.type.optional; })
      .def_ro("kwarg_only", &Argument::kwarg_only)
      .def_ro("alias", &Argument::alias)
      .def_prop_ro("has_default", [](const Argument& a) { return a.default_value.has_value(); })
      .def_prop_ro("default",
                   [](const Argument& a) {
                     OPGRAPH_CHECK(a.default_value.has_value(), "argument '", a.name, "' has no default");
                     return attr_to_python(*a.default_value);
                   })
      .def("__str__", &Argument::str)
      .def("__repr__", [](const Argument& a) { return "Argument(" + a.str() + ")"; });

  nb::class_<Schema>(m, "Schema", "An op schema in PyTorch's syntax.")
      .def_ro("namespace", &Schema::ns)
      .def_ro("name", &Schema::name)
      .def_ro("overload", &Schema::overload)
      .def_ro("arguments", &Schema::arguments)
      .def_ro("returns", &Schema::returns)
      .def_prop_ro("qualified_name", &Schema::qualified_name)
      .def("__str__", &Schema::str)
      .def("__repr__", [](const Schema& s) { return "Schema(" + s.str() + ")"; })
      .def("__eq__", [](const Schema& a, const Schema& b) { return a == b; }, nb::is_operator());

  m.def("parse_schema", &Schema::parse, nb::arg("text"),
        "Parses a schema such as 'ns::op(Tensor x, *, int k=1) -> Tensor'.");

  nb::class_<LoadedLibrary>(m, "LoadedLibrary", "An op package that has been loaded.")
      .def_ro("path", &LoadedLibrary::path)
      .def_ro("namespace", &LoadedLibrary::ns)
      .def_ro("ops", &LoadedLibrary::ops)
      .def("__repr__", [](const LoadedLibrary& l) {
        return "LoadedLibrary(namespace='" + l.ns + "', path='" + l.path + "', " + std::to_string(l.ops.size()) +
               " ops)";
      });

  m.def(
      "load_library", [](const nb::handle& path) { return load_library(nb::str(path).c_str()); }, nb::arg("path"),
      nb::rv_policy::copy,
      "Loads an op package (a shared library) and registers its ops. Loading the same file again is harmless.");
  m.def("loaded_libraries", &loaded_libraries);
  m.def(
      "load_packages",
      [](const std::vector<std::string>& packages, const std::vector<std::string>& search_paths) {
        load_packages(packages, search_paths);
      },
      nb::arg("packages"), nb::arg("search_paths") = std::vector<std::string>{},
      "Loads the op packages a graph names (paths, or names found as lib<name>.so in search_paths or among the "
      "loaded packages); the error names the package and every place looked in.");
  m.def("list_ops", [] { return Registry::global().list(); }, "Qualified names of every registered op, sorted.");
  m.def(
      "op_schema", [](const std::string& name) { return Registry::global().get(name).schema; }, nb::arg("name"),
      "The schema of a registered op; str() of it is the schema text.");
  m.def(
      "op_samples",
      [](const std::string& name) {
        const OpDef& op = Registry::global().get(name);
        nb::list samples;
        for (size_t s = 0; s < op.samples.size(); ++s) {
          const Sample& sample = op.samples[s];
          nb::list inputs;
          for (const Tensor& t : make_sample_inputs(sample, kSampleSeed + s)) {
            inputs.append(t.defined() ? to_numpy(t) : nb::none());
          }
          nb::dict attrs;
          for (const auto& [key, value] : sample.attrs) attrs[nb::str(key.c_str())] = attr_to_python(value);
          nb::dict entry;
          entry["inputs"] = inputs;
          entry["list_sizes"] = nb::cast(sample.list_sizes);
          entry["attrs"] = attrs;
          entry["tolerances"] =
              nb::make_tuple(sample_tolerance(sample, DType::Float32), sample_tolerance(sample, DType::Float64));
          entry["error"] = sample.error;
          entry["text"] = sample_str(sample);
          samples.append(entry);
        }
        return samples;
      },
      nb::arg("name"),
      "The op's declared samples (opgraph/registry/sample.h), each a dict: inputs (flat, NumPy arrays with the "
      "sample's layout, or None), list_sizes, attrs, tolerances (float32, float64), error ('' for a good "
      "sample), text. Values are drawn from a fixed seed per sample, as the native checks draw them.");
  m.def(
      "check_samples",
      [](const std::string& name) {
        const OpDef& op = Registry::global().get(name);
        std::vector<CheckResult> results;
        {
          nb::gil_scoped_release release;
          results = check_samples(op);
        }
        nb::list out;
        for (const CheckResult& r : results) {
          out.append(nb::make_tuple(check_name(r.check), r.sample, r.failure, r.skipped));
        }
        return out;
      },
      nb::arg("name"),
      "The native checks of the op's samples (opgraph/registry/conformance.h): a list of (check, sample index, "
      "failure ('' if it passed), skipped).");
  m.def(
      "op_backward", [](const std::string& name) { return Registry::global().get(name).backward; }, nb::arg("name"),
      "Qualified name of the op computing this op's gradients, or '' if it has none.");
  m.def(
      "op_devices",
      [](const std::string& name) {
        // A device's built-in kernels arrive with its backend: open it first.
        device_available(DeviceType::CUDA);
        const OpDef& op = Registry::global().get(name);
        std::vector<std::string> devices;
        for (int d = 0; d < kNumDeviceTypes; ++d) {
          if (op.kernels[d]) devices.emplace_back(device_type_name(DeviceType(d)));
        }
        return devices;
      },
      nb::arg("name"), "The device types ('cpu', 'cuda') a registered op has kernels for.");
  m.def("set_num_threads", &set_num_threads, nb::arg("num_threads"),
        "Sets the number of threads kernels use (the calling thread included).");
  m.def("get_num_threads", &get_num_threads);
  m.def("manual_seed", &manual_seed, nb::arg("seed"),
        "Restarts the stream of the random ops (rand, randn, randperm, native_dropout) from a seed, as "
        "torch.manual_seed does: the same calls then give the same values, whatever the thread count.");
  m.def(
      "get_cpu_capability", [] { return std::string(cpu_capability_name(cpu_capability())); },
      "The vector instructions the built-in kernels use: \"avx512\", \"avx2\" or \"default\" (baseline "
      "x86-64). The environment variable OPGRAPH_CPU_CAPABILITY, read once, lowers it.");
  m.def("cpu_has_bf16", &cpu_has_bf16,
        "Whether this CPU multiplies bfloat16 in hardware (AVX-512 BF16 or AMX), which Session(..., "
        "precision='bf16') needs. False below the \"avx512\" capability.");
  m.def("cpu_has_vnni", &cpu_has_vnni,
        "Whether this CPU sums products of bytes into 32-bit lanes in one instruction (AVX512-VNNI), on which "
        "Session(..., activations='int8') multiplies a few rows' int8 activations; elsewhere AVX2's byte "
        "multiply-adds take two. False below the \"avx512\" capability.");
}

}  // namespace opgraph::python
