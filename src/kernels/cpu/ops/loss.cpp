// Negative log-likelihood and cross-entropy with class-index targets.
//
// self is (C) with a scalar target, or (N, C, d1, ...) with target
// (N, d1, ...): each target element picks one class of its row of self.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
enum class Kind { Nll, CrossEntropy };

// ---- Shape functions ------------------------------------------------------

// Checks the arguments every op of the family shares and returns the meta of
// the loss (target-shaped for reduction=none, a scalar otherwise).
TensorMeta loss_meta(const TensorMeta& self, const TensorMeta& target, const TensorMeta* weight, int64_t reduction,
                     int64_t max_rank) {
  check_floating(self, "self");
  OPGRAPH_CHECK(self.dim() >= 1 && self.dim() <= max_rank, "self: expected rank 1 to ", max_rank,
                " ((C) or (N, C, ...)), got ", self.str());
  Shape target_shape = self.shape;
  target_shape.erase(target_shape.begin() + (self.dim() == 1 ? 0 : 1));
  const TensorMeta expected_target{DType::Int64, target_shape};
  OPGRAPH_CHECK(target == expected_target, "target: expected int64 class indices of shape ", shape_str(target_shape),
                " for self ", self.str(), ", got ", target.str());
  const int64_t classes = self.shape[self.dim() == 1 ? 0 : 1];
  const TensorMeta expected_weight{self.dtype, {classes}};
  OPGRAPH_CHECK(weight == nullptr || *weight == expected_weight, "weight: expected None or ", expected_weight.str(),
                ", got ", weight ? weight->str() : "");
  OPGRAPH_CHECK(reduction >= 0 && reduction <= 2, "reduction: expected 0 (none), 1 (mean) or 2 (sum), got ", reduction);
  return reduction == 0 ? TensorMeta{self.dtype, target_shape} : TensorMeta{self.dtype, {}};
}

TensorMeta nll_loss_shape(const TensorMeta& self, const TensorMeta& target, const TensorMeta* weight, int64_t reduction,
                          int64_t) {
  return loss_meta(self, target, weight, reduction, INT64_MAX);
}

// ATen's nll_loss_forward and nll_loss_backward take (C) or (N, C) only.
std::vector<TensorMeta> nll_loss_forward_shape(const TensorMeta& self, const TensorMeta& target,
                                               const TensorMeta* weight, int64_t reduction, int64_t) {
  return {loss_meta(self, target, weight, reduction, 2), TensorMeta{self.dtype, {}}};
}

TensorMeta cross_entropy_shape(const TensorMeta& self, const TensorMeta& target, const TensorMeta* weight,
                               int64_t reduction, int64_t ignore_index, double label_smoothing) {
  OPGRAPH_CHECK(label_smoothing == 0.0, "label_smoothing: expected 0.0 (label smoothing is not supported), got ",
                label_smoothing);
  return nll_loss_shape(self, target, weight, reduction, ignore_index);
}

TensorMeta nll_loss_backward_shape(const TensorMeta& grad_output, const TensorMeta& self, const TensorMeta& target,
                                   const TensorMeta* weight, int64_t reduction, int64_t,
                                   const TensorMeta& total_weight) {
  const TensorMeta loss = loss_meta(self, target, weight, reduction, 2);
  check_same_meta(grad_output, "grad_output", loss, "the loss");
  const TensorMeta scalar{self.dtype, {}};
  check_same_meta(total_weight, "total_weight", scalar, "a scalar of self's dtype");
  return self;
}

// ---- Shared by kernels and references -----------------------------------------

struct LossArgs {
  int64_t batch, classes, spatial;  // self viewed as (batch, classes, spatial)
  bool batched;                     // self is (N, C, ...) rather than (C)
  Reduction reduction;
  int64_t ignore_index;

  int64_t rows() const { return batch * spatial; }  // = target's numel
  // Where self holds class c of target element r.
  int64_t at(int64_t r, int64_t c) const { return ((r / spatial) * classes + c) * spatial + r % spatial; }
};

LossArgs loss_args(const Tensor& self, int64_t reduction, int64_t ignore_index) {
  const bool batched = self.dim() > 1;
  return {batched ? self.size(0) : 1,
          self.size(batched ? 1 : 0),
          batched ? product(std::span(self.shape()).subspan(2)) : 1,
          batched,
          static_cast<Reduction>(reduction),
          ignore_index};
}

// The class target element r names, or -1 when it is ignore_index.
int64_t target_class(const int64_t* target, int64_t r, const LossArgs& args) {
  const int64_t c = target[r];
  if (c == args.ignore_index) return -1;
  OPGRAPH_CHECK(c >= 0 && c < args.classes, "target: class index ", c, " (at flat position ", r,
                ") is out of range for ", args.classes, " classes (expected 0 to ", args.classes - 1,
                " or ignore_index=", args.ignore_index, ")");
  return c;
}

// Writes the loss from per-element losses and weights, and total_weight if asked.
template <typename T>
void write_loss(const LossArgs& args, std::span<const double> losses, std::span<const double> weights,
                std::span<const Tensor> outputs) {
  T* out = outputs[0].data_ptr<T>();
  double sum = 0, total_weight = 0;
  for (size_t r = 0; r < losses.size(); ++r) {
    sum += losses[r];
    total_weight += weights[r];
  }
  if (args.reduction == Reduction::None) {
    std::copy(losses.begin(), losses.end(), out);
  } else {
    out[0] = static_cast<T>(args.reduction == Reduction::Mean ? sum / total_weight : sum);
  }
  // Like ATen: a (C) input reports its weight even unreduced, (N, C) zero.
  const bool report_weight = args.reduction != Reduction::None || !args.batched;
  if (outputs.size() > 1) outputs[1].data_ptr<T>()[0] = static_cast<T>(report_weight ? total_weight : 0.0);
}

template <typename T>
const T* data_or_null(const Tensor* t) {
  return t ? t->data_ptr<const T>() : nullptr;
}

// ---- Fast kernels ---------------------------------------------------------

template <typename T>
double log_sum_exp(const T* x, int64_t n) {
  const T max = row_max(x, n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
  return max + std::log(sum);
}

// Moves the class dim last, so each target element reads one contiguous row
// (cross-entropy takes that row's log-sum-exp: log_softmax never materializes).
template <Kind kind>
void loss_cpu(const KernelContext& context, const Tensor& input, const Tensor& target_tensor, const Tensor* weight,
              int64_t reduction, int64_t ignore_index, std::span<const Tensor> outputs) {
  const LossArgs args = loss_args(input, reduction, ignore_index);
  const int64_t class_dim = input.dim() > 1 ? 1 : 0;
  const Tensor self = permuted_contiguous(input, dims_last_order(input.dim(), {&class_dim, 1}));
  const int64_t* target = target_tensor.data_ptr<const int64_t>();
  std::vector<double> losses(static_cast<size_t>(args.rows())), weights(losses.size());
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    const T* w = data_or_null<T>(weight);
    const int64_t work = kind == Kind::CrossEntropy ? args.classes : 1;
    parallel_rows(context, args.rows(), work, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t c = target_class(target, r, args);
        if (c < 0) continue;
        const T* row = x + r * args.classes;
        const double log_p = kind == Kind::CrossEntropy ? row[c] - log_sum_exp(row, args.classes) : row[c];
        weights[r] = w ? w[c] : 1.0;
        losses[r] = -weights[r] * log_p;
      }
    });
    write_loss<T>(args, losses, weights, outputs);
  });
}

// Inputs: grad_output, self, target, weight?, total_weight. Only the picked
// entries get a gradient: d loss / d self[r, c] = -weight[c] * scale.
void nll_loss_backward_cpu(const KernelContext&, const Tensor& grad_output, const Tensor& self,
                           const Tensor& target_tensor, const Tensor* weight, int64_t reduction, int64_t ignore_index,
                           const Tensor& total_weight_tensor, const Tensor& grad_input) {
  const LossArgs args = loss_args(self, reduction, ignore_index);
  const int64_t* target = target_tensor.data_ptr<const int64_t>();
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* grad = grad_output.data_ptr<const T>();
    const T* w = data_or_null<T>(weight);
    const T total_weight = total_weight_tensor.data_ptr<const T>()[0];
    T* dx = grad_input.data_ptr<T>();
    std::fill(dx, dx + grad_input.numel(), T(0));
    for (int64_t r = 0; r < args.rows(); ++r) {
      const int64_t c = target_class(target, r, args);
      if (c < 0) continue;
      const T g = args.reduction == Reduction::None   ? grad[r]
                  : args.reduction == Reduction::Mean ? grad[0] / total_weight
                                                      : grad[0];
      dx[args.at(r, c)] = -(w ? w[c] : T(1)) * g;
    }
  });
}

// ---- Reference implementations --------------------------------------------

template <Kind kind>
void loss_reference(const KernelContext&, const Tensor& self, const Tensor& target_tensor, const Tensor* weight,
                    int64_t reduction, int64_t ignore_index, std::span<const Tensor> outputs) {
  const LossArgs args = loss_args(self, reduction, ignore_index);
  const int64_t* target = target_tensor.data_ptr<const int64_t>();
  std::vector<double> losses(static_cast<size_t>(args.rows()), 0.0), weights(losses.size(), 0.0);
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    const T* w = data_or_null<T>(weight);
    for (int64_t r = 0; r < args.rows(); ++r) {
      const int64_t c = target_class(target, r, args);
      if (c < 0) continue;
      double log_p = x[args.at(r, c)];
      if (kind == Kind::CrossEntropy) {
        double max = -INFINITY, sum = 0;
        for (int64_t k = 0; k < args.classes; ++k) max = std::max(max, double(x[args.at(r, k)]));
        for (int64_t k = 0; k < args.classes; ++k) sum += std::exp(x[args.at(r, k)] - max);
        log_p -= max + std::log(sum);
      }
      weights[r] = w ? w[c] : 1.0;
      losses[r] = -weights[r] * log_p;
    }
    write_loss<T>(args, losses, weights, outputs);
  });
}

// Visits every entry of self and asks whether the loss used it.
void nll_loss_backward_reference(const KernelContext&, const Tensor& grad_output, const Tensor& self,
                                 const Tensor& target_tensor, const Tensor* weight, int64_t reduction,
                                 int64_t ignore_index, const Tensor& total_weight_tensor, const Tensor& grad_input) {
  const LossArgs args = loss_args(self, reduction, ignore_index);
  const int64_t* target = target_tensor.data_ptr<const int64_t>();
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* grad = grad_output.data_ptr<const T>();
    const T* w = data_or_null<T>(weight);
    const double total_weight = total_weight_tensor.data_ptr<const T>()[0];
    T* dx = grad_input.data_ptr<T>();
    for (int64_t r = 0; r < args.rows(); ++r) {
      const int64_t picked = target_class(target, r, args);
      for (int64_t c = 0; c < args.classes; ++c) {
        double g = 0;
        if (c == picked) {
          g = args.reduction == Reduction::None ? grad[r] : grad[0];
          if (args.reduction == Reduction::Mean) g /= total_weight;
          g *= -(w ? w[c] : 1.0);
        }
        dx[args.at(r, c)] = static_cast<T>(g);
      }
    }
  });
}

// cross_entropy_loss: nll_loss's kernel with the label_smoothing its shape
// function checks is 0.
template <Kind kind, bool kReference>
void cross_entropy_kernel(const KernelContext& context, const Tensor& self, const Tensor& target, const Tensor* weight,
                          int64_t reduction, int64_t ignore_index, double, std::span<const Tensor> outputs) {
  (kReference ? loss_reference<kind> : loss_cpu<kind>)(context, self, target, weight, reduction, ignore_index, outputs);
}

}  // namespace

void register_loss_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
                              "Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor",
                    .shape = nll_loss_backward_shape,
                    .cpu = nll_loss_backward_cpu,
                    .reference = nll_loss_backward_reference});
  define(builtins, {.schema = "aten::nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "
                              "SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
                    .shape = nll_loss_forward_shape,
                    .cpu = loss_cpu<Kind::Nll>,
                    .reference = loss_reference<Kind::Nll>,
                    .backward = "aten::nll_loss_backward"});
  define(builtins, {.schema = "aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
                              "SymInt ignore_index=-100) -> Tensor",
                    .shape = nll_loss_shape,
                    .cpu = loss_cpu<Kind::Nll>,
                    .reference = loss_reference<Kind::Nll>});
  define(builtins, {.schema = "aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, "
                              "int reduction=1, SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor",
                    .shape = cross_entropy_shape,
                    .cpu = cross_entropy_kernel<Kind::CrossEntropy, false>,
                    .reference = cross_entropy_kernel<Kind::CrossEntropy, true>});
}

}  // namespace opgraph::kernels
