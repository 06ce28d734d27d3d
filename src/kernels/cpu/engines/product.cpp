// float32 runs on the weight's panels where it is a Session's and the
// product has one row or a few, or the Session quantizes its weights
// (few_rows_product.cpp); with rows enough, on whichever of the panels, MKL
// (mkl_product.cpp) and oneDNN ran its shape fastest on this CPU model
// (engine_pick.h); else on oneDNN's matmul primitive, which
// reads the caller's buffers in place through shape-and-stride descriptors
// (transposed weights, broadcast batches and the bias cost no copy) and
// applies the activation as a post-op. In a Session of Precision::BFloat16
// a product with a weight runs on bfloat16 operands: the weight converted
// once with its packing, a converted per call (but for up to 8 rows, which
// few_rows_product.cpp multiplies as they are), the sums, bias and post-ops in
// float32. bfloat16 tensors run on oneDNN's bfloat16 matmul, which sums
// and applies the bias and post-ops in float32 and rounds once, or, where
// oneDNN has only its reference kernel for them, on float32 copies.
// float64, which oneDNN does not compute, and the reference use a plain loop.
#include "kernels/cpu/engines/product.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/engines/engine_pick.h"
#include "kernels/cpu/engines/few_rows_product.h"
#include "kernels/cpu/engines/int8_product.h"
#include "kernels/cpu/engines/panel_tiles.h"
#include "kernels/cpu/mkl/mkl_product.h"
#include "kernels/cpu/onednn/onednn.h"
#include "kernels/cpu/util/bfloat16.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/define.h"
#include "opgraph/core/cpu_capability.h"

namespace opgraph::kernels {
namespace {

// What oneDNN multiplies: float32 as the caller holds it, the caller's
// float32 rounded to bfloat16 (a Session of Precision::BFloat16), or the
// caller's bfloat16.
enum class Arithmetic { Float32, RoundedToBFloat16, BFloat16 };

// The type of the caller's buffers.
dnnl::memory::data_type held_type(Arithmetic arithmetic) {
  return arithmetic == Arithmetic::BFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

bool is_reference_kernel(const dnnl::matmul::primitive_desc& pd) {
  return std::string_view(pd.impl_info_str()).starts_with("ref");
}

// A dense row-major bfloat16 buffer of `f32`'s dims: what a is converted into.
dnnl::memory::desc dense_bf16(const dnnl::memory::desc& f32) {
  const dnnl::memory::dims dims = f32.dims();
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t d = dims.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * dims[d + 1];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::bf16, strides);
}

// oneDNN 2.6 has two float32 matmul implementations: brgemm kernels, which
// it tries first, and the jit GEMM behind dnnl_sgemm. On an AVX-512 core the
// GEMM runs tall products faster (M = 1024, N = K = 1024: 102 against 95
// GFLOP/s) and short ones slower (M = 256: 90 against 97; M = 512 is even),
// so tall products take it, unless they apply an activation: the GEMM
// applies it in a pass over its output, brgemm on the sums in registers
// (BERT's 1024 x 768 x 3072 with gelu, 2 threads: 23.3 ms against 22.5).
constexpr int64_t kTallRows = 1024;

// `packed_w`: the weights in a layout of oneDNN's choosing (the caller
// converts them), not as `p` lays them out. RoundedToBFloat16 (with
// packed_w set) falls back to Float32 where oneDNN has no fast bfloat16
// kernel for the product.
dnnl::matmul::primitive_desc matmul_desc(const Product& p, bool packed_w, Arithmetic arithmetic) {
  const dnnl::memory::data_type held = held_type(arithmetic);
  dnnl::post_ops post_ops;
  if (p.accumulate) post_ops.append_sum(1.0f);
  append_activation_post_op(post_ops, p.activation);
  if (p.multiplier) post_ops.append_binary(dnnl::algorithm::binary_mul, describe(*p.multiplier, held));
  dnnl::primitive_attr attr = with_caller_scratchpad();
  attr.set_post_ops(post_ops);
  // The descriptor outlives the primitive_desc: stepping through the
  // implementations reads it.
  const auto w_type = arithmetic == Arithmetic::Float32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
  const dnnl::memory::desc w =
      packed_w ? dnnl::memory::desc(describe(p.w, held).dims(), w_type, dnnl::memory::format_tag::any)
               : describe(p.w, held);
  const bool rounds_a = arithmetic == Arithmetic::RoundedToBFloat16;
  const dnnl::matmul::desc desc(rounds_a ? dense_bf16(describe(p.a, held)) : describe(p.a, held), w,
                                p.bias ? describe(*p.bias, held) : dnnl::memory::desc(), describe(p.dst, held));
  dnnl::matmul::primitive_desc pd(desc, attr, onednn_engine());
  if (rounds_a) {
    // Where oneDNN has only its reference kernel for bfloat16 (odd
    // strides), float32's fast ones win.
    return is_reference_kernel(pd) ? matmul_desc(p, packed_w, Arithmetic::Float32) : pd;
  }
  if (arithmetic != Arithmetic::Float32 || p.dst.shape[p.dst.shape.size() - 2] < kTallRows ||
      p.activation != Activation::None) {
    return pd;
  }
  const dnnl::matmul::primitive_desc first = pd;
  while (std::string_view(pd.impl_info_str()) != "gemm:jit") {
    if (!pd.next_impl()) return first;
  }
  return pd;
}

// A product's primitive and its operands' descriptors, cached by shapes,
// strides, activation and thread count.
struct ProductPlan {
  dnnl::primitive matmul;
  dnnl::memory::desc a, w, dst, bias, multiplier;  // bias and multiplier are empty without one
  int multiplier_arg = 0;                          // the multiplier's argument: its post-op's
  // When the plan runs on a packed copy of w: w as the caller lays it out,
  // and the key of the layout the copy is in (both empty otherwise).
  dnnl::memory::desc plain_w;
  PreparedWeights::Key packed_layout;
  // With float32 operands rounded to bfloat16 (asked for, and fast in
  // oneDNN): what a is converted into, and the conversion (empty otherwise).
  dnnl::memory::desc converted_a;
  dnnl::reorder convert_a;
  dnnl::memory::desc scratchpad;
  // Whether oneDNN had only its reference kernel for the product.
  bool reference_kernel = false;

  ProductPlan(const Product& p, bool packed_w, Arithmetic arithmetic) {
    const dnnl::memory::data_type held = held_type(arithmetic);
    const dnnl::matmul::primitive_desc pd = matmul_desc(p, packed_w, arithmetic);
    matmul = dnnl::matmul(pd);
    reference_kernel = is_reference_kernel(pd);
    a = describe(p.a, held);
    if (arithmetic == Arithmetic::RoundedToBFloat16 && pd.src_desc().data_type() == dnnl::memory::data_type::bf16) {
      converted_a = pd.src_desc();
      convert_a = dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), a, onednn_engine(), converted_a));
    }
    w = pd.weights_desc();
    if (packed_w && w != describe(p.w, held)) {
      plain_w = describe(p.w, held);
      packed_layout = layout_key(w);
    }
    dst = describe(p.dst, held);
    if (p.bias) bias = describe(*p.bias, held);
    if (p.multiplier) {
      multiplier = describe(*p.multiplier, held);
      const int post_op = (p.accumulate ? 1 : 0) + (p.activation != Activation::None ? 1 : 0);
      multiplier_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_op) | DNNL_ARG_SRC_1;
    }
    scratchpad = pd.scratchpad_desc();
  }
};

// A plan's memory objects and argument map, kept per thread (thread_call):
// made on every call they took most of a small product's time.
struct ProductCall {
  std::shared_ptr<const ProductPlan> plan;
  std::unordered_map<int, dnnl::memory> args;
  dnnl::memory plain_a;  // a as the caller has it, when the plan converts it
  // In the thread's scratch: the converted a first, then the scratchpad.
  size_t scratchpad_offset = 0;

  explicit ProductCall(std::shared_ptr<const ProductPlan> made) : plan(std::move(made)) {
    const bool converts = !plan->converted_a.is_zero();
    args = {{DNNL_ARG_SRC, unbound_memory(converts ? plan->converted_a : plan->a)},
            {DNNL_ARG_WEIGHTS, unbound_memory(plan->w)},
            {DNNL_ARG_DST, unbound_memory(plan->dst)}};
    if (converts) {
      plain_a = unbound_memory(plan->a);
      scratchpad_offset = aligned_size(plan->converted_a.get_size());
    }
    if (!plan->bias.is_zero()) args.emplace(DNNL_ARG_BIAS, unbound_memory(plan->bias));
    if (!plan->multiplier.is_zero()) args.emplace(plan->multiplier_arg, unbound_memory(plan->multiplier));
    if (plan->scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, unbound_memory(plan->scratchpad));
  }

  // `w`: p.w's data, or its packed copy when the plan packs it.
  void run(const Product& p, const void* w, dnnl::stream& stream) {
    const size_t scratch_bytes = scratchpad_offset + plan->scratchpad.get_size();
    auto* scratch = static_cast<uint8_t*>(scratch_bytes > 0 ? thread_scratch(scratch_bytes) : nullptr);
    if (!plan->converted_a.is_zero()) {
      plain_a.set_data_handle(p.a.data);
      args.at(DNNL_ARG_SRC).set_data_handle(scratch);
      plan->convert_a.execute(stream, plain_a, args.at(DNNL_ARG_SRC));
    } else {
      args.at(DNNL_ARG_SRC).set_data_handle(p.a.data);
    }
    args.at(DNNL_ARG_WEIGHTS).set_data_handle(const_cast<void*>(w));
    args.at(DNNL_ARG_DST).set_data_handle(p.dst.data);
    if (p.bias) args.at(DNNL_ARG_BIAS).set_data_handle(p.bias->data);
    if (p.multiplier) args.at(plan->multiplier_arg).set_data_handle(p.multiplier->data);
    if (plan->scratchpad.get_size() > 0) args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(scratch + scratchpad_offset);
    plan->matmul.execute(stream, args);
    stream.wait();
  }
};

// A Session's weight in the layout `plan` runs on, converted on first use
// and kept in the node's prepared weights, as ONNX Runtime prepacks its
// MatMul weights: under the key of the layout, so that the plans of every
// batch size that chose it share one copy. oneDNN's matmul otherwise
// repacks a weight on every call, which costs the most for the transposed
// [N, K] weights of linear layers.
const void* packed_weight(const KernelContext& context, const ProductPlan& plan, const Product& p,
                          dnnl::stream& stream) {
  PreparedWeights::Key key = plan.packed_layout;
  key.push_back(reinterpret_cast<intptr_t>(p.w.data));
  const std::span<const std::byte> source(static_cast<const std::byte*>(p.w.data), plan.plain_w.get_size());
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, source, [&] {
    auto packed = std::make_shared<Tensor>(Tensor::empty({static_cast<int64_t>(plan.w.get_size())}, DType::UInt8));
    dnnl::memory from(plan.plain_w, onednn_engine(), p.w.data), to(plan.w, onednn_engine(), packed->data());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
    return std::shared_ptr<const void>(packed, packed->data());
  });
  return kept.get();
}

// A copy of `from` laid out as `to`, converting its elements to `to`'s type.
void reorder(const dnnl::memory::desc& from, const void* from_data, const dnnl::memory::desc& to, void* to_data,
             dnnl::stream& stream) {
  const dnnl::reorder::primitive_desc pd(onednn_engine(), from, onednn_engine(), to, with_caller_scratchpad());
  execute_with_scratchpad(dnnl::reorder(pd), stream,
                          {{DNNL_ARG_FROM, dnnl::memory(from, onednn_engine(), const_cast<void*>(from_data))},
                           {DNNL_ARG_TO, dnnl::memory(to, onednn_engine(), to_data)}},
                          pd.scratchpad_desc());
  stream.wait();
}

// A bfloat16 product oneDNN does not compute (a CPU without AVX-512) or has
// only its reference kernel for (layouts its fast kernels do not take): the
// operands widened to float32 copies, multiplied by float32's kernels, the
// result rounded to bfloat16 once, as oneDNN's bfloat16 kernels round it.
void widened_product(const KernelContext& context, const Product& p) {
  const OneDnnStream stream(context);
  std::vector<Tensor> copies;
  // `read`: whether the product reads op's elements (dst's only when it accumulates).
  auto widened = [&](const Operand& op, bool read = true) {
    const Tensor& copy = copies.emplace_back(Tensor::empty(op.shape, DType::Float32));
    const Operand wide{copy.data(), op.shape, copy.strides()};
    if (read) {
      reorder(describe(op, dnnl::memory::data_type::bf16), op.data, describe(wide, dnnl::memory::data_type::f32),
              copy.data(), stream);
    }
    return wide;
  };
  Product wide = p;
  wide.a = widened(p.a);
  wide.w = widened(p.w);
  wide.dst = widened(p.dst, p.accumulate);
  if (p.bias) wide.bias = widened(*p.bias);
  if (p.multiplier) wide.multiplier = widened(*p.multiplier);
  wide.constant_w = false;  // the copy is not the Session's weight
  run_product(context, wide, DType::Float32, false);
  reorder(describe(wide.dst, dnnl::memory::data_type::f32), wide.dst.data,
          describe(p.dst, dnnl::memory::data_type::bf16), p.dst.data, stream);
}

void onednn_product(const KernelContext& given_context, const Product& p, DType dtype) {
  const KernelContext context = context_for_work(given_context, 2 * p.a.shape.back() * shape_numel(p.dst.shape));
  const bool packed_w = p.constant_w && prepared_weights(context) != nullptr;
  const Arithmetic arithmetic = dtype == DType::BFloat16 ? Arithmetic::BFloat16
                                : packed_w && weight_precision(context) == Precision::BFloat16
                                    ? Arithmetic::RoundedToBFloat16
                                    : Arithmetic::Float32;
  if (arithmetic == Arithmetic::BFloat16 && !onednn_computes_bfloat16()) return widened_product(context, p);
  PrimitiveCache<ProductPlan>::Key key{
      static_cast<int64_t>(p.activation), p.bias.has_value(), packed_w, p.accumulate, p.multiplier.has_value(),
      static_cast<int64_t>(arithmetic)};
  for (const Operand* op : {&p.a, &p.w, &p.dst, p.bias ? &*p.bias : nullptr, p.multiplier ? &*p.multiplier : nullptr}) {
    if (op == nullptr) continue;
    key.insert(key.end(), op->shape.begin(), op->shape.end());
    key.insert(key.end(), op->strides.begin(), op->strides.end());
  }
  static PrimitiveCache<ProductPlan> plans(256);
  const OneDnnStream stream(context);
  const auto plan =
      cached_primitive(plans, context, stream, std::move(key), [&] { return ProductPlan(p, packed_w, arithmetic); });
  if (arithmetic == Arithmetic::BFloat16 && plan->reference_kernel) return widened_product(context, p);
  const void* w = plan->packed_layout.empty() ? p.w.data : packed_weight(context, *plan, p, stream);
  thread_call<ProductCall>(plan).run(p, w, stream);
}

// The products whose engine is measured (engine_pick.h) rather than given
// by rule: with this many rows, the multiply-adds bound them rather than
// streaming the weight from memory, so timing one node's product again and
// again, its weight in cache, ranks the engines as a model's run, its weights
// streamed, does. Fewer rows stay on rules: the panels up to kMaxPanelRows,
// oneDNN beyond.
constexpr int64_t kMinMeasuredRows = 128;

bool overlap(const Operand& x, const Operand& y) {
  const std::span<const std::byte> a = spanned_bytes(x.data, x.shape, x.strides, sizeof(float));
  const std::span<const std::byte> b = spanned_bytes(y.data, y.shape, y.strides, sizeof(float));
  return !a.empty() && !b.empty() && a.data() < b.data() + b.size() && b.data() < a.data() + a.size();
}

// What a measured pick holds for: the product's shape, its rows by powers of
// two (a prompt's length varies), its epilogue and the thread count.
std::string product_class(const KernelContext& context, const Product& p) {
  const int64_t rows = p.dst.shape[0], k = p.a.shape[1], n = p.dst.shape[1];
  const int64_t least_rows = std::bit_floor(static_cast<uint64_t>(rows));
  std::string epilogue = p.bias ? ", bias" : "";
  if (p.activation != Activation::None) epilogue += detail::concat(", ", activation_name(p.activation));
  if (p.multiplier) epilogue += ", multiplier";
  if (p.accumulate) epilogue += ", accumulated";
  return detail::concat("float32 ", least_rows, "-", 2 * least_rows - 1, " rows x ", k, " x ", n,
                        p.w.strides[1] == 1 ? "" : " (w transposed)", epilogue, ", ", context.pool->num_threads(),
                        " threads");
}

// Runs a float32 product of a Session's weight on the engine measured the
// fastest for its class (engine_pick.h), or returns false, having done
// nothing, where it is not a product the pick serves.
bool measured_product(const KernelContext& context, const Product& p) {
  PreparedWeights* prepared = prepared_weights(context);
  if (prepared == nullptr || !p.constant_w || p.dst.shape.size() != 2 || p.a.shape[1] == 0 ||
      weight_precision(context) != Precision::Float32) {
    return false;
  }
  // Each engine's runs overwrite dst, and one run's dst must not be another's input.
  for (const Operand* input : {&p.a, &p.w, p.bias ? &*p.bias : nullptr, p.multiplier ? &*p.multiplier : nullptr}) {
    if (input != nullptr && overlap(p.dst, *input)) return false;
  }
  // An accumulated product adds to what dst held: each run starts from it.
  std::vector<float> held;
  const int64_t rows = p.dst.shape[0], n = p.dst.shape[1];
  auto* dst = static_cast<float*>(p.dst.data);
  const auto dst_row = [&](int64_t i) { return dst + i * p.dst.strides[0]; };
  const bool rows_contiguous = p.dst.strides[1] == 1;
  if (p.accumulate) {
    if (!rows_contiguous) return false;
    held.resize(rows * n);
    for (int64_t i = 0; i < rows; ++i) std::copy_n(dst_row(i), n, held.data() + i * n);
  }
  const auto restore = [&] {
    for (int64_t i = 0; p.accumulate && i < rows; ++i) std::copy_n(held.data() + i * n, n, dst_row(i));
  };
  std::vector<EngineTrial> trials{{"oneDNN", [&] { return onednn_product(context, p, DType::Float32), true; }}};
#if OPGRAPH_WITH_MKL
  trials.push_back({"MKL", [&] { return mkl_product(context, p); }});
#endif
  trials.push_back({"opgraph panels", [&] { return runs_panel_rows() && few_rows_times_matrix(context, p, true); }});
  // The forms of the weight each engine made on its first run: the engines
  // not picked drop theirs, which would double the memory a weight takes.
  std::vector<std::vector<PreparedWeights::Key>> made(trials.size());
  std::vector<EngineTrial> tracked;
  for (size_t i = 0; i < trials.size(); ++i) {
    tracked.push_back({trials[i].engine, [&, i, first = true]() mutable {
                         if (!first) return trials[i].run();
                         first = false;
                         const std::vector<PreparedWeights::Key> before = prepared->form_keys();
                         const bool ran = trials[i].run();
                         for (PreparedWeights::Key& key : prepared->form_keys()) {
                           if (std::find(before.begin(), before.end(), key) == before.end())
                             made[i].push_back(std::move(key));
                         }
                         return ran;
                       }});
  }
  const EnginePick pick = pick_engine(product_class(context, p), tracked, restore);
  if (pick.note == nullptr) return false;
  for (size_t i = 0; i < made.size(); ++i) {
    if (i != pick.trial) prepared->forget(made[i]);
  }
  note_engine(context, pick.note);
  return true;
}

// dst[b, i, j] = f(sum_p a[b, i, p] * w[b, p, j] + bias[b, i, j] (+ dst[b, i, j])) (* multiplier[b, i, j]),
// in double, rounded to T once.
template <typename T>
void plain_product(const Product& p) {
  const size_t rank = p.dst.shape.size();
  const int64_t m = p.dst.shape[rank - 2], n = p.dst.shape[rank - 1], k = p.a.shape[rank - 1];
  auto at = [rank](const Operand& op, std::span<const int64_t> batch, int64_t row, int64_t col) {
    // Extent-1 dimensions broadcast: they are always read at index 0.
    auto step = [&op](size_t d, int64_t i) { return op.shape[d] == 1 ? 0 : i * op.strides[d]; };
    int64_t offset = step(rank - 2, row) + step(rank - 1, col);
    for (size_t d = 0; d + 2 < rank; ++d) offset += step(d, batch[d]);
    return static_cast<T*>(op.data) + offset;
  };
  std::vector<int64_t> batch(rank - 2, 0);
  for (int64_t b = 0; b < shape_numel(std::span(p.dst.shape).first(rank - 2)); ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = p.bias ? *at(*p.bias, batch, i, j) : 0.0;
        if (p.accumulate) sum += *at(p.dst, batch, i, j);
        for (int64_t q = 0; q < k; ++q) sum += double(*at(p.a, batch, i, q)) * *at(p.w, batch, q, j);
        const double gate = p.multiplier ? double(*at(*p.multiplier, batch, i, j)) : 1.0;
        *at(p.dst, batch, i, j) = static_cast<T>(activation_reference(p.activation, sum) * gate);
      }
    }
    for (size_t d = batch.size(); d-- > 0;) {
      if (++batch[d] < p.dst.shape[d]) break;
      batch[d] = 0;
    }
  }
}

// The stride that steps through dims [0, end) of `op` as one dimension of
// their total extent, if their strides allow it (extent-1 dims are never
// stepped along).
std::optional<int64_t> flat_stride(const Operand& op, size_t end) {
  std::optional<int64_t> stride;
  int64_t inner = 1;  // elements the dims inside the current one span, in units of `stride`
  for (size_t d = end; d-- > 0;) {
    if (op.shape[d] == 1) continue;
    if (stride && op.strides[d] != *stride * inner) return std::nullopt;
    if (!stride) stride = op.strides[d];
    inner *= op.shape[d];
  }
  return stride.value_or(1);
}

// A product whose weight (and bias) is one matrix for every batch, as one
// product of all the batches' rows, where the rows are evenly spaced in a and
// dst. oneDNN ran (1, 12, 1, 64) @ (64, 1024), an attention head's scores
// against cached keys, as twelve one-row products in 0.048 ms; as one
// (12, 64) @ (64, 1024) product it takes 0.011.
std::optional<Product> batches_as_rows(const Product& p) {
  const size_t rank = p.dst.shape.size();
  if (rank <= 2) return std::nullopt;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (p.w.shape[d] != 1 || p.a.shape[d] != p.dst.shape[d]) return std::nullopt;
  }
  // A multiplier is a linear layer's, whose rows are already one matrix.
  if (p.multiplier || (p.bias && shape_numel(p.bias->shape) != p.bias->shape.back())) return std::nullopt;
  const std::optional<int64_t> a_rows = flat_stride(p.a, rank - 1), dst_rows = flat_stride(p.dst, rank - 1);
  if (!a_rows || !dst_rows) return std::nullopt;
  const int64_t rows = shape_numel(std::span(p.dst.shape).first(rank - 1));
  auto matrix = [rank](const Operand& op, int64_t rows, int64_t row_stride) {
    return Operand{op.data, {rows, op.shape[rank - 1]}, {row_stride, op.strides[rank - 1]}};
  };
  Product stacked{matrix(p.a, rows, *a_rows),
                  matrix(p.w, p.w.shape[rank - 2], p.w.strides[rank - 2]),
                  matrix(p.dst, rows, *dst_rows),
                  std::nullopt,
                  p.activation,
                  p.constant_w,
                  p.accumulate};
  if (p.bias) stacked.bias = matrix(*p.bias, 1, 0);
  return stacked;
}

}  // namespace

// A dim of extent 1 is never stepped along, so its stride is free; oneDNN
// reads a zero or odd one there (a broadcast batch, a single row) as a layout
// its fast kernels do not take, and runs its reference implementation instead:
// (1, 12, 1, 64) @ (64, 1024) took 10 ms for 40 us. Such dims get the stride a
// dense layout would give them: the span of the dims inside them.
dnnl::memory::desc describe(const Operand& op, dnnl::memory::data_type type) {
  dnnl::memory::dims strides(op.strides.begin(), op.strides.end());
  for (size_t d = strides.size(); d-- > 0;) {
    if (op.shape[d] != 1) continue;
    strides[d] = 1;
    for (size_t inner = d + 1; inner < strides.size(); ++inner) {
      strides[d] = std::max<dnnl::memory::dim>(strides[d], strides[inner] * op.shape[inner]);
    }
  }
  return dnnl::memory::desc(dnnl::memory::dims(op.shape.begin(), op.shape.end()), type, strides);
}

// The words of a memory descriptor: a key for what is laid out by it.
PreparedWeights::Key layout_key(const dnnl::memory::desc& desc) {
  const dnnl_memory_desc_t& layout = desc.data;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&layout);
  PreparedWeights::Key key;
  for (size_t at = 0; at < sizeof layout; at += sizeof(int64_t)) {
    int64_t word = 0;
    std::memcpy(&word, bytes + at, std::min(sizeof word, sizeof layout - at));
    key.push_back(word);
  }
  return key;
}

Operand operand(const Tensor& t, Shape shape, Strides strides, size_t rank, bool transposed) {
  if (transposed) {
    std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
    std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  }
  while (shape.size() < rank) {
    shape.insert(shape.begin(), 1);
    strides.insert(strides.begin(), 0);
  }
  for (size_t d = 0; d + 2 < shape.size(); ++d) {
    if (shape[d] == 1) strides[d] = 0;
  }
  return {t.data(), std::move(shape), std::move(strides)};
}

Operand operand(const Tensor& t, size_t rank, bool transposed) {
  return operand(t, t.shape(), t.strides(), rank, transposed);
}

bool is_constant_matrix(const KernelContext& context, size_t input, const Tensor& w) {
  return is_constant_input(context, input) && w.dim() <= 2;
}

void run_product(const KernelContext& context, const Product& p, DType dtype, bool reference) {
  if (shape_numel(p.dst.shape) == 0) return;
  if (!reference) {
    if (const std::optional<Product> stacked = batches_as_rows(p)) return run_product(context, *stacked, dtype, false);
  }
  const int64_t rows = p.a.shape[p.a.shape.size() - 2];
  const bool float32 = !reference && dtype == DType::Float32;
  const WeightQuantization quantization = weight_quantization(context);
  // oneDNN's int8 matmul takes symmetric weights of a scale per output channel.
  const bool per_channel_int8 = quantization.bits != 4 && quantization.group_size == 0 && quantization.symmetric;
  if (float32 && rows >= kMinInt8ActivationRows && quantization.int8_activations && per_channel_int8 &&
      int8_activation_product(context, p)) {
    return note_engine(context, "oneDNN int8 (int8 activations, 16 rows or more)");
  }
  const ProductEngine engine = product_engine(context);
  const bool quantized = quantization.bits != 0;
  if (float32 &&
      (quantized || engine == ProductEngine::Panels || (engine == ProductEngine::Auto && rows <= kMaxPanelRows)) &&
      few_rows_times_matrix(context, p)) {
    const bool dot = quantized && runs_on_dot_panels(context, p.a.shape.back());
    return note_engine(context, dot                               ? "opgraph dot-product panels (int8 activations)"
                                : quantized                       ? "opgraph panels (integer levels)"
                                : engine == ProductEngine::Panels ? "opgraph panels (products=panels)"
                                                                  : "opgraph panels (64 rows or fewer)");
  }
#if OPGRAPH_WITH_MKL
  if (float32 && engine == ProductEngine::Mkl && mkl_product(context, p)) {
    return note_engine(context, "MKL (products=mkl)");
  }
#endif
  if (float32 && engine == ProductEngine::Auto && !quantized && rows >= kMinMeasuredRows &&
      measured_product(context, p)) {
    return;
  }
  // oneDNN computes neither float64 nor sums over an empty inner dimension.
  if (!reference && dtype != DType::Float64 && p.a.shape.back() > 0) {
    note_engine(context, engine == ProductEngine::OneDnn ? "oneDNN (products=onednn)" : "oneDNN");
    return onednn_product(context, p, dtype);
  }
  dispatch_floating<BFloat16>(dtype, "self", [&](auto zero) { plain_product<decltype(zero)>(p); });
}

void column_sums(const KernelContext& context, const Tensor& m, int64_t rows, int64_t cols, const Tensor& out,
                 bool reference) {
  const Tensor ones = Tensor::empty({1, rows}, m.dtype());
  dispatch_floating<BFloat16>(m.dtype(), "grad_output", [&](auto zero) {
    using T = decltype(zero);
    std::fill_n(ones.data_ptr<T>(), rows, T(1));
  });
  run_product(
      context,
      {operand(ones, 2), operand(m, {rows, cols}, {cols, 1}, 2), operand(out, {1, cols}, {cols, 1}, 2), std::nullopt},
      m.dtype(), reference);
}

void check_dtypes(const TensorMeta& a, const char* a_name, const TensorMeta& b, const char* b_name,
                  bool takes_bfloat16) {
  const bool accepted =
      a.dtype == DType::Float32 || a.dtype == DType::Float64 || (takes_bfloat16 && a.dtype == DType::BFloat16);
  OPGRAPH_CHECK(
      accepted, a_name,
      takes_bfloat16 ? ": expected float32, float64 or bfloat16, got " : ": expected float32 or float64, got ",
      a.str());
  OPGRAPH_CHECK(b.dtype == a.dtype, b_name, ": expected ", dtype_name(a.dtype), " like ", a_name, ", got ", b.str());
}

void check_rank(const TensorMeta& t, const char* name, int64_t rank) {
  OPGRAPH_CHECK(t.dim() == rank, name, ": expected rank ", rank, ", got ", t.str());
}

void check_inner(const TensorMeta& a, int64_t k_a, const TensorMeta& b, int64_t k_b) {
  OPGRAPH_CHECK(k_a == k_b, "cannot multiply ", a.str(), " by ", b.str(), ": inner dimensions ", k_a, " and ", k_b,
                " differ");
}

}  // namespace opgraph::kernels
