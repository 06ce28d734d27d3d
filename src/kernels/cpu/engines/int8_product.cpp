// oneDNN's int8 matmul runs brgemm kernels on AMX-INT8 (or AVX512-VNNI)
// only where its output scales are fixed when the primitive is made: with
// scales given per call it takes its jit GEMM, a seventh of the speed. So
// the weight's per-channel scales go into the primitive, made per node and
// row count; a's per-call scales, one per row, multiply the sums after it,
// before the bias, residual, activation and multiplier.
#include "kernels/cpu/engines/int8_product.h"

#include <algorithm>
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
#include "kernels/cpu/engines/product_epilogue.h"
#include "kernels/cpu/onednn/onednn.h"
#include "kernels/cpu/util/cpu_dispatch.h"
#include "opgraph/core/cpu_capability.h"

#define OPGRAPH_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]]

namespace opgraph::kernels {
namespace {

constexpr auto kU8 = dnnl::memory::data_type::u8, kS8 = dnnl::memory::data_type::s8,
               kF32 = dnnl::memory::data_type::f32;

// A weight's int8 levels per column (output channel): each column's scale,
// and its levels' sum times the scale, which a's zero points multiply.
struct ColumnLevels {
  std::vector<float> scales, scaled_sums;
};

// w's levels, the levels the integer panels hold for an int8 Session's
// weight; row-major [k, n] into `levels` where given.
ColumnLevels column_levels(const Operand& w, int8_t* levels = nullptr) {
  const int64_t k = w.shape[0], n = w.shape[1], row_stride = w.strides[0], column_stride = w.strides[1];
  const auto* data = static_cast<const float*>(w.data);
  ColumnLevels of_w{std::vector<float>(static_cast<size_t>(n)), std::vector<float>(static_cast<size_t>(n))};
  for (int64_t j = 0; j < n; ++j) {
    const float* column = data + j * column_stride;
    const WeightLevels of = WeightLevels::of_group(8, true, column, k, row_stride);
    int64_t sum = 0;
    for (int64_t q = 0; q < k; ++q) {
      const int level = of.level(column[q * row_stride]);
      sum += level;
      if (levels != nullptr) levels[q * n + j] = static_cast<int8_t>(level);
    }
    of_w.scales[j] = of.scale;
    of_w.scaled_sums[j] = of.scale * static_cast<float>(sum);
  }
  return of_w;
}

// A quantized linear layer's stored int8 levels ([n, k]) and scales.
ColumnLevels column_levels(const QuantizedRows& w) {
  ColumnLevels of_w{std::vector<float>(w.scales, w.scales + w.n), std::vector<float>(static_cast<size_t>(w.n))};
  for (int64_t j = 0; j < w.n; ++j) {
    const auto* row = static_cast<const int8_t*>(w.levels) + j * w.k;
    int64_t sum = 0;
    for (int64_t q = 0; q < w.k; ++q) sum += row[q];
    of_w.scaled_sums[j] = of_w.scales[j] * static_cast<float>(sum);
  }
  return of_w;
}

// A row of a's scale and zero point: x ~ scale * (level - zero_point).
struct RowLevels {
  float scale, zero_point;
};

// A product's primitive, made for its weight's scales and its row count:
// a's levels times w's, times w's scales, into a dense [m, n] buffer of sums.
// oneDNN 2.6 runs a per-row binary post-op (a's scales) on its reference
// kernel only, so the rows are finished apart (product_epilogue.h).
struct Int8Plan {
  dnnl::matmul matmul;
  dnnl::memory::desc a, w, sums, scratchpad;
  PreparedWeights::Key w_layout;
  std::vector<float> scaled_sums;  // w's (ColumnLevels)
  bool reference_kernel = false;

  Int8Plan(const Product& p, ColumnLevels of_w) : scaled_sums(std::move(of_w.scaled_sums)) {
    const int64_t m = p.a.shape[0], k = p.a.shape[1], n = p.w.shape[1];
    a = dnnl::memory::desc({m, k}, kU8, dnnl::memory::format_tag::ab);
    sums = dnnl::memory::desc({m, n}, kF32, dnnl::memory::format_tag::ab);
    dnnl::primitive_attr attr = with_caller_scratchpad();
    attr.set_output_scales(2, of_w.scales);
    const dnnl::memory::desc any_w({k, n}, kS8, dnnl::memory::format_tag::any);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, any_w, sums), attr, onednn_engine());
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
  std::vector<RowLevels> rows;  // a's, each call's

  explicit Int8Call(std::shared_ptr<const Int8Plan> made)
      : plan(std::move(made)), rows(static_cast<size_t>(plan->a.dims()[0])) {
    args = {{DNNL_ARG_SRC, unbound_memory(plan->a)},
            {DNNL_ARG_WEIGHTS, unbound_memory(plan->w)},
            {DNNL_ARG_DST, unbound_memory(plan->sums)}};
    if (plan->scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, unbound_memory(plan->scratchpad));
  }
};

// low and high widened to the lowest and highest of a row's k values
// `stride` apart, and whether one is NaN: in AVX-512 vectors where they are
// contiguous and the CPU has it, one at a time otherwise.
OPGRAPH_AVX512 bool row_range_avx512(const float* row, int64_t k, float& low, float& high) {
  __m512 lows = _mm512_set1_ps(low), highs = _mm512_set1_ps(high);
  __mmask16 nan = 0;
  int64_t q = 0;
  for (; q + 16 <= k; q += 16) {
    const __m512 values = _mm512_loadu_ps(row + q);
    lows = _mm512_min_ps(lows, values);
    highs = _mm512_max_ps(highs, values);
    nan |= _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
  }
  low = _mm512_reduce_min_ps(lows);
  high = _mm512_reduce_max_ps(highs);
  bool any = nan != 0;
  for (; q < k; ++q) low = std::min(low, row[q]), high = std::max(high, row[q]), any |= std::isnan(row[q]);
  return any;
}

bool row_range(const float* row, int64_t k, int64_t stride, float& low, float& high) {
  if (stride == 1 && cpu_capability() == CpuCapability::Avx512) return row_range_avx512(row, k, low, high);
  bool nan = false;
  for (int64_t q = 0; q < k; ++q) {
    const float x = row[q * stride];
    low = std::min(low, x), high = std::max(high, x), nan |= std::isnan(x);
  }
  return nan;
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

// Row `row` as uint8 levels into `to`, with the scale and zero point that
// ONNX Runtime's DynamicQuantizeLinear takes for a tensor: the range of the
// row and zero, over 255 levels. A NaN makes the scale NaN (and an
// infinity, infinite), so that the row's products are not finite, as
// float32's would not be.
RowLevels quantize_row(const float* row, int64_t k, int64_t stride, uint8_t* to) {
  float low = 0, high = 0;
  const bool nan = row_range(row, k, stride, low, high);
  const float scale = nan ? std::numeric_limits<float>::quiet_NaN() : (high - low) / 255;
  const RowLevels levels = scale == 0 || nan ? RowLevels{scale == 0 ? 1.0f : scale, 0.0f}
                                             : RowLevels{scale, std::clamp(std::nearbyint(-low / scale), 0.0f, 255.0f)};
  const float inverse = 1 / levels.scale;
  if (stride == 1 && cpu_capability() == CpuCapability::Avx512) {
    quantize_row_avx512(row, k, inverse, levels.zero_point, to);
    return levels;
  }
  for (int64_t q = 0; q < k; ++q) {
    to[q] =
        static_cast<uint8_t>(std::clamp(std::nearbyint(row[q * stride] * inverse) + levels.zero_point, 0.0f, 255.0f));
  }
  return levels;
}

// a as uint8 levels, dense [m, k], into `to`, and row r's scale and zero point into rows[r].
void quantize_activations(const KernelContext& context, const Operand& a, uint8_t* to, RowLevels* rows) {
  const int64_t m = a.shape[0], k = a.shape[1];
  const auto* data = static_cast<const float*>(a.data);
  context.pool->parallel_for(0, m, std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) rows[r] = quantize_row(data + r * a.strides[0], k, a.strides[1], to + r * k);
  });
}

}  // namespace

bool int8_activation_product(const KernelContext& context, const Product& p, const QuantizedRows* stored) {
  // Without VNNI, oneDNN multiplies u8 x s8 on vpmaddubsw, whose 16-bit
  // pairs saturate (255 * 127 twice passes 32767): an output of
  // -153.3 came out as -139.6 (AMD Zen 3). The Dot panels take those products there.
  PreparedWeights* prepared = prepared_weights(context);
  if (!cpu_has_vnni() || prepared == nullptr || !(p.constant_w || stored) || p.dst.shape.size() != 2 ||
      p.dst.strides[1] != 1) {
    return false;
  }
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
    return std::shared_ptr<const void>(
        std::make_shared<const Int8Plan>(p, stored ? column_levels(*stored) : column_levels(p.w)));
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

  const size_t a_bytes = aligned_size(static_cast<size_t>(m * k)), sums_bytes = aligned_size(plan->sums.get_size());
  auto* scratch = static_cast<char*>(thread_scratch(a_bytes + sums_bytes + plan->scratchpad.get_size()));
  auto* levels = reinterpret_cast<uint8_t*>(scratch);
  auto* sums = reinterpret_cast<float*>(scratch + a_bytes);
  quantize_activations(context, p.a, levels, call.rows.data());
  call.args.at(DNNL_ARG_SRC).set_data_handle(levels);
  call.args.at(DNNL_ARG_DST).set_data_handle(sums);
  if (plan->scratchpad.get_size() > 0) {
    call.args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(scratch + a_bytes + sums_bytes);
  }
  dnnl::stream& s = stream;
  plan->matmul.execute(s, call.args);
  s.wait();
  // dst's rows: the bias (and residual), then the sums of a row's levels
  // less its zero point, times its scale (sum_q (level_q - zero) * w_qj =
  // sums_j - zero * w's scaled sum_j), then the activation and multiplier.
  const int64_t dst_stride = p.dst.strides[0];
  auto* dst = static_cast<float*>(p.dst.data);
  const float* scaled_sums = plan->scaled_sums.data();
  context.pool->parallel_for(0, n, std::max<int64_t>(16, 16384 / std::max<int64_t>(m, 1)), [&](int64_t j0, int64_t j1) {
    // In one vectorized pass over the sums, written over dst or added to it.
    dispatch_cpu([&] {
      for (int64_t r = 0; r < m; ++r) {
        const auto [scale, zero] = call.rows[r];
        float* row = dst + r * dst_stride;
        const float* row_sums = sums + r * n;
        if (p.accumulate) {
          for (int64_t j = j0; j < j1; ++j) row[j] += scale * (row_sums[j] - zero * scaled_sums[j]);
        } else {
          for (int64_t j = j0; j < j1; ++j) row[j] = scale * (row_sums[j] - zero * scaled_sums[j]);
        }
      }
    });
    add_bias(p, m, j0, j1);
    finish_rows(p, m, j0, j1);
  });
  return true;
}

}  // namespace opgraph::kernels
