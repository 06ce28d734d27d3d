// A boxed PyTorch kernel for any opgraph op: it reads the dispatcher's stack
// by the op's schema, views the tensors without a copy and runs the op with
// opgraph::call_out. Registered per op from Python (opgraph.torch.cpp_kernels)
// through the one C entry point below.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <memory>
#include <string>
#include <vector>

#include "opgraph/opgraph.h"

namespace {

opgraph::DType to_opgraph(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return opgraph::DType::Float32;
    case at::kDouble: return opgraph::DType::Float64;
    case at::kHalf: return opgraph::DType::Float16;
    case at::kBFloat16: return opgraph::DType::BFloat16;
    case at::kChar: return opgraph::DType::Int8;
    case at::kByte: return opgraph::DType::UInt8;
    case at::kInt: return opgraph::DType::Int32;
    case at::kLong: return opgraph::DType::Int64;
    case at::kBool: return opgraph::DType::Bool;
    case at::kComplexFloat: return opgraph::DType::Complex64;
    case at::kComplexDouble: return opgraph::DType::Complex128;
    default: throw opgraph::Error(std::string("unsupported dtype ") + c10::toString(type));
  }
}

at::ScalarType to_torch(opgraph::DType dtype) {
  static constexpr at::ScalarType types[] = {at::kFloat, at::kDouble,       at::kHalf,         at::kBFloat16,
                                             at::kChar,  at::kByte,         at::kInt,          at::kLong,
                                             at::kBool,  at::kComplexFloat, at::kComplexDouble};
  return types[static_cast<size_t>(dtype)];
}

// A view of a CPU tensor's memory; valid while the tensor is.
opgraph::Tensor borrow(const at::Tensor& t) {
  return opgraph::Tensor::from_blob(t.data_ptr(), opgraph::Shape(t.sizes().begin(), t.sizes().end()),
                                    opgraph::Strides(t.strides().begin(), t.strides().end()),
                                    to_opgraph(t.scalar_type()));
}

opgraph::AttrValue attr_value(const c10::IValue& v, const opgraph::Type& type) {
  using K = opgraph::Type::Kind;
  if (v.isNone()) return std::monostate{};
  if (type.kind == K::ScalarType && !type.is_list) return to_opgraph(v.toScalarType());
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isDevice()) return v.toDevice().str();
  if (v.isScalar()) {
    const at::Scalar s = v.toScalar();
    return s.isIntegral(false) ? opgraph::AttrValue(s.toLong()) : opgraph::AttrValue(s.toDouble());
  }
  if (v.isIntList()) return v.toIntVector();
  if (v.isDoubleList()) return v.toDoubleVector();
  if (v.isBoolList()) {
    std::vector<int64_t> values;
    for (bool b : v.toBoolList()) values.push_back(b);
    return values;
  }
  throw opgraph::Error("attribute of type " + type.str() + ": cannot pass " + v.tagKind());
}

// Runs one op: the functional overload (allocates and returns its outputs)
// or the out overload (the opgraph op's arguments, then one output per
// return; returns nothing).
class Kernel final : public c10::OperatorKernel {
 public:
  Kernel(const opgraph::OpDef& op, bool out_variant) : op_(op), out_variant_(out_variant) {}

  void operator()(const c10::OperatorHandle& handle, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const size_t num_arguments = handle.schema().arguments().size();
    auto arguments = torch::jit::last(*stack, num_arguments);
    std::vector<opgraph::Tensor> inputs;
    std::vector<size_t> list_sizes;
    opgraph::NamedAttrs named;
    for (size_t i = 0; i < op_.schema.arguments.size(); ++i) {
      const opgraph::Argument& arg = op_.schema.arguments[i];
      const c10::IValue& value = arguments[i];
      if (!arg.type.is_tensor()) {
        named.emplace_back(arg.name, attr_value(value, arg.type));
      } else if (arg.type.is_list) {
        const auto list = value.toTensorList();
        for (const at::Tensor& t : list) inputs.push_back(borrow(t));
        list_sizes.push_back(list.size());
      } else {
        inputs.push_back(value.isNone() ? opgraph::Tensor() : borrow(value.toTensor()));
      }
    }
    const opgraph::Attrs attrs = opgraph::Attrs::bind(op_.schema, named, list_sizes);
    std::vector<at::Tensor> results;
    if (out_variant_) {
      for (size_t i = op_.schema.arguments.size(); i < num_arguments; ++i) results.push_back(arguments[i].toTensor());
    } else {
      for (const opgraph::TensorMeta& meta : opgraph::infer_outputs(op_, inputs, attrs)) {
        results.push_back(at::empty(meta.shape, at::TensorOptions().dtype(to_torch(meta.dtype))));
      }
    }
    // opgraph writes contiguous outputs; a strided `out` gets the result copied in.
    std::vector<at::Tensor> targets;
    std::vector<opgraph::Tensor> outputs;
    for (const at::Tensor& r : results) {
      targets.push_back(r.is_contiguous() ? r : at::empty(r.sizes(), r.options()));
      outputs.push_back(borrow(targets.back()));
    }
    opgraph::call_out(op_, inputs, outputs, attrs);
    for (size_t i = 0; i < results.size(); ++i) {
      if (!targets[i].is_same(results[i])) results[i].copy_(targets[i]);
    }
    torch::jit::drop(*stack, num_arguments);
    if (out_variant_) return;
    for (at::Tensor& r : results) stack->emplace_back(std::move(r));
  }

 private:
  const opgraph::OpDef& op_;
  bool out_variant_;
};

// Registrations last as long as the process: PyTorch keeps calling them.
std::vector<std::unique_ptr<torch::Library>>& libraries() {
  static std::vector<std::unique_ptr<torch::Library>> all;
  return all;
}

}  // namespace

// Registers the CPU kernels of opgraph op `op` for its PyTorch overloads
// `functional` and `out` ("name" or "name.overload", in `op`'s namespace).
// Returns null, or the error's message (valid until the next call).
extern "C" __attribute__((visibility("default"))) const char* opgraph_torch_register_cpu(const char* op,
                                                                                         const char* functional,
                                                                                         const char* out) {
  static std::string error;
  try {
    const opgraph::OpDef& def = opgraph::Registry::global().get(op);
    auto library = std::make_unique<torch::Library>(torch::Library::IMPL, def.schema.ns, c10::DispatchKey::CPU,
                                                    __FILE__, __LINE__);
    library->impl(functional, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<Kernel>(def, false)));
    library->impl(out, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<Kernel>(def, true)));
    libraries().push_back(std::move(library));
    return nullptr;
  } catch (const std::exception& e) {
    error = e.what();
    return error.c_str();
  }
}
