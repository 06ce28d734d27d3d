// Samples of the pooling ops (pool.cpp) in 1, 2 and 3 spatial dims: odd
// sizes with padding and stride, windows of one element, an empty batch, an
// unbatched input, ceil mode's partial last window, dilation, transposed and
// strided inputs; the backward ops on the same windows. Ranks the op does
// not take, integer inputs, kernels larger than the input and padding past
// half the kernel are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

// A window over `spatial` dims of equal `size` after the `lead` (batch, channel) dims.
struct Window {
  Shape lead;
  int64_t size;
  int64_t kernel, stride, padding, dilation = 1;
  bool ceil_mode = false;
  Layout layout = Layout::Contiguous;
  // The stride as given: 0 leaves it out (it defaults to the kernel).
  int64_t stride_or_kernel() const { return stride == 0 ? kernel : stride; }
  // The output size along each spatial dim, as PyTorch's pooling_output_shape.
  int64_t pooled() const {
    const int64_t s = stride_or_kernel(), span = size + 2 * padding - dilation * (kernel - 1) - 1;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= size + padding) --out;
    return out;
  }
};

const std::vector<Window>& windows() {
  static const std::vector<Window> cases = {
      {{2, 3}, 7, 3, 2, 1},
      {{1, 1}, 1, 1, 1, 0},
      {{0, 2}, 5, 2, 0, 0},
      {{3}, 6, 2, 1, 0},  // unbatched
      {{2, 2}, 5, 2, 2, 0, 1, true, Layout::Transposed},
      {{1, 4}, 9, 3, 1, 1, 2, false, Layout::Strided},
      {{2, 8}, 45, 3, 2, 1},  // past the parallel threshold in 2 and 3 spatial dims
  };
  return cases;
}

// The window's attributes; `dilation`: the op takes one.
std::vector<Attr> window_attrs(const Window& w, size_t dims, bool dilation) {
  std::vector<Attr> attrs = {{"kernel_size", repeat(w.kernel, dims)},
                             {"stride", w.stride == 0 ? std::vector<int64_t>{} : repeat(w.stride, dims)},
                             {"padding", repeat(w.padding, dims)},
                             {"ceil_mode", w.ceil_mode}};
  if (dilation) attrs.emplace_back("dilation", repeat(w.dilation, dims));
  return attrs;
}

std::string rank_text(size_t dims) {
  const char* names[] = {"length", "height, width", "depth, height, width"};
  return detail::concat("self: expected rank ", dims + 1, " or ", dims + 2, " ((batch,) channels, ", names[dims - 1],
                        ")");
}

// The refusals of every pooling op over `dims` spatial dims, with `attrs` a good window.
void add_refusals(std::vector<Sample>& table, size_t dims, const std::vector<Attr>& attrs) {
  table.push_back(bad({tensor(F32, repeat(4, dims))}, rank_text(dims), attrs));
  table.push_back(bad({tensor(I64, spatial({1, 2}, 4, dims))}, "self: expected float32 or float64, got int64", attrs));
}

std::vector<Sample> max_pools(size_t dims) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (const Window& w : windows()) {
      table.push_back(good({tensor(dtype, spatial(w.lead, w.size, dims), w.layout)}, window_attrs(w, dims, true)));
    }
  }
  const Window small{{1, 2}, 3, 2, 1, 0};
  add_refusals(table, dims, window_attrs(small, dims, true));
  Window large = small;
  large.kernel = 5, large.padding = 0;
  table.push_back(
      bad({tensor(F32, spatial({1, 2}, 3, dims))}, "is smaller than the kernel (5)", window_attrs(large, dims, true)));
  Window padded = small;
  padded.padding = 2;
  table.push_back(bad({tensor(F32, spatial({1, 2}, 3, dims))}, "must be at most half of kernel_size",
                      window_attrs(padded, dims, true)));
  return table;
}

// Average pools, counting the padding or not, and with a divisor where the op takes one.
std::vector<Sample> avg_pools(size_t dims, bool divisor) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    bool count_include_pad = dtype == F32;  // flips with each window
    for (const Window& w : windows()) {
      if (w.dilation != 1) continue;
      std::vector<Attr> attrs = window_attrs(w, dims, false);
      attrs.emplace_back("count_include_pad", count_include_pad = !count_include_pad);
      if (divisor && w.ceil_mode) attrs.emplace_back("divisor_override", int64_t{3});
      table.push_back(good({tensor(dtype, spatial(w.lead, w.size, dims), w.layout)}, attrs));
    }
  }
  const Window small{{1, 2}, 3, 2, 1, 0};
  add_refusals(table, dims, window_attrs(small, dims, false));
  if (divisor) {
    std::vector<Attr> attrs = window_attrs(small, dims, false);
    attrs.emplace_back("divisor_override", int64_t{0});
    table.push_back(bad({tensor(F32, spatial({1, 2}, 3, dims))}, "divisor_override: must not be zero", attrs));
  }
  return table;
}

// Adaptive average pools: to fewer, as many and more outputs than inputs, and none.
std::vector<Sample> adaptive_pools(size_t dims) {
  const std::vector<std::tuple<Shape, int64_t, int64_t, Layout>> cases = {
      {{2, 3}, 7, 3, Layout::Contiguous}, {{1, 1}, 1, 1, Layout::Contiguous}, {{0, 2}, 4, 2, Layout::Contiguous},
      {{3}, 4, 6, Layout::Contiguous},    {{2, 2}, 5, 5, Layout::Transposed}, {{1, 4}, 9, 4, Layout::Strided},
      {{2, 2}, 3, 0, Layout::Contiguous},
  };
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (const auto& [lead, size, out, layout] : cases) {
      table.push_back(good({tensor(dtype, spatial(lead, size, dims), layout)}, {{"output_size", repeat(out, dims)}}));
    }
  }
  const std::vector<Attr> attrs = {{"output_size", repeat(2, dims)}};
  add_refusals(table, dims, attrs);
  table.push_back(bad({tensor(F32, spatial({1, 2}, 4, dims))}, "output_size: expected sizes of at least 0",
                      {{"output_size", repeat(-1, dims)}}));
  return table;
}

// The backward of a pool over 2 spatial dims: grad_output shaped like its
// output, `self`, and with `indices` the argmax of each window (any element
// of the plane, as the backward only scatters through them).
std::vector<Sample> pool2d_backwards(bool average, bool indices) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (const Window& w : windows()) {
      if (average && w.dilation != 1) continue;
      std::vector<SampleTensor> inputs = {tensor(dtype, spatial(w.lead, w.pooled(), 2)),
                                          tensor(dtype, spatial(w.lead, w.size, 2), w.layout)};
      if (indices) inputs.push_back(tensor(I64, spatial(w.lead, w.pooled(), 2)).in(0, w.size * w.size - 1));
      std::vector<Attr> attrs = window_attrs(w, 2, !average);
      attrs[1].second = repeat(w.stride_or_kernel(), 2);  // the backward ops take no default stride
      if (average) {
        attrs.emplace_back("count_include_pad", w.ceil_mode);
        attrs.emplace_back("divisor_override", std::monostate{});
      }
      table.push_back(good(std::move(inputs), attrs));
    }
  }
  const Window small{{1, 2}, 5, 2, 2, 0};
  std::vector<Attr> attrs = window_attrs(small, 2, !average);
  if (average) {
    attrs.emplace_back("count_include_pad", true);
    attrs.emplace_back("divisor_override", std::monostate{});
  }
  std::vector<SampleTensor> misshapen = {tensor(F32, {1, 2, 3, 2}), tensor(F32, {1, 2, 5, 5})};
  std::vector<SampleTensor> mistyped = {tensor(F32, {1, 2, 2, 2}), tensor(I64, {1, 2, 5, 5})};
  if (indices) {
    misshapen.push_back(tensor(I64, {1, 2, 3, 2}).in(0, 24));
    mistyped.push_back(tensor(I64, {1, 2, 2, 2}).in(0, 24));
  }
  table.push_back(bad(
      misshapen, "grad_output: expected float32[1, 2, 2, 2] like the pooled output, got float32[1, 2, 3, 2]", attrs));
  table.push_back(bad(mistyped, "self: expected float32 or float64, got int64", attrs));
  if (indices) {
    table.push_back(bad({tensor(F32, {1, 2, 2, 2}), tensor(F32, {1, 2, 5, 5}), tensor(F32, {1, 2, 2, 2})},
                        "indices: expected int64[1, 2, 2, 2] like grad_output, got float32[1, 2, 2, 2]", attrs));
  }
  return table;
}

std::vector<Sample> adaptive_backwards() {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    table.push_back(good({tensor(dtype, {2, 3, 3, 2}), tensor(dtype, {2, 3, 7, 5})}));
    table.push_back(good({tensor(dtype, {3, 6, 6}), tensor(dtype, {3, 4, 4}, Layout::Transposed)}));
    table.push_back(good({tensor(dtype, {0, 2, 2, 2}), tensor(dtype, {0, 2, 4, 4})}));
    table.push_back(good({tensor(dtype, {1, 1, 1, 1}), tensor(dtype, {1, 1, 1, 1})}));
  }
  table.push_back(bad({tensor(F32, {2, 3, 3, 2}), tensor(F32, {4, 7, 5})}, "self"));
  table.push_back(bad({tensor(F32, {2, 3, 3, 2}), tensor(F64, {2, 3, 7, 5})}, "float64"));
  return table;
}

// Max pooling on channel blocks of 16, 8 and every channel (pool_nchwc.cpp):
// ResNet's 3x3 / 2 with padding 1, a ceil-mode window (more padding at the
// end), windows of one pixel, an empty batch.
std::vector<Sample> blocked_max_pools() {
  auto window = [](int64_t kernel, int64_t stride, int64_t padding, int64_t padding_end) {
    return std::vector<Attr>{{"kernel_size", repeat(kernel, 2)},
                             {"stride", repeat(stride, 2)},
                             {"padding", repeat(padding, 2)},
                             {"padding_end", repeat(padding_end, 2)}};
  };
  return {
      good({tensor(F32, {1, 2, 9, 9, 16})}, window(3, 2, 1, 1)),
      good({tensor(F32, {2, 3, 6, 5, 8})}, window(3, 2, 0, 2)),
      good({tensor(F32, {1, 1, 5, 7, 24})}, window(1, 1, 0, 0)),
      good({tensor(F32, {0, 1, 4, 4, 40})}, window(2, 2, 0, 0)),
      bad({tensor(F32, {1, 2, 9, 9, 16})}, "padding: expected less than the 3-wide window on each side, got 1 and 3",
          window(3, 2, 1, 3)),
      bad({tensor(F32, {1, 1, 2, 2, 16})}, "kernel_size: the 5-wide window does not fit the 2 pixels padded to 4",
          window(5, 1, 1, 1)),
      bad({tensor(F32, {1, 2, 4, 4, 12})}, "self: expected blocks of 8 or 16 channels or one block of them all",
          window(2, 2, 0, 0)),
      bad({tensor(F32, {1, 16, 4, 4})}, "self: expected a blocked [N, C/B, H, W, B], got float32[1, 16, 4, 4]",
          window(2, 2, 0, 0)),
      bad({tensor(F64, {1, 1, 4, 4, 16})}, "self: expected float32, got float64", window(2, 2, 0, 0)),
      bad({tensor(F32, {1, 1, 4, 4, 16})}, "stride: expected 2 values of at least 1, got [0, 0]", window(2, 0, 0, 0))};
}

}  // namespace

void register_pool_samples(BuiltinOps& builtins) {
  builtins.add_samples("opgraph::max_pool2d_nchwc", blocked_max_pools());
  add_to_each(builtins, {"aten::max_pool2d", "aten::max_pool2d_with_indices"}, max_pools(2));
  add_to_each(builtins, {"aten::max_pool3d", "aten::max_pool3d_with_indices"}, max_pools(3));
  builtins.add_samples("aten::avg_pool1d", avg_pools(1, false));
  builtins.add_samples("aten::avg_pool2d", avg_pools(2, true));
  builtins.add_samples("aten::avg_pool3d", avg_pools(3, true));
  builtins.add_samples("aten::adaptive_avg_pool1d", adaptive_pools(1));
  add_to_each(builtins, {"aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d"}, adaptive_pools(2));
  add_to_each(builtins, {"aten::adaptive_avg_pool3d", "aten::_adaptive_avg_pool3d"}, adaptive_pools(3));
  builtins.add_samples("aten::avg_pool2d_backward", pool2d_backwards(true, false));
  builtins.add_samples("aten::max_pool2d_with_indices_backward", pool2d_backwards(false, true));
  builtins.add_samples("opgraph::max_pool2d_backward", pool2d_backwards(false, false));
  builtins.add_samples("aten::_adaptive_avg_pool2d_backward", adaptive_backwards());
}

}  // namespace opgraph::kernels::samples
