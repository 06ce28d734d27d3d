#include "opgraph/registry/sample.h"

#include <complex>
#include <random>

namespace opgraph {
namespace {

// The buffer a sample tensor views, and the view.
Tensor lay_out(const SampleTensor& spec) {
  using Layout = SampleTensor::Layout;
  const int64_t rank = static_cast<int64_t>(spec.shape.size());
  if (spec.layout == Layout::Transposed && rank >= 2) {
    Shape swapped = spec.shape;
    std::swap(swapped[rank - 1], swapped[rank - 2]);
    return Tensor::empty(swapped, spec.dtype).transpose(-1, -2);
  }
  if (spec.layout == Layout::Strided && rank >= 1) {
    Shape doubled = spec.shape;
    doubled.back() *= 2;
    return Tensor::empty(doubled, spec.dtype).slice(rank - 1, 0, doubled.back(), 2);
  }
  return Tensor::empty(spec.shape, spec.dtype);
}

template <typename T>
void fill(Tensor& t, const SampleTensor& spec, std::mt19937_64& random) {
  // Through the strides: every element the view sees, in order.
  const Tensor dense = Tensor::empty(t.shape(), t.dtype());
  T* data = dense.data_ptr<T>();
  for (int64_t i = 0; i < dense.numel(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      data[i] = random() & 1;
    } else if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<int64_t> values(static_cast<int64_t>(spec.low), static_cast<int64_t>(spec.high));
      data[i] = static_cast<T>(values(random));
    } else if constexpr (is_complex_v<T>) {
      std::uniform_real_distribution<typename T::value_type> values(spec.low, spec.high);
      data[i] = T(values(random), values(random));
    } else {
      std::uniform_real_distribution<T> values(static_cast<T>(spec.low), static_cast<T>(spec.high));
      data[i] = values(random);
    }
  }
  t.copy_(dense);
}

const char* layout_name(SampleTensor::Layout layout) {
  switch (layout) {
    case SampleTensor::Layout::Contiguous: return "";
    case SampleTensor::Layout::Transposed: return " (transposed)";
    case SampleTensor::Layout::Strided: return " (strided)";
  }
  return "";
}

}  // namespace

std::vector<Tensor> make_sample_inputs(const Sample& sample, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<Tensor> inputs;
  for (const SampleTensor& spec : sample.inputs) {
    if (spec.none) {
      inputs.emplace_back();
      continue;
    }
    Tensor t = lay_out(spec);
    switch (spec.dtype) {
      case DType::Float32: fill<float>(t, spec, random); break;
      case DType::Float64: fill<double>(t, spec, random); break;
      case DType::Int8: fill<int8_t>(t, spec, random); break;
      case DType::UInt8: fill<uint8_t>(t, spec, random); break;
      case DType::Int32: fill<int32_t>(t, spec, random); break;
      case DType::Int64: fill<int64_t>(t, spec, random); break;
      case DType::Bool: fill<bool>(t, spec, random); break;
      case DType::Complex64: fill<std::complex<float>>(t, spec, random); break;
      case DType::Complex128: fill<std::complex<double>>(t, spec, random); break;
      case DType::Float16:
      case DType::BFloat16: throw Error(detail::concat("make_sample_inputs: no values for ", dtype_name(spec.dtype)));
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

NamedAttrs sample_attrs(const Sample& sample) {
  NamedAttrs attrs;
  for (const auto& [name, value] : sample.attrs) attrs.emplace_back(name, value);
  return attrs;
}

double sample_tolerance(const Sample& sample, DType dtype) {
  if (sample.tolerance > 0) return sample.tolerance;
  switch (real_part_dtype(dtype)) {
    case DType::Float32: return 1e-5;
    case DType::Float64: return 1e-10;
    default: return 0;
  }
}

std::string sample_str(const Sample& sample) {
  std::string text;
  for (const SampleTensor& spec : sample.inputs) {
    if (!text.empty()) text += ", ";
    text += spec.none ? std::string("None")
                      : std::string(dtype_name(spec.dtype)) + shape_str(spec.shape) + layout_name(spec.layout);
  }
  for (size_t i = 0; i < sample.attrs.size(); ++i) {
    text += (i == 0 ? "; " : ", ") + sample.attrs[i].first + "=" + attr_str(sample.attrs[i].second);
  }
  return text;
}

}  // namespace opgraph
