#include "opgraph/core/dtype.h"

#include <array>

#include "opgraph/package/abi.h"

namespace opgraph {

// The C ABI spells devices with the same numbers.
static_assert(static_cast<int>(DeviceType::CPU) == OG_CPU && static_cast<int>(DeviceType::CUDA) == OG_CUDA);

namespace {
struct DTypeInfo {
  std::string_view name;
  std::string_view scalar_type;  // PyTorch's ScalarType spelling
  size_t itemsize;
  bool floating;
};
#define OPGRAPH_DTYPE_INFO(number, abi, cpp, name, scalar_type, bytes, floating) {name, scalar_type, bytes, floating},
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{OG_DTYPES(OPGRAPH_DTYPE_INFO)}};
#undef OPGRAPH_DTYPE_INFO
const DTypeInfo& info(DType dtype) { return kInfo.at(static_cast<size_t>(dtype)); }
}  // namespace

size_t itemsize(DType dtype) { return info(dtype).itemsize; }
std::string_view dtype_name(DType dtype) { return info(dtype).name; }
bool is_floating_point(DType dtype) { return info(dtype).floating; }
bool is_complex(DType dtype) { return dtype == DType::Complex64 || dtype == DType::Complex128; }

DType real_part_dtype(DType dtype) {
  if (dtype == DType::Complex64) return DType::Float32;
  if (dtype == DType::Complex128) return DType::Float64;
  return dtype;
}

std::optional<DType> complex_dtype_of(DType dtype) {
  if (dtype == DType::Float32) return DType::Complex64;
  if (dtype == DType::Float64) return DType::Complex128;
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].name == name || kInfo[i].scalar_type == name) return static_cast<DType>(i);
  }
  if (name == "float") return DType::Float32;
  if (name == "double") return DType::Float64;
  if (name == "half") return DType::Float16;
  if (name == "long") return DType::Int64;
  if (name == "int") return DType::Int32;
  if (name == "cfloat") return DType::Complex64;
  if (name == "cdouble") return DType::Complex128;
  return std::nullopt;
}

std::string_view device_type_name(DeviceType type) { return type == DeviceType::CPU ? "cpu" : "cuda"; }

std::string device_str(Device device) {
  std::string text(device_type_name(device.type));
  if (device.type != DeviceType::CPU) text += ":" + std::to_string(device.index);
  return text;
}

}  // namespace opgraph
