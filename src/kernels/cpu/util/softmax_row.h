// One row of softmax or log_softmax: shared by the softmax ops and the fused
// softmax + cross-entropy.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/vec_math.h"

namespace opgraph::kernels {

enum class SoftmaxKind { Softmax, LogSoftmax };

// y = softmax(x) or log_softmax(x) over n contiguous elements, from x - max(x)
// so that exp() cannot overflow. Returns the row's log-sum-exp,
// log(sum(exp(x))): log-probabilities follow as x minus it, accurately even
// where probabilities underflow to 0.
template <typename T>
double softmax_row(SoftmaxKind kind, const T* x, T* y, int64_t n) {
  const T max = row_max(x, n);
  // The exponentials are summed in a pass of their own: every pass is then a
  // simple loop that vectorizes at full width, where summing them as they are
  // computed measured slower. The sum is taken in double for accuracy over
  // long rows.
  for (int64_t i = 0; i < n; ++i) y[i] = fast_exp(x[i] - max);
  const double sum = row_sum(y, n);
  const double log_sum = std::log(sum);
  if (kind == SoftmaxKind::Softmax) {
    const T scale = static_cast<T>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  } else {
    // Subtracting max first: max + log(sum) would round away log(sum).
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - max) - static_cast<T>(log_sum);
  }
  return max + log_sum;
}

}  // namespace opgraph::kernels
