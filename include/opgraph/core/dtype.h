// Element types and devices. The numeric values are part of the package C ABI
// (see opgraph/package/abi.h) and never change.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace opgraph {

enum class DType : uint8_t {
  Float32 = 0,
  Float64 = 1,
  Float16 = 2,
  BFloat16 = 3,
  Int8 = 4,
  UInt8 = 5,
  Int32 = 6,
  Int64 = 7,
  Bool = 8,
  Complex64 = 9,  // interleaved (real, imaginary) pairs, as std::complex lays them out
  Complex128 = 10,
};
inline constexpr int kNumDTypes = 11;

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
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct DTypeOf<std::complex<float>> {
  static constexpr DType value = DType::Complex64;
};
template <>
struct DTypeOf<std::complex<double>> {
  static constexpr DType value = DType::Complex128;
};
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
