// Products with a Session's weight as the product engines' tests build them:
// a random [m, k] x [k, n] product and the parts of an epilogue each test picks.
#pragma once

#include <cstring>
#include <random>

#include "kernels/cpu/engines/product.h"

namespace opgraph::kernels {

inline Tensor random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  Tensor t = Tensor::empty({rows, cols}, DType::Float32);
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int64_t i = 0; i < rows * cols; ++i) t.data_ptr<float>()[i] = uniform(generator);
  return t;
}

// A [m, k] x [k, n] product whose weight is stored [n, k] (a linear layer's)
// or [k, n] (GPT-2's Conv1D), whose a is stored [m, k] or transposed, with
// the parts of an epilogue each test picks.
struct Case {
  int64_t m = 128, k = 512, n = 260;  // a weight that does not stay in cache
  bool transposed_weight = true, transposed_a = false, bias = false, accumulate = false, multiplier = false;
  Activation activation = Activation::None;
};

struct Tensors {
  Tensor a, w, bias, residual, multiplier;

  explicit Tensors(const Case& c)
      : a(c.transposed_a ? random_matrix(c.k, c.m, 1) : random_matrix(c.m, c.k, 1)),
        w(c.transposed_weight ? random_matrix(c.n, c.k, 2) : random_matrix(c.k, c.n, 2)),
        bias(random_matrix(1, c.n, 3)),
        residual(random_matrix(c.m, c.n, 4)),
        multiplier(random_matrix(c.m, c.n, 5)) {}

  // The product writing into `dst` (which holds the residual first where the case adds one).
  Product product(const Case& c, const Tensor& dst) const {
    Product p{operand(a, 2, c.transposed_a),
              operand(w, 2, c.transposed_weight),
              operand(dst, 2),
              std::nullopt,
              c.activation,
              true};
    if (c.bias) p.bias = operand(bias, {1, c.n}, {0, 1}, 2);
    if (c.multiplier) p.multiplier = operand(multiplier, 2);
    p.accumulate = c.accumulate;
    if (c.accumulate) std::memcpy(dst.data(), residual.data(), dst.nbytes());
    return p;
  }
};

}  // namespace opgraph::kernels
