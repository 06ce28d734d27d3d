// Element types and devices. The dtypes are the list of opgraph/package/abi.h
// (OG_DTYPES), whose numbers are part of the package C ABI and never change.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "opgraph/package/abi.h"

namespace opgraph {

#define OPGRAPH_DTYPE_ENUMERATOR(number, abi, cpp, name, scalar_type, bytes, floating) cpp = number,
enum class DType : uint8_t { OG_DTYPES(OPGRAPH_DTYPE_ENUMERATOR) };
#undef OPGRAPH_DTYPE_ENUMERATOR
#define OPGRAPH_COUNT_DTYPE(...) +1
inline constexpr int kNumDTypes = 0 OG_DTYPES(OPGRAPH_COUNT_DTYPE);
#undef OPGRAPH_COUNT_DTYPE

size_t itemsize(DType dtype);
// Names as NumPy and PyTorch spell them: "float32", "bfloat16", "bool", ...
std::string_view dtype_name(DType dtype);
// Accepts the names above and PyTorch's ScalarType names ("Float", "Long", ...).
std::optional<DType> dtype_from_name(std::string_view name);
bool is_floating_point(DType dtype);
bool is_complex(DType dtype);
// The real type of a complex dtype's parts (complex64 -> float32); other dtypes map to themselves.
DType real_part_dtype(DType dtype);
// The complex dtype whose parts are `dtype` (float32 -> complex64), nullopt for non-float dtypes.
std::optional<DType> complex_dtype_of(DType dtype);

template <typename T>
struct DTypeOf;
OG_DTYPE_CXX_TYPES(OG_DTYPE_OF)
template <typename T>
inline constexpr DType dtype_of = DTypeOf<T>::value;
template <typename T>
inline constexpr bool is_complex_v = false;
template <typename T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device&) const = default;
  static Device cpu() { return {}; }
};

std::string_view device_type_name(DeviceType type);
std::string device_str(Device device);  // "cpu", "cuda:1"

}  // namespace opgraph
