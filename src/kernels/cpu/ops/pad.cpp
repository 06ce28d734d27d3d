// Padding: constant_pad_nd (any rank; negative pads crop), the reflection
// and replication pads over the last 1, 2 or 3 dims, batched or not, and
// aten::pad, which names one of them (or a circular pad) by its mode.
//
// Every pad maps each output position along a padded dim to a position of the
// input, or to none (a constant pad's border): i = o - before, then mirrored
// (reflect), clamped (replicate) or wrapped (circular) into [0, n). The kernel tabulates that map
// per dim and copies rows: the stretch of a row that maps onto the input row
// in order is one contiguous copy; only the borders go through the table.
#include <algorithm>

#include "kernels/cpu/util/elementwise.h"
#include "kernels/shape/checked.h"

namespace opgraph::kernels {
namespace {

enum class Mode { kConstant, kReflect, kReplicate, kCircular };

// Where output position o of a dim of extent n padded by `before` reads, or -1.
template <Mode kMode>
int64_t source_index(int64_t o, int64_t before, int64_t n) {
  const int64_t i = o - before;
  if constexpr (kMode == Mode::kConstant) return i >= 0 && i < n ? i : -1;
  if constexpr (kMode == Mode::kReflect) return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
  if constexpr (kMode == Mode::kCircular) return (i % n + n) % n;
  return std::clamp<int64_t>(i, 0, n - 1);
}

// Per dim of self: the padding before it (0 where not padded) and the
// result's shape.
struct Padding {
  std::vector<int64_t> before;
  Shape out;
};

// `pad` holds (before, after) pairs for the last dims, the last dim first, as
// ATen's pads do.
Padding padding_of(const TensorMeta& self, std::span<const int64_t> pad, const char* argument, int64_t least) {
  OPGRAPH_CHECK(pad.size() % 2 == 0, argument, ": expected an even number of values, got ", shape_str(pad));
  OPGRAPH_CHECK(static_cast<int64_t>(pad.size()) <= 2 * self.dim(), argument, ": ", pad.size(),
                " values pad more dims than input ", self.str(), " has");
  Padding padding{std::vector<int64_t>(self.shape.size(), 0), self.shape};
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    const size_t d = self.shape.size() - 1 - k;
    const int64_t extent = checked_add(checked_add(self.shape[d], pad[2 * k], argument), pad[2 * k + 1], argument);
    OPGRAPH_CHECK(extent >= least, argument, ": ", shape_str(pad), " gives dim ", d, " of input ", self.str(),
                  " extent ", extent, ", expected at least ", least);
    padding.before[d] = pad[2 * k];
    padding.out[d] = extent;
  }
  return padding;
}

// ---- Shape functions -------------------------------------------------------

// What an op's attributes say: the pads, the argument that holds them, and
// the constant a constant pad fills with.
struct PadArgs {
  std::span<const int64_t> pad;
  const char* argument;
  double value;
};

// kDims 0 (constant pads): any rank, any pad that leaves no negative extent.
// kDims N: input (batch,) channels and N dims, each padded to at least 1; a
// reflection pad stays below the extent it mirrors, a circular one wraps
// around at most once and crops nothing.
template <Mode kMode, int kDims>
Padding padding_for(const TensorMeta& self, const PadArgs& args) {
  if constexpr (kDims == 0) {
    return padding_of(self, args.pad, args.argument, 0);
  } else {
    OPGRAPH_CHECK(self.dim() == kDims + 1 || self.dim() == kDims + 2, "self: expected rank ", kDims + 1, " or ",
                  kDims + 2, " ((batch,) channels and ", kDims, " padded dims), got ", self.str());
    for (int64_t d = self.dim() - kDims - 1; d < self.dim(); ++d) {
      OPGRAPH_CHECK(self.shape[d] > 0, "self: expected non-zero extents except the batch's, got ", self.str());
    }
    OPGRAPH_CHECK(args.pad.size() == 2 * kDims, args.argument, ": expected ", 2 * kDims, " values, got ",
                  shape_str(args.pad));
    for (size_t k = 0; k < args.pad.size() && kMode != Mode::kReplicate; ++k) {
      const int64_t n = self.shape[self.shape.size() - 1 - k / 2];
      OPGRAPH_CHECK(kMode == Mode::kReflect ? args.pad[k] < n : args.pad[k] <= n, args.argument, ": ",
                    shape_str(args.pad), " must stay ", kMode == Mode::kReflect ? "below" : "within", " the extent it ",
                    kMode == Mode::kReflect ? "reflects" : "wraps", ", but ", args.pad[k], " pads a dim of extent ", n,
                    " of input ", self.str());
      // ATen crops a circular pad's input first; wrapping that is not this map.
      OPGRAPH_CHECK(kMode != Mode::kCircular || args.pad[k] >= 0, args.argument, ": ", shape_str(args.pad),
                    " crops, which a circular pad does not take here");
    }
    return padding_of(self, args.pad, args.argument, 1);
  }
}

// aten::pad: calls fn.template operator()<kMode, kDims>() for its mode and
// the number of dims its pads cover.
template <typename Fn>
auto with_pad_mode(std::span<const int64_t> pad, std::string_view mode, Fn&& fn) {
  if (mode == "constant") return fn.template operator()<Mode::kConstant, 0>();
  const size_t dims = pad.size() / 2;
  OPGRAPH_CHECK(dims >= 1 && dims <= 3 && pad.size() == 2 * dims, "pad: mode '", mode,
                "' pads 1, 2 or 3 dims: expected 2, 4 or 6 values, got ", shape_str(pad));
  const auto with_dims = [&]<Mode kMode>() {
    if (dims == 1) return fn.template operator()<kMode, 1>();
    if (dims == 2) return fn.template operator()<kMode, 2>();
    return fn.template operator()<kMode, 3>();
  };
  if (mode == "reflect") return with_dims.template operator()<Mode::kReflect>();
  if (mode == "replicate") return with_dims.template operator()<Mode::kReplicate>();
  OPGRAPH_CHECK(mode == "circular", "mode: expected constant, reflect, replicate or circular, got '", mode, "'");
  return with_dims.template operator()<Mode::kCircular>();
}

template <Mode kMode, int kDims>
TensorMeta pad_shape(const TensorMeta& self, const PadArgs& args) {
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  return {self.dtype, padding_for<kMode, kDims>(self, args).out};
}

// ---- Kernels ---------------------------------------------------------------------

// Row by row over the output: a border row (an outer dim maps to none) is
// all `value`; otherwise the row's middle is the input row, in order, and its
// borders read through the last dim's table.
template <Mode kMode, int kDims>
void pad_kernel(const KernelContext& context, const Tensor& self, const PadArgs& args, const Tensor& out) {
  if (out.numel() == 0) return;
  const Padding padding = padding_for<kMode, kDims>(self.meta(), args);
  const Shape in_shape = self.dim() == 0 ? Shape{1} : self.shape();
  const Shape out_shape = self.dim() == 0 ? Shape{1} : padding.out;
  const size_t rank = in_shape.size();
  std::vector<std::vector<int64_t>> table(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t before = self.dim() == 0 ? 0 : padding.before[d];
    for (int64_t o = 0; o < out_shape[d]; ++o) table[d].push_back(source_index<kMode>(o, before, in_shape[d]));
  }
  const Strides in_strides = contiguous_strides(in_shape);
  const int64_t cols = out_shape.back(), n = in_shape.back();
  const int64_t before = self.dim() == 0 ? 0 : padding.before.back();
  // The columns [first, last) that read the input row in order.
  const int64_t first = std::clamp<int64_t>(before, 0, cols), last = std::clamp<int64_t>(before + n, first, cols);
  dispatch_elementwise(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const auto value = static_cast<T>(args.value);
    const T* x = self.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    const std::vector<int64_t>& columns = table.back();
    parallel_items(context, out.numel() / cols, cols, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        T* row = y + r * cols;
        int64_t source = 0;
        for (int64_t d = static_cast<int64_t>(rank) - 2, rest = r; d >= 0 && source >= 0; --d) {
          const int64_t at = table[d][rest % out_shape[d]];
          rest /= out_shape[d];
          source = at < 0 ? -1 : source + at * in_strides[d];
        }
        if (source < 0) {
          std::fill(row, row + cols, value);
          continue;
        }
        const T* in = x + source;
        for (int64_t j = 0; j < first; ++j) row[j] = columns[j] < 0 ? value : in[columns[j]];
        if (last > first) std::copy(in + (first - before), in + (last - before), row + first);
        for (int64_t j = last; j < cols; ++j) row[j] = columns[j] < 0 ? value : in[columns[j]];
      }
    });
  });
}

// Element by element: each output coordinate mapped dim by dim.
template <Mode kMode, int kDims>
void pad_reference(const KernelContext&, const Tensor& self, const PadArgs& args, const Tensor& out) {
  const Padding padding = padding_for<kMode, kDims>(self.meta(), args);
  const Strides in_strides = contiguous_strides(self.shape());
  dispatch_elementwise(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const auto value = static_cast<T>(args.value);
    const T* x = self.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t source = 0, rest = i;
      for (int64_t d = self.dim() - 1; d >= 0 && source >= 0; --d) {
        const int64_t at = source_index<kMode>(rest % padding.out[d], padding.before[d], self.shape()[d]);
        rest /= padding.out[d];
        source = at < 0 ? -1 : source + at * in_strides[d];
      }
      y[i] = source < 0 ? value : x[source];
    }
  });
}

template <Mode kMode, int kDims, bool kReference>
void run_pad(const KernelContext& context, const Tensor& self, const PadArgs& args, const Tensor& out) {
  (kReference ? pad_reference<kMode, kDims> : pad_kernel<kMode, kDims>)(context, self, args, out);
}

// reflection_pad{1,2,3}d and replication_pad{1,2,3}d.
template <Mode kMode, int kDims>
TensorMeta spatial_pad_shape(const TensorMeta& self, std::span<const int64_t> padding) {
  return pad_shape<kMode, kDims>(self, {padding, "padding", 0.0});
}

template <Mode kMode, int kDims, bool kReference>
void spatial_pad_kernel(const KernelContext& context, const Tensor& self, std::span<const int64_t> padding,
                        const Tensor& out) {
  run_pad<kMode, kDims, kReference>(context, self, {padding, "padding", 0.0}, out);
}

template <Mode kMode, int kDims>
void define_pad(BuiltinOps& builtins, const char* schema,
                std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = spatial_pad_shape<kMode, kDims>,
          .cpu = spatial_pad_kernel<kMode, kDims, false>,
          .reference = spatial_pad_kernel<kMode, kDims, true>},
         where);
}

TensorMeta constant_pad_shape(const TensorMeta& self, std::span<const int64_t> pad, double value) {
  return pad_shape<Mode::kConstant, 0>(self, {pad, "pad", value});
}

template <bool kReference>
void constant_pad_kernel(const KernelContext& context, const Tensor& self, std::span<const int64_t> pad, double value,
                         const Tensor& out) {
  run_pad<Mode::kConstant, 0, kReference>(context, self, {pad, "pad", value}, out);
}

// aten::pad: `value` (a float, or None for 0) only in mode "constant"; it
// runs the kernels above for its mode.
PadArgs pad_args(std::span<const int64_t> pad, std::string_view mode, std::optional<double> value) {
  OPGRAPH_CHECK(!value || mode == "constant", "value: mode '", mode, "' takes no value, got ",
                attr_str(AttrValue(*value)));
  return {pad, "pad", value.value_or(0.0)};
}

TensorMeta any_pad_shape(const TensorMeta& self, std::span<const int64_t> pad, std::string_view mode,
                         std::optional<double> value) {
  const PadArgs args = pad_args(pad, mode, value);
  return with_pad_mode(pad, mode, [&]<Mode kMode, int kDims>() { return pad_shape<kMode, kDims>(self, args); });
}

template <bool kReference>
void any_pad_kernel(const KernelContext& context, const Tensor& self, std::span<const int64_t> pad,
                    std::string_view mode, std::optional<double> value, const Tensor& out) {
  const PadArgs args = pad_args(pad, mode, value);
  with_pad_mode(pad, mode,
                [&]<Mode kMode, int kDims>() { run_pad<kMode, kDims, kReference>(context, self, args, out); });
}

}  // namespace

void register_pad_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
                    .shape = constant_pad_shape,
                    OPGRAPH_CPU_AND_REFERENCE(constant_pad_kernel)});
  define_pad<Mode::kReflect, 1>(builtins, "aten::reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor");
  define_pad<Mode::kReflect, 2>(builtins, "aten::reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor");
  define_pad<Mode::kReflect, 3>(builtins, "aten::reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor");
  define_pad<Mode::kReplicate, 1>(builtins, "aten::replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor");
  define_pad<Mode::kReplicate, 2>(builtins, "aten::replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor");
  define_pad<Mode::kReplicate, 3>(builtins, "aten::replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor");
  // torch.export keeps F.pad as aten::pad unless the graph is decomposed.
  define(builtins,
         {.schema = "aten::pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
          .shape = any_pad_shape,
          OPGRAPH_CPU_AND_REFERENCE(any_pad_kernel)});
}

}  // namespace opgraph::kernels
