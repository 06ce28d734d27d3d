// Runs a saved .opg model from C++: the model was written once (from Python
// with opgraph.save_opg, or with opgraph::save_opg) and runs here without
// Python.
//
//   cpp_inference model.opg [input.npy ...]
//
// Each graph input comes from the .npy file given for it, in order; an input
// without one is generated: the values (i % 17) / 8 - 1 in row-major order,
// with every symbolic dimension (a batch "N") of size 1. Prints each output's
// type and its first values.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <opgraph/opgraph.h>

namespace {

opgraph::Tensor generated_input(const opgraph::ValueInfo& input) {
  if (input.dtype != opgraph::DType::Float32) {
    throw opgraph::Error("input '" + input.name + "' is " + input.type_str() +
                         "; only float32 inputs are generated, give it as a .npy file");
  }
  opgraph::Shape shape;
  for (const opgraph::Dim& dim : input.shape) shape.push_back(dim.is_symbolic() ? 1 : dim.size);
  opgraph::Tensor tensor = opgraph::Tensor::empty(shape, opgraph::DType::Float32);
  float* data = tensor.data_ptr<float>();
  for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = static_cast<float>(i % 17) / 8 - 1;
  return tensor;
}

template <typename T>
void print_values(const opgraph::Tensor& tensor, int64_t count) {
  const T* data = static_cast<const T*>(tensor.data());
  for (int64_t i = 0; i < count; ++i) std::printf(" %.9g", static_cast<double>(data[i]));
}

void print_first_values(const opgraph::Tensor& tensor, int64_t count) {
  count = std::min(count, tensor.numel());
  std::printf("  first values:");
  switch (tensor.dtype()) {
    case opgraph::DType::Float32: print_values<float>(tensor, count); break;
    case opgraph::DType::Float64: print_values<double>(tensor, count); break;
    case opgraph::DType::Int8: print_values<int8_t>(tensor, count); break;
    case opgraph::DType::UInt8: print_values<uint8_t>(tensor, count); break;
    case opgraph::DType::Int32: print_values<int32_t>(tensor, count); break;
    case opgraph::DType::Int64: print_values<int64_t>(tensor, count); break;
    case opgraph::DType::Bool: print_values<bool>(tensor, count); break;
    case opgraph::DType::Float16:
    case opgraph::DType::BFloat16: std::printf(" (not printed for %s)", tensor.str().c_str()); break;
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s model.opg [input.npy ...]\n", argv[0]);
    return 2;
  }
  try {
    // Loading verifies the graph, resolves the kernels and plans memory once;
    // session.run() can then be called any number of times, from any thread.
    const opgraph::Session session(argv[1]);
    const std::vector<opgraph::ValueInfo>& declared = session.inputs();
    const size_t files = static_cast<size_t>(argc - 2);
    if (files > declared.size()) {
      throw opgraph::Error("the model has " + std::to_string(declared.size()) + " inputs, " + std::to_string(files) +
                           " files were given");
    }
    std::vector<opgraph::Tensor> inputs;
    for (size_t k = 0; k < declared.size(); ++k) {
      const bool from_file = k < files;
      inputs.push_back(from_file ? opgraph::read_npy(argv[k + 2]) : generated_input(declared[k]));
      const std::string source = from_file ? "from " + std::string(argv[k + 2]) : "(generated)";
      std::printf("input %s: %s %s\n", declared[k].name.c_str(), inputs.back().str().c_str(), source.c_str());
    }
    const std::vector<opgraph::Tensor> outputs = session.run(inputs);
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::printf("output %s: %s\n", session.outputs()[k].name.c_str(), outputs[k].str().c_str());
      print_first_values(outputs[k], 8);
    }
  } catch (const opgraph::Error& e) {
    std::fprintf(stderr, "cpp_inference: %s\n", e.what());
    return 1;
  }
  return 0;
}
