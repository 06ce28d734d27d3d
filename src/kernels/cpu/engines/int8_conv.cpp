// oneDNN 2.6's int8 convolutions run their jit kernels (brgemm on
// AVX512-VNNI, jit_uni_int8 on AVX2) only on channels-last activations and
// only with output scales fixed when the primitive is made; with scales given
// per call they have no kernel at all. The input's scale is known per call
// only, so the primitive has no output scales: its first post-op multiplies
// channel c's sums by a per-call vector, the input's scale times the weight's
// scale of channel c, and the primitive, which depends on shapes alone, is
// cached as the float32 ones are.
#include "kernels/cpu/engines/int8_conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <immintrin.h>

#include "core/weight_levels.h"
#include "kernels/cpu/engines/float_vectors.h"
#include "kernels/cpu/engines/product.h"
#include "kernels/cpu/onednn/conv_onednn.h"
#include "kernels/cpu/onednn/fused_activation.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "opgraph/core/cpu_capability.h"

namespace opgraph::kernels {
namespace {

using dnnl::memory;
constexpr auto kU8 = memory::data_type::u8, kS8 = memory::data_type::s8, kF32 = memory::data_type::f32;

// Where the post-ops' per-call operands go: the multipliers, then the bias.
constexpr int kMultipliersArg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
constexpr int kBiasArg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1;

struct Int8ConvPlan {
  dnnl::convolution_forward conv;
  memory::desc src, weights, dst, per_channel, scratchpad;
  bool has_bias = false, reference = false;
};

PrimitiveCache<Int8ConvPlan>& int8_conv_plans() {
  static PrimitiveCache<Int8ConvPlan> plans(256);
  return plans;
}

// dst = activation(multipliers[c] * sums + bias[c] + dst's residual), by post-ops.
Int8ConvPlan build_int8_conv(const ConvDims& d, memory::data_type src_type, bool has_bias, bool adds_residual,
                             Activation activation) {
  const memory::desc per_channel({1, d.dst[1], 1, 1}, kF32, memory::format_tag::nchw);
  dnnl::post_ops post_ops;
  post_ops.append_binary(dnnl::algorithm::binary_mul, per_channel);
  if (has_bias) post_ops.append_binary(dnnl::algorithm::binary_add, per_channel);
  if (adds_residual) post_ops.append_sum(1.0f);
  append_activation_post_op(post_ops, activation);
  dnnl::primitive_attr attr = with_caller_scratchpad();
  attr.set_post_ops(post_ops);
  const dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      d.src_md(memory::format_tag::nhwc, src_type),
                                      d.weights_md(memory::format_tag::any, kS8), memory::desc(),
                                      d.dst_md(memory::format_tag::nhwc), d.strides, d.dilates, d.padding, d.padding_r),
      attr, onednn_engine());
  return {dnnl::convolution_forward(pd),
          pd.src_desc(),
          pd.weights_desc(),
          pd.dst_desc(),
          per_channel,
          pd.scratchpad_desc(),
          has_bias,
          std::string_view(pd.impl_info_str()).starts_with("ref")};
}

// A plan's memory objects and arguments, kept per thread (thread_call) and
// pointed at each call's buffers.
struct Int8ConvCall {
  std::shared_ptr<const Int8ConvPlan> plan;
  std::unordered_map<int, memory> args;
  std::vector<float> multipliers;

  explicit Int8ConvCall(std::shared_ptr<const Int8ConvPlan> made)
      : plan(std::move(made)), multipliers(static_cast<size_t>(plan->per_channel.dims()[1])) {
    args = {{DNNL_ARG_SRC, unbound_memory(plan->src)},
            {DNNL_ARG_WEIGHTS, unbound_memory(plan->weights)},
            {DNNL_ARG_DST, unbound_memory(plan->dst)},
            {kMultipliersArg, memory(plan->per_channel, onednn_engine(), multipliers.data())}};
    if (plan->has_bias) args.emplace(kBiasArg, unbound_memory(plan->per_channel));
    if (plan->scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, unbound_memory(plan->scratchpad));
  }
};

// A weight's int8 levels in a plan's layout, and its scale per output channel.
struct Int8ConvWeights {
  Tensor levels;
  std::vector<float> scales;
};

// `weight` ([O, I, kh, kw], contiguous) per output channel to symmetric int8,
// reordered into `layout` (which for an int8 input holds oneDNN's
// compensation of its shift to uint8 too).
std::shared_ptr<const Int8ConvWeights> quantize_weight(const Tensor& weight, const ConvDims& d,
                                                       const memory::desc& layout, dnnl::stream& stream) {
  const int64_t channels = weight.size(0), per_channel = weight.numel() / channels;
  const float* values = weight.data_ptr<float>();
  auto quantized = std::make_shared<Int8ConvWeights>();
  quantized->scales.resize(static_cast<size_t>(channels));
  std::vector<int8_t> plain(static_cast<size_t>(weight.numel()));
  for (int64_t o = 0; o < channels; ++o) {
    const float* channel = values + o * per_channel;
    const WeightLevels of = WeightLevels::of_group(8, true, channel, per_channel, 1);
    for (int64_t q = 0; q < per_channel; ++q) plain[o * per_channel + q] = static_cast<int8_t>(of.level(channel[q]));
    quantized->scales[o] = of.scale;
  }
  quantized->levels = Tensor::empty({static_cast<int64_t>(layout.get_size())}, DType::UInt8);
  memory from(d.weights_md(d.plain_weights, kS8), onednn_engine(), plain.data());
  memory to(layout, onednn_engine(), quantized->levels.data());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return quantized;
}

// The lowest and highest of `count` floats, and whether one is NaN.
struct Range {
  float low = std::numeric_limits<float>::infinity(), high = -std::numeric_limits<float>::infinity();
  bool nan = false;
};

OPGRAPH_AVX2_TARGET Range range_of(const float* values, int64_t count) {
  __m256 lows = _mm256_set1_ps(std::numeric_limits<float>::infinity()),
         highs = _mm256_sub_ps(_mm256_setzero_ps(), lows);
  __m256 nans = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 v = _mm256_loadu_ps(values + i);
    lows = _mm256_min_ps(lows, v);
    highs = _mm256_max_ps(highs, v);
    nans = _mm256_or_ps(nans, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  alignas(32) float low[8], high[8];
  _mm256_store_ps(low, lows);
  _mm256_store_ps(high, highs);
  Range range{*std::min_element(low, low + 8), *std::max_element(high, high + 8), _mm256_movemask_ps(nans) != 0};
  for (; i < count; ++i) {
    range.nan |= std::isnan(values[i]);
    range.low = std::min(range.low, values[i]);
    range.high = std::max(range.high, values[i]);
  }
  return range;
}

// Eight values times `scale`, clamped to [low, high], rounded to int32 (ties
// to even, as the vector conversion rounds).
OPGRAPH_AVX2_TARGET __m256i levels_of(const float* values, __m256 scale, __m256 low, __m256 high) {
  const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(values), scale);
  return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(scaled, low), high));
}

// values[i] * inverse rounded to the nearest level in [lowest, highest];
// int8 or uint8 by `to_signed`.
OPGRAPH_AVX2_TARGET void quantize(const float* values, int64_t count, float inverse, float lowest, float highest,
                                  bool to_signed, void* levels) {
  auto* to = static_cast<uint8_t*>(levels);
  const __m256 scale = _mm256_set1_ps(inverse), low = _mm256_set1_ps(lowest), high = _mm256_set1_ps(highest);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i pairs0 =
        _mm256_packs_epi32(levels_of(values + i, scale, low, high), levels_of(values + i + 8, scale, low, high));
    const __m256i pairs1 =
        _mm256_packs_epi32(levels_of(values + i + 16, scale, low, high), levels_of(values + i + 24, scale, low, high));
    const __m256i bytes = to_signed ? _mm256_packs_epi16(pairs0, pairs1) : _mm256_packus_epi16(pairs0, pairs1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  for (; i < count; ++i) {
    const int value = static_cast<int>(std::nearbyint(std::clamp(values[i] * inverse, lowest, highest)));
    to[i] = static_cast<uint8_t>(value);  // two's complement: the int8 level's byte
  }
}

// The input's levels: where it holds no negative value uint8 from 0 (up to
// 127 without VNNI: vpmaddubsw's 16-bit pairs of uint8 x int8 saturate past
// 32767, and oneDNN halves the weights for an int8 input only), symmetric
// int8 otherwise (which oneDNN shifts to uint8, compensating in its sums).
struct InputLevels {
  memory::data_type type;
  float scale, lowest, highest;

  static InputLevels of(const Range& range) {
    const bool non_negative = range.low >= 0;
    const float highest = non_negative ? (cpu_has_vnni() ? 255.0f : 127.0f) : 127.0f;
    const float largest = std::max(std::abs(range.low), std::abs(range.high));
    const float scale = largest > 0 ? largest / highest : 1.0f;
    return {non_negative ? kU8 : kS8, scale, non_negative ? 0.0f : -highest, highest};
  }
};

// The range of the `count` floats at `values`, over the context's threads.
Range parallel_range(const KernelContext& context, const float* values, int64_t count) {
  constexpr int64_t kGrain = 1 << 16;
  std::vector<Range> chunks(static_cast<size_t>(std::max<int64_t>(1, (count + kGrain - 1) / kGrain)));
  context.pool->parallel_for(0, static_cast<int64_t>(chunks.size()), 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      chunks[c] = range_of(values + c * kGrain, std::min(kGrain, count - c * kGrain));
    }
  });
  Range range;
  for (const Range& chunk : chunks) {
    range.low = std::min(range.low, chunk.low);
    range.high = std::max(range.high, chunk.high);
    range.nan |= chunk.nan;
  }
  return range;
}

}  // namespace

bool int8_activation_conv(const KernelContext& given_context, const Tensor& input, const Shape& input_dims,
                          const Tensor& weight, const Tensor& bias, const Tensor& residual, const Tensor& out,
                          const Shape& out_dims, const ConvParams& p, Activation activation) {
  PreparedWeights* prepared = prepared_weights(given_context);
  if (prepared == nullptr || !prepared->quantization().int8_activations || !is_constant_input(given_context, 1) ||
      cpu_capability() == CpuCapability::Default || p.groups != 1 || p.transposed || p.spatial != 2 ||
      !weight.is_contiguous() || (bias.defined() && !bias.is_contiguous())) {
    return false;
  }
  const int64_t count = shape_numel(input_dims);
  const Range range = parallel_range(given_context, input.data_ptr<float>(), count);
  if (range.nan || !std::isfinite(range.low) || !std::isfinite(range.high)) return false;
  const InputLevels levels = InputLevels::of(range);

  const KernelContext context = context_for_work(given_context, conv_flops(weight, out_dims));
  const OneDnnStream stream(context);  // first: sets the thread count the plan is built for
  std::vector<int64_t> key = conv_key(context, input, weight, bias.defined(), p);
  key.insert(key.end(), {static_cast<int64_t>(activation), residual.defined(), static_cast<int64_t>(levels.type)});
  const ConvDims dims = conv_dims(p, input_dims, weight.shape(), out_dims);
  const auto plan = int8_conv_plans().get(
      key, [&] { return build_int8_conv(dims, levels.type, bias.defined(), residual.defined(), activation); });
  if (plan->reference) return false;

  PreparedWeights::Key weights_key = layout_key(plan->weights);
  weights_key.push_back(reinterpret_cast<intptr_t>(weight.data()));
  const auto quantized =
      std::static_pointer_cast<const Int8ConvWeights>(prepared->derived(weights_key, spanned_bytes(weight), [&] {
        return std::shared_ptr<const void>(quantize_weight(weight, dims, plan->weights, stream));
      }));

  Int8ConvCall& call = thread_call<Int8ConvCall>(plan);
  for (size_t c = 0; c < call.multipliers.size(); ++c) call.multipliers[c] = levels.scale * quantized->scales[c];
  const size_t levels_bytes = aligned_size(static_cast<size_t>(count));
  auto* scratch = static_cast<char*>(thread_scratch(levels_bytes + plan->scratchpad.get_size()));
  const float* values = input.data_ptr<float>();
  const float inverse = 1.0f / levels.scale;
  given_context.pool->parallel_for(0, count, 1 << 16, [&](int64_t begin, int64_t end) {
    quantize(values + begin, end - begin, inverse, levels.lowest, levels.highest, levels.type == kS8, scratch + begin);
  });
  call.args.at(DNNL_ARG_SRC).set_data_handle(scratch);
  call.args.at(DNNL_ARG_WEIGHTS).set_data_handle(quantized->levels.data());
  call.args.at(DNNL_ARG_DST).set_data_handle(out.data());
  if (bias.defined()) call.args.at(kBiasArg).set_data_handle(bias.data());
  if (plan->scratchpad.get_size() > 0) call.args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(scratch + levels_bytes);
  if (residual.defined() && residual.data() != out.data()) std::memcpy(out.data(), residual.data(), out.nbytes());
  dnnl::stream& s = stream;
  plan->conv.execute(s, call.args);
  s.wait();
  prepared->note_engine("oneDNN int8 convolution (int8 activations)");
  return true;
}

}  // namespace opgraph::kernels
