// Random tensors: rand, randn, randperm, and native_dropout's mask.
//
// The generator is counter-based (SplitMix64 over a counter): draw n of a
// call is mix(key + (offset + n) * gamma), with the key from the seed and the
// call's block of counters reserved up front, so a parallel fill gives the
// same values as a single-threaded one. The references run the same generator
// on the calling thread; a test therefore compares a kernel and its reference
// after seeding each call alike.
#include <cmath>
#include <limits>
#include <numbers>

#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/factory_attrs.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/shape_checks.h"
#include "opgraph/core/random.h"

namespace opgraph::kernels {
namespace {

// SplitMix64's output function (Steele, Lea and Flood 2014).
constexpr uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Draw n of a reserved block.
struct Stream {
  uint64_t key, offset;
  explicit Stream(RandomBlock block) : key(mix(block.seed)), offset(block.offset) {}
  uint64_t bits(uint64_t n) const { return mix(key + (offset + n) * 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, 1) with T's precision.
  template <typename T>
  T uniform(uint64_t n) const {
    constexpr int kDigits = std::numeric_limits<T>::digits;
    return static_cast<T>(bits(n) >> (64 - kDigits)) * (T(1) / static_cast<T>(uint64_t(1) << kDigits));
  }
};

// Runs fill(i) for every i in [0, n): on the pool's threads for the fast
// kernel, on the calling thread for the reference.
template <bool kReference, typename Fill>
void fill_all(const KernelContext& context, int64_t n, Fill&& fill) {
  const auto range = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fill(i);
  };
  if constexpr (kReference) {
    range(0, n);
  } else {
    parallel_rows(context, n, 1, range);
  }
}

// ---- rand, randn -------------------------------------------------------------------------

enum class Distribution { Uniform, Normal };

using Name = std::optional<std::string_view>;

TensorMeta random_shape(std::span<const int64_t> size, std::optional<DType> requested, Name layout, Name device,
                        std::optional<bool>) {
  check_layout(layout);
  check_device(device);
  const DType dtype = requested.value_or(DType::Float32);
  dispatch_floating(dtype, "dtype", [](auto) {});
  return {dtype, checked_size(size, "size")};
}

// A normal draw takes two counters: Box-Muller on uniforms 2i and 2i + 1,
// keeping the cosine half, so that element i needs no other element.
template <Distribution kDistribution, bool kReference>
void random_kernel(const KernelContext& context, std::span<const int64_t>, std::optional<DType>, Name, Name,
                   std::optional<bool>, const Tensor& output) {
  const int64_t n = output.numel();
  const uint64_t draws = kDistribution == Distribution::Normal ? 2 : 1;
  const Stream stream(reserve_random(static_cast<uint64_t>(n) * draws));
  dispatch_floating(output.dtype(), "dtype", [&](auto zero) {
    using T = decltype(zero);
    T* out = output.data_ptr<T>();
    fill_all<kReference>(context, n, [&](int64_t i) {
      if constexpr (kDistribution == Distribution::Uniform) {
        out[i] = stream.uniform<T>(i);
      } else {
        const double radius = std::sqrt(-2.0 * std::log(1.0 - stream.uniform<double>(2 * i)));
        out[i] = static_cast<T>(radius * std::cos(2 * std::numbers::pi * stream.uniform<double>(2 * i + 1)));
      }
    });
  });
}

// ---- randperm -----------------------------------------------------------------------------

TensorMeta randperm_shape(int64_t n, std::optional<DType> requested, Name layout, Name device, std::optional<bool>) {
  check_layout(layout);
  check_device(device);
  OPGRAPH_CHECK(n >= 0, "n: expected a non-negative length, got ", n);
  const DType dtype = requested.value_or(DType::Int64);
  OPGRAPH_CHECK(dtype != DType::Bool, "dtype: expected a numeric dtype, got bool");
  dispatch_elementwise(dtype, "dtype", [](auto) {});
  return {dtype, {n}};
}

// The high half of a 64 x 64-bit product maps 64 random bits onto [0, i]
// without a division. unsigned __int128 is a GCC and clang extension, which
// __extension__ declares deliberate (no -Wpedantic warning).
__extension__ typedef unsigned __int128 uint128;

// Fisher-Yates, swapping place i with a place j <= i drawn from counter i:
// each step needs the one before, so one loop serves as fast kernel and
// reference.
void randperm_kernel(const KernelContext&, int64_t n, std::optional<DType>, Name, Name, std::optional<bool>,
                     const Tensor& output) {
  const Stream stream(reserve_random(static_cast<uint64_t>(n)));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>((static_cast<uint128>(stream.bits(i)) * (i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  dispatch_elementwise(output.dtype(), "dtype", [&](auto zero) {
    using T = decltype(zero);
    T* out = output.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(order[i]);
  });
}

// ---- native_dropout ------------------------------------------------------------------------

double checked_p(double p) {
  OPGRAPH_CHECK(p >= 0 && p <= 1, "p: expected a probability in [0, 1], got ", p);
  return p;
}

std::vector<TensorMeta> dropout_shape(const TensorMeta& input, double p, std::optional<bool>) {
  check_floating(input, "input");
  checked_p(p);
  return {input, {DType::Bool, input.shape}};
}

// Training keeps each element with probability 1 - p and scales it by
// 1 / (1 - p), computed as ATen does, input * mask * scale (so p = 1 gives
// zeros, and NaN stays NaN); otherwise the input and an all-true mask.
// train=None trains, as in ATen.
template <bool kReference>
void dropout_kernel(const KernelContext& context, const Tensor& input, double p, std::optional<bool> given_train,
                    const Tensor& output, const Tensor& mask_tensor) {
  const int64_t n = input.numel();
  bool* mask = mask_tensor.data_ptr<bool>();
  const bool train = given_train.value_or(true);
  const double keep = 1.0 - checked_p(p);
  const Stream stream(reserve_random(train ? static_cast<uint64_t>(n) : 0));
  dispatch_floating(input.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* x = input.data_ptr<const T>();
    T* out = output.data_ptr<T>();
    const T scale = keep == 0 ? T(0) : static_cast<T>(1.0 / keep);
    fill_all<kReference>(context, n, [&](int64_t i) {
      mask[i] = !train || stream.uniform<double>(i) < keep;
      out[i] = train ? x[i] * static_cast<T>(mask[i]) * scale : x[i];
    });
  });
}

}  // namespace

void register_random_ops(BuiltinOps& builtins) {
  const auto schema = [](const char* head) { return detail::concat("aten::", head, kFactoryOptions, ") -> Tensor"); };
  define(builtins, {.schema = schema("rand(SymInt[] size, *, ").c_str(),
                    .shape = random_shape,
                    .cpu = random_kernel<Distribution::Uniform, false>,
                    .reference = random_kernel<Distribution::Uniform, true>});
  define(builtins, {.schema = schema("randn(SymInt[] size, *, ").c_str(),
                    .shape = random_shape,
                    .cpu = random_kernel<Distribution::Normal, false>,
                    .reference = random_kernel<Distribution::Normal, true>});
  define(builtins,
         {.schema = "aten::randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, "
                    "bool? pin_memory=None) -> Tensor",
          .shape = randperm_shape,
          .cpu = randperm_kernel,
          .reference = randperm_kernel});
  define(builtins, {.schema = "aten::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
                    .shape = dropout_shape,
                    OPGRAPH_CPU_AND_REFERENCE(dropout_kernel)});
}

}  // namespace opgraph::kernels
