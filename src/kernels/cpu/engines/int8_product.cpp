// oneDNN's int8 matmul runs brgemm kernels on AMX-INT8 (or AVX512-VNNI)
// only where its output scales are fixed when the primitive is made: with
// scales given per call it takes its jit GEMM, a seventh of the speed. So
// the weight's per-channel scales go into the primitive, made per node and
// row count, and a's per-call scale is a post-op that multiplies the sums,
// before the bias, residual, activation and multiplier.
#include "kernels/cpu/engines/int8_product.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

// GCC 12's AVX-512 conversions and reductions start from undefined
// registers, whose self-initialization it then reports as uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "core/weight_levels.h"
#include "kernels/cpu/onednn/onednn.h"
#include "opgraph/core/cpu_capability.h"

#define OPGRAPH_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]]

namespace opgraph::kernels {
namespace {

constexpr auto kU8 = dnnl::memory::data_type::u8, kS8 = dnnl::memory::data_type::s8,
               kF32 = dnnl::memory::data_type::f32, kS32 = dnnl::memory::data_type::s32;

// w's int8 levels, row-major [k, n], and a scale per column: the levels the
// integer panels hold for an int8 Session's weight. Without `levels`, the
// scales alone.
std::vector<float> column_levels(const Operand& w, int8_t* levels = nullptr) {
  const int64_t k = w.shape[0], n = w.shape[1], row_stride = w.strides[0], column_stride = w.strides[1];
  const auto* data = static_cast<const float*>(w.data);
  std::vector<float> scales(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const float* column = data + j * column_stride;
    const WeightLevels of = WeightLevels::of_group(8, column, k, row_stride);
    scales[j] = of.scale;
    if (levels == nullptr) continue;
    for (int64_t q = 0; q < k; ++q) levels[q * n + j] = static_cast<int8_t>(of.level(column[q * row_stride]));
  }
  return scales;
}

// A product's primitive, made for its weight's scales and its row count.
struct Int8Plan {
  dnnl::matmul matmul;
  dnnl::memory::desc a, w, dst, bias, multiplier, scratchpad;
  PreparedWeights::Key w_layout;
  // The arguments of the post-ops: a's scale, and the bias and multiplier
  // where p has them (0 where it does not).
  int scale_arg = 0, bias_arg = 0, multiplier_arg = 0;
  bool reference_kernel = false;

  Int8Plan(const Product& p, const std::vector<float>& scales) {
    const int64_t m = p.a.shape[0], k = p.a.shape[1], n = p.w.shape[1];
    a = dnnl::memory::desc({m, k}, kU8, dnnl::memory::format_tag::ab);
    dst = describe(p.dst, kF32);
    dnnl::post_ops post_ops;
    int index = 0;
    const auto next_arg = [&] { return DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1; };
    post_ops.append_binary(dnnl::algorithm::binary_mul, dnnl::memory::desc({1, 1}, kF32, dnnl::memory::format_tag::ab));
    scale_arg = next_arg();
    if (p.bias) {
      bias = describe(*p.bias, kF32);
      post_ops.append_binary(dnnl::algorithm::binary_add, bias);
      bias_arg = next_arg();
    }
    if (p.accumulate) {
      post_ops.append_sum(1.0f);
      ++index;
    }
    if (p.activation != Activation::None) {
      append_activation_post_op(post_ops, p.activation);
      ++index;
    }
    if (p.multiplier) {
      multiplier = describe(*p.multiplier, kF32);
      post_ops.append_binary(dnnl::algorithm::binary_mul, multiplier);
      multiplier_arg = next_arg();
    }
    dnnl::primitive_attr attr = with_caller_scratchpad();
    attr.set_output_scales(2, scales);
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    attr.set_post_ops(post_ops);
    const dnnl::memory::desc any_w({k, n}, kS8, dnnl::memory::format_tag::any);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, any_w, dst), attr, onednn_engine());
    reference_kernel = std::string_view(pd.impl_info_str()).starts_with("ref");
    matmul = dnnl::matmul(pd);
    w = pd.weights_desc();
    w_layout = layout_key(w);
    scratchpad = pd.scratchpad_desc();
  }
};

// A plan's memory objects and arguments, kept per thread (thread_call) and
// pointed at each call's buffers.
struct Int8Call {
  std::shared_ptr<const Int8Plan> plan;
  std::unordered_map<int, dnnl::memory> args;
  // w's levels in the plan's layout, found on the first call.
  std::shared_ptr<const void> packed_w;
  float scale = 1;
  int32_t zero_point = 0;

  explicit Int8Call(std::shared_ptr<const Int8Plan> made) : plan(std::move(made)) {
    const dnnl::engine& engine = onednn_engine();
    args = {{DNNL_ARG_SRC, unbound_memory(plan->a)},
            {DNNL_ARG_WEIGHTS, unbound_memory(plan->w)},
            {DNNL_ARG_DST, unbound_memory(plan->dst)},
            {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
             dnnl::memory(dnnl::memory::desc({1}, kS32, dnnl::memory::format_tag::a), engine, &zero_point)},
            {plan->scale_arg,
             dnnl::memory(dnnl::memory::desc({1, 1}, kF32, dnnl::memory::format_tag::ab), engine, &scale)}};
    if (plan->bias_arg != 0) args.emplace(plan->bias_arg, unbound_memory(plan->bias));
    if (plan->multiplier_arg != 0) args.emplace(plan->multiplier_arg, unbound_memory(plan->multiplier));
    if (plan->scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, unbound_memory(plan->scratchpad));
  }
};

// a's scale and zero point as ONNX Runtime's DynamicQuantizeLinear takes
// them: the range of a and zero, over 255 levels.
struct ActivationLevels {
  float scale;
  int32_t zero_point;
};

// low and high widened to the lowest and highest of a row's k values
// `stride` apart: in AVX-512 vectors where they are contiguous and the CPU
// has it, one at a time otherwise.
OPGRAPH_AVX512 void row_range_avx512(const float* row, int64_t k, float& low, float& high) {
  __m512 lows = _mm512_set1_ps(low), highs = _mm512_set1_ps(high);
  int64_t q = 0;
  for (; q + 16 <= k; q += 16) {
    const __m512 values = _mm512_loadu_ps(row + q);
    lows = _mm512_min_ps(lows, values);
    highs = _mm512_max_ps(highs, values);
  }
  low = _mm512_reduce_min_ps(lows);
  high = _mm512_reduce_max_ps(highs);
  for (; q < k; ++q) low = std::min(low, row[q]), high = std::max(high, row[q]);
}

void row_range(const float* row, int64_t k, int64_t stride, float& low, float& high) {
  if (stride == 1 && cpu_capability() == CpuCapability::Avx512) return row_range_avx512(row, k, low, high);
  for (int64_t q = 0; q < k; ++q) low = std::min(low, row[q * stride]), high = std::max(high, row[q * stride]);
}

ActivationLevels activation_levels(const KernelContext& context, const Operand& a) {
  const int64_t m = a.shape[0], k = a.shape[1];
  const auto* data = static_cast<const float*>(a.data);
  const int threads = context.pool->num_threads();
  std::vector<std::array<float, 2>> ranges(static_cast<size_t>(threads), {0.0f, 0.0f});
  context.pool->parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float low = 0, high = 0;
      for (int64_t r = m * t / threads; r < m * (t + 1) / threads; ++r) {
        row_range(data + r * a.strides[0], k, a.strides[1], low, high);
      }
      ranges[t] = {low, high};
    }
  });
  float low = 0, high = 0;
  for (const auto& [l, h] : ranges) low = std::min(low, l), high = std::max(high, h);
  const float scale = (high - low) / 255;
  if (scale == 0) return {1.0f, 0};
  return {scale, static_cast<int32_t>(std::clamp(std::nearbyint(-low / scale), 0.0f, 255.0f))};
}

// Row `row` (k values `stride` apart) as uint8 levels round(x * inverse) +
// zero, saturated, into `to`: in AVX-512 vectors where the values are
// contiguous and the CPU has it, one at a time otherwise, alike.
OPGRAPH_AVX512 void quantize_row_avx512(const float* row, int64_t k, float inverse, float zero, uint8_t* to) {
  const __m512 scale = _mm512_set1_ps(inverse), offset = _mm512_set1_ps(zero);
  const __m512 low = _mm512_setzero_ps(), high = _mm512_set1_ps(255.0f);
  int64_t q = 0;
  for (; q + 16 <= k; q += 16) {
    const __m512 scaled = _mm512_mul_ps(_mm512_loadu_ps(row + q), scale);
    const __m512 rounded = _mm512_roundscale_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 level = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(rounded, offset), low), high);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to + q), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(level)));
  }
  for (; q < k; ++q) to[q] = static_cast<uint8_t>(std::clamp(std::nearbyint(row[q] * inverse) + zero, 0.0f, 255.0f));
}

void quantize_row(const float* row, int64_t k, int64_t stride, float inverse, float zero, uint8_t* to) {
  if (stride == 1 && cpu_capability() == CpuCapability::Avx512) return quantize_row_avx512(row, k, inverse, zero, to);
  for (int64_t q = 0; q < k; ++q) {
    to[q] = static_cast<uint8_t>(std::clamp(std::nearbyint(row[q * stride] * inverse) + zero, 0.0f, 255.0f));
  }
}

// a as uint8 levels, dense [m, k], into `to`.
void quantize_activations(const KernelContext& context, const Operand& a, ActivationLevels levels, uint8_t* to) {
  const int64_t m = a.shape[0], k = a.shape[1];
  const auto* data = static_cast<const float*>(a.data);
  const float inverse = 1 / levels.scale, zero = static_cast<float>(levels.zero_point);
  context.pool->parallel_for(0, m, std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) quantize_row(data + r * a.strides[0], k, a.strides[1], inverse, zero, to + r * k);
  });
}

}  // namespace

bool int8_activation_product(const KernelContext& context, const Product& p, const QuantizedRows* stored) {
  PreparedWeights* prepared = prepared_weights(context);
  if (prepared == nullptr || !(p.constant_w || stored) || p.dst.shape.size() != 2) return false;
  const int64_t m = p.a.shape[0], k = p.a.shape[1], n = p.w.shape[1];
  const auto weight_key = reinterpret_cast<intptr_t>(stored ? stored->levels : p.w.data);
  const OneDnnStream stream(context);
  PreparedWeights::Key plan_key{weight_key,
                                m,
                                p.a.strides[0],
                                p.a.strides[1],
                                p.dst.strides[0],
                                static_cast<int64_t>(p.activation),
                                p.bias.has_value(),
                                p.accumulate,
                                p.multiplier.has_value(),
                                context.pool->num_threads(),
                                -1};
  for (const Operand* op : {p.bias ? &*p.bias : nullptr, p.multiplier ? &*p.multiplier : nullptr}) {
    if (op != nullptr) plan_key.insert(plan_key.end(), op->strides.begin(), op->strides.end());
  }
  const auto plan = std::static_pointer_cast<const Int8Plan>(prepared->derived(plan_key, {}, [&] {
    const std::vector<float> scales =
        stored ? std::vector<float>(stored->scales, stored->scales + n) : column_levels(p.w);
    return std::shared_ptr<const void>(std::make_shared<const Int8Plan>(p, scales));
  }));
  if (plan->reference_kernel) return false;
  Int8Call& call = thread_call<Int8Call>(plan);
  if (!call.packed_w) {
    // Shared by the plans of every row count whose primitive chose the layout.
    PreparedWeights::Key packed_key = plan->w_layout;
    packed_key.push_back(weight_key);
    const auto source = stored ? std::span(static_cast<const std::byte*>(stored->levels), static_cast<size_t>(k * n))
                               : spanned_bytes(p.w.data, p.w.shape, p.w.strides, sizeof(float));
    call.packed_w = prepared->derived(packed_key, source, [&] {
      // The stored levels as they are ([n, k], read as [k, n]), or w's.
      std::vector<int8_t> levels(stored ? 0 : static_cast<size_t>(k * n));
      if (!stored) column_levels(p.w, levels.data());
      const dnnl::memory::desc plain = stored ? dnnl::memory::desc({k, n}, kS8, dnnl::memory::dims{1, k})
                                              : dnnl::memory::desc({k, n}, kS8, dnnl::memory::format_tag::ab);
      void* plain_data = stored ? const_cast<void*>(stored->levels) : levels.data();
      auto copy = std::make_shared<Tensor>(Tensor::empty({static_cast<int64_t>(plan->w.get_size())}, DType::UInt8));
      dnnl::memory from(plain, onednn_engine(), plain_data), to(plan->w, onednn_engine(), copy->data());
      dnnl::stream& s = stream;
      dnnl::reorder(from, to).execute(s, from, to);
      s.wait();
      return std::shared_ptr<const void>(copy, copy->data());
    });
    call.args.at(DNNL_ARG_WEIGHTS).set_data_handle(const_cast<void*>(call.packed_w.get()));
  }

  const ActivationLevels levels = activation_levels(context, p.a);
  const size_t a_bytes = aligned_size(static_cast<size_t>(m * k));
  auto* scratch = static_cast<uint8_t*>(thread_scratch(a_bytes + plan->scratchpad.get_size()));
  quantize_activations(context, p.a, levels, scratch);
  call.scale = levels.scale;
  call.zero_point = levels.zero_point;
  call.args.at(DNNL_ARG_SRC).set_data_handle(scratch);
  call.args.at(DNNL_ARG_DST).set_data_handle(p.dst.data);
  if (p.bias) call.args.at(plan->bias_arg).set_data_handle(p.bias->data);
  if (p.multiplier) call.args.at(plan->multiplier_arg).set_data_handle(p.multiplier->data);
  if (plan->scratchpad.get_size() > 0) call.args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(scratch + a_bytes);
  dnnl::stream& s = stream;
  plan->matmul.execute(s, call.args);
  s.wait();
  return true;
}

}  // namespace opgraph::kernels
