// opgraph.Session: running a graph (an .opg file or an opgraph.Graph) from Python.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace opgraph::python {
namespace {

std::string input_label(const Session& session, size_t i) {
  return i < session.inputs().size() ? "input '" + session.inputs()[i].name + "'" : "input " + std::to_string(i);
}

Tensor input_tensor(nb::handle value, const std::string& label, std::vector<InputArray>& keep) {
  std::optional<Tensor> tensor;
  try {
    tensor = borrow_input(value, keep);
  } catch (const Error& e) {
    throw Error(detail::concat(label, ": ", e.what()));
  }
  OPGRAPH_CHECK(tensor.has_value(), label, " must be an array (NumPy, PyTorch or any DLPack or buffer producer), got ",
                nb::type_name(value.type()).c_str());
  return *tensor;
}

Precision precision_from_string(const std::string& name) {
  if (name == "f32") return Precision::Float32;
  OPGRAPH_CHECK(name == "bf16", "precision: expected 'f32' or 'bf16', got '", name, "'");
  return Precision::BFloat16;
}

SessionOptions options_from_python(std::optional<int> threads, nb::handle package_paths, bool profile, bool optimize,
                                   std::vector<std::string> disabled_passes, const std::string& device,
                                   const std::string& precision, const std::optional<std::string>& quantize,
                                   std::optional<int64_t> group_size, const std::optional<std::string>& activations,
                                   const std::string& products) {
  SessionOptions options;
  options.device = device_from_string(device);
  options.precision = precision_from_string(precision);
  options.weights = weight_quantization_from_string("quantize", quantize, group_size, activations);
  const std::optional<ProductEngine> engine = product_engine_from_name(products);
  OPGRAPH_CHECK(engine, "products: expected 'auto', 'onednn', 'mkl' or 'panels', got '", products, "'");
  options.products = *engine;
  options.threads = threads.value_or(0);
  OPGRAPH_CHECK(!nb::isinstance<nb::str>(package_paths), "package_paths must be a sequence of paths, not one str");
  // Entries that are package locations (a library, a CMake project, a folder
  // of sources) are loaded by opgraph.package, the one place that resolves
  // them; the folders stay places to look for the graph's packages in.
  nb::object folders =
      nb::module_::import_("opgraph.package").attr("search_paths")(package_paths, "Session: package_paths");
  for (nb::handle path : nb::borrow<nb::iterable>(folders)) options.package_paths.push_back(path_string(path));
  options.profile = profile;
  options.optimize = optimize;
  options.disabled_passes = std::move(disabled_passes);
  return options;
}

void construct(Session* self, nb::handle source, nb::handle weights, std::optional<int> threads,
               nb::handle package_paths, bool profile, bool optimize, std::vector<std::string> disabled_passes,
               const std::string& device, const std::string& precision, const std::optional<std::string>& quantize,
               std::optional<int64_t> group_size, const std::optional<std::string>& activations,
               const std::string& products) {
  SessionOptions options = options_from_python(threads, package_paths, profile, optimize, std::move(disabled_passes),
                                               device, precision, quantize, group_size, activations, products);
  if (nb::isinstance<Graph>(source)) {
    // The session outlives the arrays given here: it keeps copies.
    std::vector<InputArray> keep;
    Weights tensors = weights_from_python(weights, /*copy=*/true, keep);
    Graph graph = nb::cast<Graph>(source);
    nb::gil_scoped_release release;
    new (self) Session(std::move(graph), std::move(tensors), std::move(options));
    return;
  }
  OPGRAPH_CHECK(weights.is_none(), "Session: weights are read from the .opg file; pass weights= only with a Graph");
  const std::string path = path_string(source);
  nb::gil_scoped_release release;
  new (self) Session(path, std::move(options));
}

nb::object run(const Session& session, nb::args args, State* state) {
  std::vector<InputArray> keep;
  std::vector<Tensor> outputs;
  ResultPlace place;
  if (args.size() == 1 && PyDict_Check(args[0].ptr())) {
    std::vector<std::pair<std::string, Tensor>> named;
    for (auto [key, value] : nb::borrow<nb::dict>(args[0])) {
      std::string name = nb::cast<std::string>(nb::str(key));
      Tensor tensor = input_tensor(value, "input '" + name + "'", keep);
      place.note(value, tensor);
      named.emplace_back(std::move(name), std::move(tensor));
    }
    {
      nb::gil_scoped_release release;
      outputs = session.run(named, state);
    }
    nb::dict result;
    for (size_t i = 0; i < outputs.size(); ++i) {
      result[nb::str(session.graph().outputs[i].c_str())] = place(outputs[i]);
    }
    return result;
  }
  // Arrays in graph order, given one by one or as one list or tuple (no
  // array type is a list or a tuple, so the two cannot be confused).
  const bool one_sequence = args.size() == 1 && (PyList_Check(args[0].ptr()) || PyTuple_Check(args[0].ptr()));
  std::vector<Tensor> inputs;
  for (nb::handle array : nb::borrow<nb::iterable>(one_sequence ? args[0] : nb::handle(args))) {
    inputs.push_back(input_tensor(array, input_label(session, inputs.size()), keep));
    place.note(array, inputs.back());
  }
  {
    nb::gil_scoped_release release;
    outputs = session.run(inputs, state);
  }
  nb::list result;
  for (const Tensor& output : outputs) result.append(place(output));
  return result;
}

// A host copy of a state's buffer, which later runs change.
nb::object state_value(const State& state, const std::string& name) {
  const Tensor buffer = state.get(name);
  return to_numpy(buffer.device().type == DeviceType::CPU ? buffer.clone() : buffer.to(Device::cpu()));
}

}  // namespace

void init_session(nb::module_& m) {
  nb::class_<State>(m, "State",
                    "The buffers of a graph's states (a KV cache, a recurrent carry) for one sequence or stream, made "
                    "by Session.new_state() and passed to its runs: run(..., state=s). Copies share the buffers.")
      .def("reset", &State::reset, "Every state back to its initial value (its initial constant, or zeros).")
      .def("__getitem__", &state_value, nb::arg("name"), "A copy of state `name` as it is now, as a NumPy array.")
      .def_prop_ro("values", &State::values, "The states as declared, their dimensions sized.");
  nb::class_<PassInfo>(m, "PassInfo", "A graph pass a Session makes at load (opgraph.graph_passes()).")
      .def_ro("name", &PassInfo::name)
      .def_ro("summary", &PassInfo::summary, "What it rewrites into what.")
      .def_prop_ro(
          "devices",
          [](const PassInfo& pass) {
            std::vector<std::string> names;
            for (DeviceType type : pass.devices) names.emplace_back(device_type_name(type));
            return names;
          },
          "The device types a Session makes it for ('cpu', 'cuda').");
  nb::class_<PassReport>(m, "PassReport", "What one graph pass did to a Session's graph at load.")
      .def_ro("name", &PassReport::pass, "The pass's name.")
      .def_ro("rewritten", &PassReport::rewritten, "The nodes it made or changed, as 'name: op'.")
      .def_ro("removed", &PassReport::removed, "How many nodes it dropped.")
      .def_ro("skipped", &PassReport::skipped, "Disabled, or not for the session's device.")
      .def_prop_ro("changed", &PassReport::changed);
  m.def("graph_passes", &graph_passes, nb::rv_policy::copy,
        "The graph passes a Session makes at load (Session(optimize=True)), in the order it makes them.");
  nb::class_<Session>(m, "Session",
                      "A graph loaded to run: packages loaded, ops and kernels resolved, shapes inferred and memory "
                      "planned once. run() may be called from several threads at once.")
      .def("__init__", &construct, nb::arg("source"), nb::kw_only(), nb::arg("weights") = nb::none(),
           nb::arg("threads") = nb::none(), nb::arg("package_paths") = nb::tuple(), nb::arg("profile") = false,
           nb::arg("optimize") = true, nb::arg("disabled_passes") = std::vector<std::string>(),
           nb::arg("device") = "cpu", nb::arg("precision") = "f32", nb::arg("quantize").none() = nb::none(),
           nb::arg("group_size").none() = nb::none(), nb::arg("activations").none() = nb::none(),
           nb::arg("products") = "auto",
           nb::sig("def __init__(self, source: str | os.PathLike | Graph, *, weights: dict[str, object] | None = None, "
                   "threads: int | None = None, package_paths: Sequence[str | os.PathLike] = (), "
                   "profile: bool = False, optimize: bool = True, disabled_passes: Sequence[str] = (), "
                   "device: str = 'cpu', precision: str = 'f32', quantize: str | None = None, "
                   "group_size: int | None = None, activations: str | None = None, products: str = 'auto') -> None"),
           "Loads an .opg file, or a Graph with `weights` (one array per constant; copied). `threads` counts the "
           "kernels' threads (None: the global pool); `package_paths` lists folders to find the graph's op packages "
           "in (an entry that is a package library, a CMake project or a folder of sources is loaded first, see "
           "opgraph.load_package); `profile` records each node's time in each run; `optimize` rewrites the graph "
           "at load to run faster, outputs the same up to float rounding: the passes of opgraph.graph_passes() for "
           "the device, but those named in `disabled_passes` (pass_reports says what each did). `device` ('cpu', "
           "'cuda', 'cuda:N') "
           "is where the graph runs: on a GPU every op needs a CUDA kernel, the weights are copied there, host "
           "inputs are copied in, and outputs come back to the host when the inputs came from it, else stay on the "
           "device in the inputs' framework (torch, CuPy). `precision` 'bf16' has the products with a weight (linear "
           "layers, matrix products, convolutions) multiply in bfloat16, summing in float32, as OpenVINO's bf16 "
           "inference precision does: about twice as fast, on a CPU with AVX-512 BF16 or AMX (else an error); "
           "inputs, outputs and the other ops stay float32. `quantize` 'int8' or 'int4' keeps the float32 weights "
           "of the matrix products (linear layers, the LM head) as int8 (symmetric) or int4 (as llama.cpp's Q4_0), "
           "with a float32 scale per `group_size` inputs (a multiple of 32 that divides each product's input "
           "dimension; None: per output channel for int8, 32 for int4): a quarter or an eighth of the bytes for a "
           "decoding step to stream; needs AVX2 or AVX-512. 'int8_asym' and 'int4_asym' add an int8 zero point per "
           "scale, each group's levels spanning its smallest weight to its largest (OpenVINO NNCF's INT8_ASYM and "
           "INT4_ASYM). `activations` 'int8' (with quantize, or on a file whose "
           "layers "
           "opgraph.quantize stored) also quantizes the products' other operand at run time and multiplies on the "
           "CPU's integer instructions: a few rows (a decoding step), and any rows by int4 or grouped weights, per "
           "row and block of 32 values to int8, as llama.cpp's Q8_0, on AVX512-VNNI or AVX2 (where the input "
           "dimension is a multiple of 32; else they stay float32); 16 rows or more (a prompt, an encoder's "
           "tokens) by int8 weights of a scale per output channel, per row to uint8 with a zero point, on oneDNN's "
           "int8 matmul (AMX-INT8 or AVX512-VNNI; without VNNI, per block of 32 as a few rows). With it, the "
           "dense 2-D convolutions of a CNN (not the first, which reads the input as given, nor those of a chain "
           "holding a grouped convolution) quantize their input per tensor (uint8 after a ReLU, int8 otherwise) "
           "and their weight per output channel to int8, on oneDNN's int8 convolutions (AVX2 or AVX-512). "
           "`products` picks the engine "
           "of the float32 products with a constant weight: 'auto' by shape and CPU (the panels for a few rows; for "
           "128 rows or more, whichever engine ran the shape fastest on this CPU model, measured on its first "
           "product and kept in ~/.cache/opgraph/engines, or $OPGRAPH_CACHE_DIR/engines), or 'onednn', 'mkl' or "
           "'panels' (opgraph's own) for every one that engine can take; node_engines says which each node got.")
      .def("run", &run, nb::arg("inputs"), nb::arg("state").none() = nb::none(),
           nb::sig("def run(self, *inputs: object, state: State | None = None) -> list[numpy.ndarray] | "
                   "dict[str, numpy.ndarray]"),
           "Runs the graph on its inputs, given as arrays in graph order (run(x, y)), one list or tuple of them "
           "(run([x, y])), or one dict of input name -> array (run({'x': x, 'y': y})). Returns a list of NumPy "
           "arrays in graph output order, or for a dict a dict of output name -> array. A wrong count, an unknown "
           "or missing name, or an array of the wrong dtype or shape is an opgraph.Error naming the graph's inputs. "
           "A graph with state runs with `state`, from new_state(), which the run reads and updates.")
      .def_prop_ro("states", &Session::states, "The graph's states as declared (StateInfo); empty for most graphs.")
      .def(
          "new_state",
          [](const Session& session, const nb::kwargs& sizes) {
            DimBindings dims;
            for (auto [name, size] : sizes) dims.emplace(nb::cast<std::string>(name), nb::cast<int64_t>(size));
            return session.new_state(dims);
          },
          nb::sig("def new_state(self, **sizes: int) -> State"),
          "A new set of the graph's state buffers at their initial values; `sizes` gives the symbolic dimensions "
          "of the states' shapes (new_state(B=1)). Each sequence or stream running at once needs its own.")
      .def_prop_ro("inputs", &Session::inputs, "The graph inputs: ValueInfo, symbolic dimensions as str.")
      .def_prop_ro("outputs", &Session::outputs, "The graph outputs, with their inferred dtypes and shapes.")
      .def_prop_ro("graph", &Session::graph, nb::rv_policy::copy)
      .def_prop_ro("node_engines", &Session::node_engines,
                   "By node of graph: the engines its products ran on so far, and why ('' for a node without "
                   "products, or before its first run).")
      .def_prop_ro("pass_reports", &Session::pass_reports,
                   "What each graph pass did at load, in order (empty with optimize=False).")
      .def_prop_ro("planned_peak_bytes", &Session::planned_peak_bytes,
                   "Bytes of the arena the memory plan of the latest run's shapes needs.")
      .def_prop_ro("naive_bytes", &Session::naive_bytes,
                   "Bytes the intermediate tensors of the latest run's shapes take with no reuse.")
      .def(
          "write_chrome_trace", [](const Session& s, nb::handle path) { s.write_chrome_trace(path_string(path)); },
          nb::arg("path"), "Writes the profile (Session(..., profile=True)) as Chrome trace-event JSON.");
}

}  // namespace opgraph::python
