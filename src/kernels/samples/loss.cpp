// Samples of the classification losses (loss.cpp, softmax_cross_entropy.cpp): nll_loss and its
// forward and backward, cross_entropy_loss and the fused softmax cross
// entropy, over (N, C) rows, an unbatched row, K extra dims, an empty batch
// and one class, with and without class weights, in each reduction, with
// an ignore_index the targets hit; class indices out of range, targets of
// the wrong shape or dtype, unknown reductions and weights of the wrong
// size are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

struct Loss {
  SampleTensor self;  // (N, C, ...), or (C)
  Shape target;
  bool weight;
  int64_t reduction;  // 0 none, 1 mean, 2 sum
  int64_t ignore_index = -100;
};

const std::vector<Loss>& losses() {
  static const std::vector<Loss> cases = {
      {tensor(F32, {3, 5}), {3}, false, 1},
      {tensor(F32, {3, 5}), {3}, true, 2},
      {tensor(F32, {4, 5}, Layout::Transposed), {4}, false, 0, 1},
      {tensor(F32, {5}), {}, true, 1},
      {tensor(F32, {2, 5, 4}), {2, 4}, false, 1, 2},
      {tensor(F32, {0, 5}), {0}, false, 2},
      {tensor(F32, {2, 5, 3, 3}, Layout::Strided), {2, 3, 3}, true, 0},
      {tensor(F32, {1, 1}), {1}, true, 1},
  };
  return cases;
}

int64_t classes(const Loss& c) { return c.self.shape.size() == 1 ? c.self.shape[0] : c.self.shape[1]; }

SampleTensor targets(const Loss& c) { return tensor(I64, c.target).in(0, classes(c) - 1); }

SampleTensor weights(const Loss& c, DType dtype) {
  return c.weight ? tensor(dtype, {classes(c)}).in(0.5, 2) : SampleTensor::absent();
}

// The loss's shape: the targets' with no reduction, else 0-d.
Shape loss_shape(const Loss& c) { return c.reduction == 0 ? c.target : Shape{}; }

std::vector<Attr> loss_attrs(const Loss& c) { return {{"reduction", c.reduction}, {"ignore_index", c.ignore_index}}; }

// `backward`: nll_loss_backward's inputs around the forward's; `k_dims`:
// the op takes (N, C, d1, ...), not only (C) and (N, C) as ATen's
// nll_loss_forward and nll_loss_backward.
std::vector<Sample> nll_losses(bool backward, bool k_dims) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (Loss c : losses()) {
      if (!k_dims && c.self.shape.size() > 2) continue;
      c.self.dtype = dtype;
      if (backward) {
        table.push_back(
            good({tensor(dtype, loss_shape(c)), c.self, targets(c), weights(c, dtype), tensor(dtype, {}).in(1, 4)},
                 loss_attrs(c)));
      } else {
        table.push_back(good({c.self, targets(c), weights(c, dtype)}, loss_attrs(c)));
      }
    }
  }
  return table;
}

// The refusals of the losses of (self, target, weight), `prefix` inputs before them.
std::vector<Sample> with_refusals(std::vector<Sample> table, const std::vector<SampleTensor>& prefix = {},
                                  const std::vector<SampleTensor>& suffix = {}) {
  auto inputs = [&](SampleTensor target, SampleTensor weight = SampleTensor::absent()) {
    std::vector<SampleTensor> all = prefix;
    all.push_back(tensor(F32, {3, 5}));
    all.push_back(std::move(target));
    all.push_back(std::move(weight));
    all.insert(all.end(), suffix.begin(), suffix.end());
    return all;
  };
  const std::vector<Attr> mean = {{"reduction", int64_t{1}}, {"ignore_index", int64_t{-100}}};
  const SampleTensor good_target = tensor(I64, {3}).in(0, 4);
  table.push_back(bad(inputs(tensor(I64, {3}).in(12, 12)),
                      "target: class index 12 (at flat position 0) is out of range for 5 classes", mean));
  table.push_back(bad(inputs(tensor(I64, {4}).in(0, 4)),
                      "target: expected int64 class indices of shape [3] for self float32[3, 5], got int64[4]", mean));
  table.push_back(bad(inputs(tensor(I32, {3}).in(0, 4)), "got int32[3]", mean));
  table.push_back(bad(inputs(good_target), "reduction: expected 0 (none), 1 (mean) or 2 (sum), got 3",
                      {{"reduction", int64_t{3}}, {"ignore_index", int64_t{-100}}}));
  table.push_back(
      bad(inputs(good_target, tensor(F32, {4})), "weight: expected None or float32[5], got float32[4]", mean));
  return table;
}

void register_nll_losses(BuiltinOps& builtins) {
  add_to_each(builtins, {"aten::nll_loss", "aten::cross_entropy_loss"}, with_refusals(nll_losses(false, true)));
  builtins.add_samples("aten::nll_loss_forward", with_refusals(nll_losses(false, false)));
  builtins.add_samples("aten::nll_loss_backward",
                       with_refusals(nll_losses(true, false), {tensor(F32, {})}, {tensor(F32, {})}));
}

// The fused softmax cross entropy over (N, C) logits, and its backward.
void register_softmax_cross_entropy(BuiltinOps& builtins) {
  std::vector<Sample> forward, backward;
  for (DType dtype : {F32, F64}) {
    for (const Loss& c : losses()) {
      if (c.self.shape.size() != 2) continue;
      SampleTensor logits = c.self;
      logits.dtype = dtype;
      const std::vector<Attr> attrs = {{"ignore_index", c.ignore_index}, {"label_smoothing", c.weight ? 0.1 : 0.0}};
      forward.push_back(good({logits.in(-8, 8), targets(c)}, attrs));
      SampleTensor probabilities = c.self;
      probabilities.dtype = dtype;
      backward.push_back(good({tensor(dtype, {}), probabilities.in(0, 1), targets(c)}, attrs));
    }
  }
  forward.push_back(
      bad({tensor(F32, {3, 5, 2}), tensor(I64, {3}).in(0, 4)}, "logits: expected rank 2 (N, C), got float32[3, 5, 2]"));
  forward.push_back(bad({tensor(F32, {3, 5}), tensor(I64, {3}).in(13, 13)},
                        "target: row 0 has class index 13, out of range for 5 classes"));
  builtins.add_samples("opgraph::softmax_cross_entropy", forward);
  backward.push_back(bad({tensor(F32, {3}), tensor(F32, {3, 5}), tensor(I64, {3}).in(0, 4)},
                         "grad_loss: expected float32[] like the loss, got float32[3]"));
  backward.push_back(bad({tensor(F32, {}), tensor(F32, {3, 5}), tensor(I64, {3}).in(13, 13)}, "13"));
  builtins.add_samples("opgraph::softmax_cross_entropy_backward", backward);
}

}  // namespace

void register_loss_samples(BuiltinOps& builtins) {
  register_nll_losses(builtins);
  register_softmax_cross_entropy(builtins);
}

}  // namespace opgraph::kernels::samples
