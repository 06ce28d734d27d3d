// A batched matrix product dst[b] = f(a[b] @ w[b] + bias[b]) as the product
// kernels take it, whichever runs it: the engines (engines/product.h,
// engines/few_rows_product.h) and MKL's (mkl/mkl_product.h).
#pragma once

#include <optional>

#include "kernels/activation.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// An operand of the product at the product's rank: [batch..., rows, cols].
// Broadcast batch dimensions have extent 1 and stride 0. (Only batch ones:
// oneDNN takes a zero row stride for an unusual layout and falls back to its
// slow reference implementation.)
struct Operand {
  void* data;
  Shape shape;
  Strides strides;  // elements
};

struct Product {
  Operand a, w, dst;
  std::optional<Operand> bias;  // broadcast to dst's shape
  Activation activation = Activation::None;
  // w holds a Session's weight (is_constant_input): oneDNN runs on a copy in
  // the layout it chose, made once and kept in the node's prepared weights.
  bool constant_w = false;
  // For a product repeated on the same w (a recurrent step): read w's columns
  // last to first, so that the next product, reading them first to last,
  // starts on what this one left in cache. The sums are the same either way.
  bool w_backward = false;
  // dst holds a residual the product adds to: dst = f(a @ w + bias + dst),
  // as oneDNN's sum post-op computes it.
  bool accumulate = false;
  // Shaped like dst: dst = f(...) * multiplier, as oneDNN's binary mul
  // post-op computes it (the gate of a SwiGLU MLP).
  std::optional<Operand> multiplier = std::nullopt;
};

}  // namespace opgraph::kernels
