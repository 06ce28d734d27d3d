// Softmax and cross-entropy fused, for training a classifier: logits (N, C),
// class-index targets (N), the loss averaged over the rows whose target is
// not ignore_index. With label smoothing e, row i's target distribution is
// q = (1 - e) onehot(target[i]) + e / C, and its loss -sum_c q_c log p_c.
//
// The forward keeps the probabilities p = softmax(logits), from which the
// gradient is one pass: d loss / d logits[i] = (p_i - q_i) / count.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/cpu/util/softmax_row.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

struct Options {
  int64_t ignore_index;
  double label_smoothing;
};

Options options(int64_t ignore_index, double label_smoothing) {
  const Options o{ignore_index, label_smoothing};
  OPGRAPH_CHECK(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0,
                "label_smoothing: expected a value in [0, 1], got ", o.label_smoothing);
  return o;
}

// Checks (N, C) scores (logits or probabilities) and the (N) targets.
void check_scores_and_target(const TensorMeta& scores, const char* name, const TensorMeta& target) {
  check_floating(scores, name);
  OPGRAPH_CHECK(scores.dim() == 2, name, ": expected rank 2 (N, C), got ", scores.str());
  OPGRAPH_CHECK(scores.shape[1] > 0, name, ": expected at least one class, got ", scores.str());
  const TensorMeta expected{DType::Int64, {scores.shape[0]}};
  OPGRAPH_CHECK(target == expected, "target: expected ", expected.str(), " (a class index per row of ", name, " ",
                scores.str(), "), got ", target.str());
}

std::vector<TensorMeta> forward_shape(const TensorMeta& logits, const TensorMeta& target, int64_t ignore_index,
                                      double label_smoothing) {
  check_scores_and_target(logits, "logits", target);
  options(ignore_index, label_smoothing);
  return {{logits.dtype, {}}, logits};
}

TensorMeta backward_shape(const TensorMeta& grad_loss, const TensorMeta& probabilities, const TensorMeta& target,
                          int64_t ignore_index, double label_smoothing) {
  check_scores_and_target(probabilities, "probabilities", target);
  check_same_meta(grad_loss, "grad_loss", {probabilities.dtype, {}}, "the loss");
  options(ignore_index, label_smoothing);
  return probabilities;
}

// The number of rows that count (target != ignore_index); throws naming the
// first row whose target is not a class.
int64_t counted_rows(const Tensor& target, int64_t classes, int64_t ignore_index) {
  const int64_t* t = target.data_ptr<const int64_t>();
  int64_t count = 0;
  for (int64_t i = 0; i < target.numel(); ++i) {
    if (t[i] == ignore_index) continue;
    OPGRAPH_CHECK(t[i] >= 0 && t[i] < classes, "target: row ", i, " has class index ", t[i], ", out of range for ",
                  classes, " classes (expected 0 to ", classes - 1, " or ignore_index=", ignore_index, ")");
    ++count;
  }
  return count;
}

// The mean of the counted rows' losses (NaN when no row counts, as in PyTorch).
double mean_loss(std::span<const double> losses, int64_t count) {
  double sum = 0;
  for (double loss : losses) sum += loss;
  return count == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / count;
}

// ---- Fast kernels ---------------------------------------------------------

// Row i's loss from its log-sum-exp: log p_c = x_c - lse, so
// -sum_c q_c log p_c = lse - (1 - e) x_target - (e / C) sum_c x_c.
void forward_cpu(const KernelContext& context, const Tensor& logits_in, const Tensor& target_in, int64_t ignore_index,
                 double label_smoothing, const Tensor& loss_out, const Tensor& probabilities_out) {
  const Options o = options(ignore_index, label_smoothing);
  const int64_t rows = logits_in.size(0), classes = logits_in.size(1);
  const int64_t count = counted_rows(target_in, classes, o.ignore_index);
  const int64_t* target = target_in.data_ptr<const int64_t>();
  std::vector<double> losses(static_cast<size_t>(rows), 0.0);
  dispatch_floating(logits_in.dtype(), "logits", [&](auto zero) {
    using T = decltype(zero);
    const T* logits = logits_in.data_ptr<const T>();
    T* probabilities = probabilities_out.data_ptr<T>();
    parallel_rows(context, rows, classes, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T* x = logits + i * classes;
        const double lse = softmax_row(SoftmaxKind::Softmax, x, probabilities + i * classes, classes);
        if (target[i] == o.ignore_index) continue;
        const double smoothed = o.label_smoothing == 0.0 ? 0.0 : o.label_smoothing / classes * row_sum(x, classes);
        losses[i] = lse - (1 - o.label_smoothing) * x[target[i]] - smoothed;
      }
    });
    loss_out.data_ptr<T>()[0] = static_cast<T>(mean_loss(losses, count));
  });
}

// Inputs: grad_loss, probabilities, target. Rows that do not count get 0.
void backward_cpu(const KernelContext& context, const Tensor& grad_loss_in, const Tensor& probabilities_in,
                  const Tensor& target_in, int64_t ignore_index, double label_smoothing, const Tensor& grad_logits) {
  const Options o = options(ignore_index, label_smoothing);
  const int64_t rows = probabilities_in.size(0), classes = probabilities_in.size(1);
  const int64_t count = counted_rows(target_in, classes, o.ignore_index);
  const int64_t* target = target_in.data_ptr<const int64_t>();
  dispatch_floating(probabilities_in.dtype(), "probabilities", [&](auto zero) {
    using T = decltype(zero);
    const T* p = probabilities_in.data_ptr<const T>();
    T* dx = grad_logits.data_ptr<T>();
    const T scale = static_cast<T>(double(grad_loss_in.data_ptr<const T>()[0]) / std::max<int64_t>(count, 1));
    const T uniform = static_cast<T>(o.label_smoothing / classes);
    const T picked = static_cast<T>(1 - o.label_smoothing);
    parallel_rows(context, rows, classes, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        T* row = dx + i * classes;
        if (target[i] == o.ignore_index) {
          std::fill_n(row, classes, T(0));
          continue;
        }
        const T* p_row = p + i * classes;
        for (int64_t c = 0; c < classes; ++c) row[c] = scale * (p_row[c] - uniform);
        row[target[i]] -= scale * picked;
      }
    });
  });
}

// ---- Reference implementations --------------------------------------------

// Softmax and the loss written out in double.
void forward_reference(const KernelContext&, const Tensor& logits_in, const Tensor& target_in, int64_t ignore_index,
                       double label_smoothing, const Tensor& loss_out, const Tensor& probabilities_out) {
  const Options o = options(ignore_index, label_smoothing);
  const int64_t rows = logits_in.size(0), classes = logits_in.size(1);
  const int64_t count = counted_rows(target_in, classes, o.ignore_index);
  const int64_t* target = target_in.data_ptr<const int64_t>();
  std::vector<double> losses(static_cast<size_t>(rows), 0.0);
  dispatch_floating(logits_in.dtype(), "logits", [&](auto zero) {
    using T = decltype(zero);
    const T* x = logits_in.data_ptr<const T>();
    T* probabilities = probabilities_out.data_ptr<T>();
    for (int64_t i = 0; i < rows; ++i) {
      double max = -INFINITY, sum = 0;
      for (int64_t c = 0; c < classes; ++c) max = std::max(max, double(x[i * classes + c]));
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[i * classes + c] - max);
      for (int64_t c = 0; c < classes; ++c) {
        const double log_p = x[i * classes + c] - max - std::log(sum);
        probabilities[i * classes + c] = static_cast<T>(std::exp(log_p));
        if (target[i] == o.ignore_index) continue;
        const double q = (c == target[i] ? 1 - o.label_smoothing : 0.0) + o.label_smoothing / classes;
        losses[i] -= q * log_p;
      }
    }
    loss_out.data_ptr<T>()[0] = static_cast<T>(mean_loss(losses, count));
  });
}

void backward_reference(const KernelContext&, const Tensor& grad_loss_in, const Tensor& probabilities_in,
                        const Tensor& target_in, int64_t ignore_index, double label_smoothing,
                        const Tensor& grad_logits) {
  const Options o = options(ignore_index, label_smoothing);
  const int64_t rows = probabilities_in.size(0), classes = probabilities_in.size(1);
  const int64_t count = counted_rows(target_in, classes, o.ignore_index);
  const int64_t* target = target_in.data_ptr<const int64_t>();
  dispatch_floating(probabilities_in.dtype(), "probabilities", [&](auto zero) {
    using T = decltype(zero);
    const double grad_loss = grad_loss_in.data_ptr<const T>()[0];
    const T* p = probabilities_in.data_ptr<const T>();
    T* dx = grad_logits.data_ptr<T>();
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < classes; ++c) {
        double g = 0;
        if (target[i] != o.ignore_index) {
          const double q = (c == target[i] ? 1 - o.label_smoothing : 0.0) + o.label_smoothing / classes;
          g = grad_loss * (p[i * classes + c] - q) / count;
        }
        dx[i * classes + c] = static_cast<T>(g);
      }
    }
  });
}

}  // namespace

void register_softmax_cross_entropy_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "opgraph::softmax_cross_entropy_backward(Tensor grad_loss, Tensor probabilities, "
                              "Tensor target, *, int ignore_index=-100, float label_smoothing=0.0) "
                              "-> Tensor grad_logits",
                    .shape = backward_shape,
                    .cpu = backward_cpu,
                    .reference = backward_reference});
  define(builtins, {.schema = "opgraph::softmax_cross_entropy(Tensor logits, Tensor target, *, int ignore_index=-100, "
                              "float label_smoothing=0.0) -> (Tensor loss, Tensor probabilities)",
                    .shape = forward_shape,
                    .cpu = forward_cpu,
                    .reference = forward_reference,
                    .backward = "opgraph::softmax_cross_entropy_backward"});
}

}  // namespace opgraph::kernels
