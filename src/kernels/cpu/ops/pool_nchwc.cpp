// Max pooling on channel-blocked activations (blocked_layout.h), so that a
// CNN's stem convolution, its pooling and the convolutions after it keep one
// layout (ResNet: conv 7x7 -> max_pool2d 3x3 / 2 -> the first block):
//
//   opgraph::max_pool2d_nchwc  blocked [N, C/B, H, W, B] -> blocked [N, C/B, OH, OW, B]
//
// OH = (H + padding + padding_end - kernel) / stride + 1, and likewise for
// the width; padded positions are never the maximum (PyTorch pads with
// -inf), and a ceil_mode pooling is one with more padding at the end. Every
// block's lanes are pooled alike, so zeros in the padding channels stay
// zeros. oneDNN's pooling reads the blocks with whole-vector loads: ResNet-50's
// pooling ran faster so than aten::max_pool2d on the plain layout.
#include <algorithm>
#include <limits>

#include "kernels/cpu/onednn/blocked_layout.h"
#include "kernels/cpu/onednn/onednn.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

struct Window {
  std::vector<int64_t> kernel, stride, padding, padding_end;
};

using Ints = std::span<const int64_t>;

Window window_of(Ints kernel_size, Ints stride, Ints padding, Ints padding_end) {
  Window w{{kernel_size.begin(), kernel_size.end()},
           {stride.begin(), stride.end()},
           {padding.begin(), padding.end()},
           {padding_end.begin(), padding_end.end()}};
  for (auto [name, values, least] :
       {std::tuple{"kernel_size", &w.kernel, 1}, std::tuple{"stride", &w.stride, 1},
        std::tuple{"padding", &w.padding, 0}, std::tuple{"padding_end", &w.padding_end, 0}}) {
    OPGRAPH_CHECK(values->size() == 2 && std::ranges::all_of(*values, [&](int64_t v) { return v >= least; }), name,
                  ": expected 2 values of at least ", least, ", got ", shape_str(*values));
  }
  return w;
}

TensorMeta max_pool2d_nchwc_shape(const TensorMeta& self, Ints kernel_size, Ints stride, Ints padding,
                                  Ints padding_end) {
  OPGRAPH_CHECK(self.dtype == DType::Float32, "self: expected float32, got ", self.str());
  OPGRAPH_CHECK(self.dim() == 5, "self: expected a blocked [N, C/B, H, W, B], got ", self.str());
  OPGRAPH_CHECK(self.shape[1] == 1 || self.shape[4] == 8 || self.shape[4] == 16,
                "self: expected blocks of 8 or 16 channels or one block of them all, got ", self.str());
  const Window w = window_of(kernel_size, stride, padding, padding_end);
  Shape out = self.shape;
  for (size_t d = 0; d < 2; ++d) {
    const int64_t size = self.shape[2 + d], padded = size + w.padding[d] + w.padding_end[d];
    OPGRAPH_CHECK(w.padding[d] < w.kernel[d] && w.padding_end[d] < w.kernel[d], "padding: expected less than the ",
                  w.kernel[d], "-wide window on each side, got ", w.padding[d], " and ", w.padding_end[d],
                  " (a window of padding alone has no maximum)");
    OPGRAPH_CHECK(padded >= w.kernel[d], "kernel_size: the ", w.kernel[d], "-wide window does not fit the ", size,
                  " pixels padded to ", padded);
    out[2 + d] = (padded - w.kernel[d]) / w.stride[d] + 1;
  }
  return {DType::Float32, out};
}

struct PoolPlan {
  dnnl::pooling_forward pool;
  dnnl::memory::desc src, dst, scratchpad;
};

PrimitiveCache<PoolPlan>& pool_plans() {
  static PrimitiveCache<PoolPlan> plans(64);
  return plans;
}

// The tensors as oneDNN sees them: every lane a channel, the padding ones included.
dnnl::memory::desc blocked_desc(const Shape& blocked) {
  const int64_t block = blocked[4], channels = blocked[1] * block;
  return dnnl::memory::desc({blocked[0], channels, blocked[2], blocked[3]}, dnnl::memory::data_type::f32,
                            blocked_tag(block, channels));
}

void max_pool2d_nchwc_cpu(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                          Ints padding_end, const Tensor& out) {
  if (out.numel() == 0) return;
  const Window w = window_of(kernel_size, stride, padding, padding_end);
  const OneDnnStream stream(context);
  std::vector<int64_t> key = self.shape();
  for (const std::vector<int64_t>* values : {&w.kernel, &w.stride, &w.padding, &w.padding_end}) {
    key.insert(key.end(), values->begin(), values->end());
  }
  const auto plan = cached_primitive(pool_plans(), context, stream, key, [&] {
    const dnnl::memory::desc src = blocked_desc(self.shape()), dst = blocked_desc(out.shape());
    const dnnl::pooling_forward::primitive_desc pd(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, src, dst,
                                    w.stride, w.kernel, w.padding, w.padding_end),
        with_caller_scratchpad(), onednn_engine());
    return PoolPlan{dnnl::pooling_forward(pd), src, dst, pd.scratchpad_desc()};
  });
  const dnnl::memory src(plan->src, onednn_engine(), self.data()), dst(plan->dst, onednn_engine(), out.data());
  execute_with_scratchpad(plan->pool, stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, plan->scratchpad);
  stream.wait();
}

// Element by element from the definition of the layout.
void max_pool2d_nchwc_reference(const KernelContext&, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                                Ints padding_end, const Tensor& out) {
  const Window w = window_of(kernel_size, stride, padding, padding_end);
  const Shape &from = self.shape(), &to = out.shape();
  const int64_t block = from[4];
  const float* x = self.data_ptr<float>();
  float* y = out.data_ptr<float>();
  for (int64_t image_block = 0; image_block < from[0] * from[1]; ++image_block) {
    for (int64_t oh = 0; oh < to[2]; ++oh) {
      for (int64_t ow = 0; ow < to[3]; ++ow) {
        for (int64_t lane = 0; lane < block; ++lane) {
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t i = 0; i < w.kernel[0]; ++i) {
            for (int64_t j = 0; j < w.kernel[1]; ++j) {
              const int64_t h = oh * w.stride[0] - w.padding[0] + i, v = ow * w.stride[1] - w.padding[1] + j;
              if (h < 0 || h >= from[2] || v < 0 || v >= from[3]) continue;
              best = std::max(best, x[((image_block * from[2] + h) * from[3] + v) * block + lane]);
            }
          }
          y[((image_block * to[2] + oh) * to[3] + ow) * block + lane] = best;
        }
      }
    }
  }
}

}  // namespace

void register_pool_nchwc_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "opgraph::max_pool2d_nchwc(Tensor self, int[2] kernel_size, int[2] stride, "
                              "int[2] padding=0, int[2] padding_end=0) -> Tensor",
                    .shape = max_pool2d_nchwc_shape,
                    .cpu = max_pool2d_nchwc_cpu,
                    .reference = max_pool2d_nchwc_reference});
}

}  // namespace opgraph::kernels
