#include "model.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "opgraph/core/npy.h"
#include "report.h"

namespace opgraph::cli {

Flag package_path_flag() {
  return {"--package-path", "DIR",
          "where to find the op packages the graph names: a folder or a package file (the model's folder is "
          "searched last)",
          true};
}
Flag threads_flag() {
  return {"--threads", "N", "intra-op threads, the calling thread included (default: every core)"};
}
Flag precision_flag() {
  return {"--precision", "P",
          "f32 (default) or bf16: the products with a weight multiply in bfloat16, summing in float32 (needs AVX-512 "
          "BF16 or AMX)"};
}
Flag weights_flag() {
  return {"--weights", "W",
          "f32 (default), int8, int4, int8_asym or int4_asym: the products with a weight (linear layers, the LM "
          "head) keep it as int8 or int4 (as llama.cpp's Q4_0) with a float32 scale per --group-size inputs, and "
          "with _asym an int8 zero point beside each scale (needs AVX2 or AVX-512)"};
}
Flag group_size_flag() {
  return {"--group-size", "G",
          "with --weights: inputs sharing a scale, a multiple of 32 (default: all of them for int8, 32 for int4)"};
}
Flag activations_flag() {
  return {"--activations", "A",
          "f32 (default) or int8: with --weights (or the layers of opgraph quantize), products quantize their input "
          "at run time and multiply on the CPU's integer instructions: a few rows, and any rows by int4 or grouped "
          "weights, per row and block of 32 to int8 (AVX512-VNNI or AVX2); 16 rows or more by int8 weights per "
          "channel, per row to uint8 (AMX-INT8, AVX512-VNNI; without VNNI per block of 32); and a CNN's dense "
          "convolutions after the first, their input per tensor and weight per channel (AVX2 or AVX-512)"};
}
Flag products_flag() {
  return {"--products", "E",
          "auto (default), onednn, mkl or panels: the engine of the float32 products with a constant weight (auto: "
          "the panels for a few rows; for 128 rows or more, the engine measured the fastest for the shape on this "
          "CPU model, kept in ~/.cache/opgraph/engines)"};
}
Flag disable_pass_flag() {
  return {"--disable-pass", "NAME", "leave out the graph pass NAME at load (opgraph inspect --passes lists them)",
          true};
}
Flag input_flag() { return {"--input", "NAME=FILE", "feed graph input NAME from a .npy file", true}; }
Flag dim_flag() {
  return {"--dim", "SYMBOL=SIZE", "the size of a symbolic dimension of the inputs or states, e.g. --dim N=8", true};
}

namespace {

size_t input_index(const Session& session, const std::string& name) {
  const std::vector<ValueInfo>& inputs = session.inputs();
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].name == name) return k;
  }
  std::vector<std::string> names;
  for (const ValueInfo& input : inputs) names.push_back(input.name);
  throw Error(detail::concat("--input ", name, "=...: no input named '", name,
                             "'; the graph's inputs are: ", joined(names, "none")));
}

// The symbolic dimensions of the inputs, in order of appearance.
// The symbols of the inputs' and the states' shapes, in order of appearance.
std::vector<std::string> input_symbols(const Session& session) {
  std::vector<std::string> symbols;
  auto add = [&](const ValueInfo& value) {
    for (const Dim& dim : value.shape) {
      if (dim.is_symbolic() && std::find(symbols.begin(), symbols.end(), dim.symbol) == symbols.end()) {
        symbols.push_back(dim.symbol);
      }
    }
  };
  for (const ValueInfo& input : session.inputs()) add(input);
  for (const StateInfo& state : session.states()) add(state.value);
  return symbols;
}

DimBindings dims_from_flags(const Session& session, const Args& args) {
  const std::vector<std::string> symbols = input_symbols(session);
  DimBindings dims;
  for (const std::string& text : args.values("--dim")) {
    const auto [symbol, size] = split_assignment("--dim", text, "SYMBOL=SIZE");
    OPGRAPH_CHECK(
        std::find(symbols.begin(), symbols.end(), symbol) != symbols.end(), "--dim ", text,
        ": no input or state has the dimension '", symbol, "'",
        symbols.empty() ? std::string("; their shapes are static") : "; their symbols are: " + joined(symbols));
    OPGRAPH_CHECK(dims.emplace(symbol, parse_integer("--dim " + symbol, size, 0)).second, "--dim: ", symbol,
                  " is given twice");
  }
  return dims;
}

// Random values of the tensor's dtype: normally distributed floating-point
// numbers, and integers and bools that are 0 or 1, which are valid wherever
// an op expects an index or a mask.
void fill_random(const Tensor& t, std::mt19937& generator) {
  std::normal_distribution<float> normal;
  std::bernoulli_distribution coin;
  auto fill = [&](auto* data, auto draw) {
    for (int64_t i = 0; i < t.numel(); ++i) data[i] = draw();
  };
  switch (t.dtype()) {
    case DType::Float32: return fill(t.data_ptr<float>(), [&] { return normal(generator); });
    case DType::Float64: return fill(t.data_ptr<double>(), [&] { return double(normal(generator)); });
    case DType::Float16:
      return fill(static_cast<_Float16*>(t.data()), [&] { return static_cast<_Float16>(normal(generator)); });
    case DType::BFloat16:  // bfloat16 is the upper half of a float32
      return fill(static_cast<uint16_t*>(t.data()), [&] {
        const float value = normal(generator);
        uint32_t bits;
        std::memcpy(&bits, &value, sizeof(bits));
        return static_cast<uint16_t>(bits >> 16);
      });
    case DType::Int8: return fill(t.data_ptr<int8_t>(), [&] { return int8_t(coin(generator)); });
    case DType::UInt8: return fill(t.data_ptr<uint8_t>(), [&] { return uint8_t(coin(generator)); });
    case DType::Int32: return fill(t.data_ptr<int32_t>(), [&] { return int32_t(coin(generator)); });
    case DType::Int64: return fill(t.data_ptr<int64_t>(), [&] { return int64_t(coin(generator)); });
    case DType::Bool: return fill(t.data_ptr<bool>(), [&] { return coin(generator); });
    case DType::Complex64:
      return fill(t.data_ptr<std::complex<float>>(),
                  [&] { return std::complex<float>(normal(generator), normal(generator)); });
    case DType::Complex128:
      return fill(t.data_ptr<std::complex<double>>(),
                  [&] { return std::complex<double>(normal(generator), normal(generator)); });
  }
}

// Sizes the symbols of `declared` from the input read from `file`; a size
// already bound (by --dim or an earlier file) must agree. A file of the wrong
// rank is left to Session::run, which says what it expects.
void bind_symbols(const ValueInfo& declared, const Tensor& input, const std::string& file, DimBindings& dims) {
  if (input.dim() != static_cast<int64_t>(declared.shape.size())) return;
  for (size_t d = 0; d < declared.shape.size(); ++d) {
    const Dim& dim = declared.shape[d];
    if (!dim.is_symbolic()) continue;
    const auto [bound, added] = dims.emplace(dim.symbol, input.shape()[d]);
    OPGRAPH_CHECK(added || bound->second == input.shape()[d], "input '", declared.name, "' (", file, ", ", input.str(),
                  ") has ", dim.symbol, " = ", input.shape()[d], ", but ", dim.symbol, " is ", bound->second,
                  " (from --dim or an earlier input)");
  }
}

Tensor random_input(const ValueInfo& input, const DimBindings& dims, std::mt19937& generator) {
  Shape shape;
  for (const Dim& dim : input.shape) {
    if (!dim.is_symbolic()) {
      shape.push_back(dim.size);
      continue;
    }
    auto size = dims.find(dim.symbol);
    OPGRAPH_CHECK(size != dims.end(), "input '", input.name, "' (", input.type_str(), ") has the symbolic dimension '",
                  dim.symbol, "'; give its size with --dim ", dim.symbol, "=SIZE");
    shape.push_back(size->second);
  }
  Tensor tensor = Tensor::empty(shape, input.dtype);
  fill_random(tensor, generator);
  return tensor;
}

}  // namespace

SessionOptions session_options(const Args& args) {
  SessionOptions options;
  options.threads = static_cast<int>(args.integer("--threads", 0, 1));
  if (args.has("--precision")) {
    const std::string& precision = args.values("--precision").back();
    if (precision != "f32" && precision != "bf16") {
      throw UsageError(detail::concat("--precision: expected f32 or bf16, got '", precision, "'"));
    }
    options.precision = precision == "bf16" ? Precision::BFloat16 : Precision::Float32;
  }
  if (args.has("--weights")) {
    const std::string& weights = args.values("--weights").back();
    const std::optional<WeightQuantization> format = weight_format_from_name(weights);
    if (weights != "f32" && !format) {
      throw UsageError(
          detail::concat("--weights: expected f32, int8, int4, int8_asym or int4_asym, got '", weights, "'"));
    }
    if (format) options.weights = *format;
  }
  options.weights.group_size = args.integer("--group-size", default_group_size(options.weights.bits), 32);
  if (args.has("--group-size") && options.weights.bits == 0) {
    throw UsageError("--group-size: given without --weights int8 or int4");
  }
  if (args.has("--activations")) {
    const std::string& activations = args.values("--activations").back();
    if (activations != "f32" && activations != "int8") {
      throw UsageError(detail::concat("--activations: expected f32 or int8, got '", activations, "'"));
    }
    options.weights.int8_activations = activations == "int8";
  }
  if (args.has("--products")) {
    const std::string& products = args.values("--products").back();
    const std::optional<ProductEngine> engine = product_engine_from_name(products);
    if (!engine) {
      throw UsageError(detail::concat("--products: expected auto, onednn, mkl or panels, got '", products, "'"));
    }
    options.products = *engine;
  }
  const std::span<const std::string> paths = args.values("--package-path");
  options.package_paths.assign(paths.begin(), paths.end());
  const std::span<const std::string> disabled = args.values("--disable-pass");
  options.disabled_passes.assign(disabled.begin(), disabled.end());
  return options;
}

State model_state(const Session& session, const Args& args, const std::vector<Tensor>& inputs) {
  if (session.states().empty()) return State();
  DimBindings dims = dims_from_flags(session, args);
  for (size_t k = 0; k < inputs.size(); ++k) bind_symbols(session.inputs()[k], inputs[k], "", dims);
  DimBindings sizes;  // those of the states' symbols
  for (const StateInfo& state : session.states()) {
    for (const Dim& dim : state.value.shape) {
      auto size = dims.find(dim.symbol);
      OPGRAPH_CHECK(!dim.is_symbolic() || size != dims.end(), "state '", state.value.name, "' is ",
                    state.value.type_str(), ": give the size of '", dim.symbol, "' with --dim ", dim.symbol, "=SIZE");
      if (dim.is_symbolic()) sizes.emplace(dim.symbol, size->second);
    }
  }
  return session.new_state(sizes);
}

std::vector<Tensor> model_inputs(const Session& session, const Args& args, bool random_fill) {
  const std::vector<ValueInfo>& declared = session.inputs();
  std::vector<Tensor> inputs(declared.size());
  std::vector<std::string> files(declared.size());
  for (const std::string& text : args.values("--input")) {
    const auto [name, file] = split_assignment("--input", text, "NAME=FILE");
    const size_t k = input_index(session, name);
    OPGRAPH_CHECK(!inputs[k].defined(), "--input: input '", name, "' is given twice");
    inputs[k] = read_npy(file);
    files[k] = file;
  }
  DimBindings dims = dims_from_flags(session, args);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].defined()) bind_symbols(declared[k], inputs[k], files[k], dims);
  }
  std::mt19937 generator(0);  // the same inputs on every run of the tool
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].defined()) continue;
    OPGRAPH_CHECK(random_fill, "input '", declared[k].name, "' (", declared[k].type_str(),
                  ") is missing; give it with --input ", declared[k].name, "=FILE");
    inputs[k] = random_input(declared[k], dims, generator);
  }
  return inputs;
}

}  // namespace opgraph::cli
