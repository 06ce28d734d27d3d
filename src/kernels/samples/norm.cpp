// Samples of the normalizations (norm.cpp): layer, RMS, group, batch and
// instance norm and the backward ops, over several trailing dims, groups of
// one channel and one element, empty batches, with and without the affine
// weight and bias and running statistics, on transposed and strided inputs.
// Shapes that do not end the input, groups that do not divide the channels,
// statistics the mode needs but lacks and integer inputs are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

// A `Tensor?` of `shape`, or None.
SampleTensor maybe(bool given, DType dtype, Shape shape) {
  return given ? tensor(dtype, std::move(shape)) : SampleTensor::absent();
}

// A reciprocal standard deviation: positive.
SampleTensor rstd(DType dtype, Shape shape) { return tensor(dtype, std::move(shape)).in(0.5, 2); }

struct LayerNormCase {
  SampleTensor input;
  size_t normalized;  // how many trailing dims
  bool affine;
};

const std::vector<LayerNormCase>& layer_norm_cases() {
  static const std::vector<LayerNormCase> cases = {
      {tensor(F32, {2, 3, 4}), 1, true},
      {tensor(F32, {2, 3, 4}), 2, false},
      {tensor(F32, {5, 7}, Layout::Transposed), 1, true},
      {tensor(F32, {0, 4}), 1, true},
      {tensor(F32, {3, 1}), 1, true},  // one element: zero variance
      {tensor(F32, {6}), 1, false},
      {tensor(F32, {2, 300}, Layout::Strided), 1, true},
      {tensor(F32, {129, 515}), 1, true},  // past the parallel threshold
  };
  return cases;
}

Shape trailing(const Shape& shape, size_t n) { return Shape(shape.end() - static_cast<ptrdiff_t>(n), shape.end()); }

// The statistics' shape: the leading dims, then a 1 for each normalized one.
Shape stats_shape(const Shape& shape, size_t n) {
  Shape stats(shape.begin(), shape.end() - static_cast<ptrdiff_t>(n));
  stats.insert(stats.end(), n, 1);
  return stats;
}

// `backward`: native_layer_norm_backward's inputs around the forward's.
std::vector<Sample> layer_norms(bool backward) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (LayerNormCase c : layer_norm_cases()) {
      c.input.dtype = dtype;
      const Shape& shape = c.input.shape;
      const Shape normalized = trailing(shape, c.normalized);
      std::vector<Attr> attrs = {{"normalized_shape", normalized}, {"eps", 1e-5}};
      std::vector<SampleTensor> inputs = {c.input, maybe(c.affine, dtype, normalized),
                                          maybe(c.affine, dtype, normalized)};
      if (backward) {
        inputs = {tensor(dtype, shape),
                  c.input,
                  tensor(dtype, stats_shape(shape, c.normalized)),
                  rstd(dtype, stats_shape(shape, c.normalized)),
                  inputs[1],
                  inputs[2]};
        attrs = {{"normalized_shape", normalized}, {"output_mask", std::vector<int64_t>{1, c.affine, 1}}};
      }
      table.push_back(good(std::move(inputs), attrs));
    }
  }
  return table;
}

void register_layer_norms(BuiltinOps& builtins) {
  std::vector<Sample> forward = layer_norms(false);
  const std::vector<Attr> last = {{"normalized_shape", Shape{4}}, {"eps", 1e-5}};
  forward.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {4}), SampleTensor::absent()},
                        "normalized_shape: expected a non-empty shape that ends the input's shape [2, 3, 4], got [5]",
                        {{"normalized_shape", Shape{5}}, {"eps", 1e-5}}));
  forward.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {5}), SampleTensor::absent()},
                        "weight: expected float32[4] to match input float32[2, 3, 4], got float32[5]", last));
  forward.push_back(bad({tensor(I64, {2, 3, 4}), SampleTensor::absent(), SampleTensor::absent()},
                        "input: expected float32 or float64, got int64", last));
  add_to_each(builtins, {"aten::layer_norm", "aten::native_layer_norm"}, forward);

  std::vector<Sample> backward = layer_norms(true);
  const std::vector<Attr> attrs = {{"normalized_shape", Shape{4}}, {"output_mask", std::vector<int64_t>{1, 1, 1}}};
  backward.push_back(bad({tensor(F32, {2, 3, 5}), tensor(F32, {2, 3, 4}), tensor(F32, {2, 3, 1}), rstd(F32, {2, 3, 1}),
                          SampleTensor::absent(), SampleTensor::absent()},
                         "grad_out: expected float32[2, 3, 4] like input, got float32[2, 3, 5]", attrs));
  backward.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {2, 3, 4}), tensor(F32, {2, 3, 1}), rstd(F32, {2, 3, 1}),
                          tensor(F32, {5}), SampleTensor::absent()},
                         "weight", attrs));
  builtins.add_samples("aten::native_layer_norm_backward", backward);
}

// rms_norm on the layer norms' inputs, with eps given and absent (the
// dtype's epsilon), and its errors.
void register_rms_norms(BuiltinOps& builtins) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (LayerNormCase c : layer_norm_cases()) {
      c.input.dtype = dtype;
      const Shape normalized = trailing(c.input.shape, c.normalized);
      std::vector<Attr> attrs = {{"normalized_shape", normalized}};
      if (c.affine) attrs.push_back({"eps", 1e-6});
      table.push_back(good({c.input, maybe(c.affine, dtype, normalized)}, attrs));
    }
  }
  table.push_back(bad({tensor(F32, {2, 3, 4}), SampleTensor::absent()},
                      "normalized_shape: expected a non-empty shape that ends the input's shape [2, 3, 4], got [3]",
                      {{"normalized_shape", Shape{3}}}));
  table.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F64, {4})},
                      "weight: expected float32[4] to match input float32[2, 3, 4], got float64[4]",
                      {{"normalized_shape", Shape{4}}}));
  table.push_back(bad({tensor(I64, {2, 3, 4}), SampleTensor::absent()}, "input: expected float32 or float64, got int64",
                      {{"normalized_shape", Shape{4}}}));
  builtins.add_samples("aten::rms_norm", table);
}

struct GroupNormCase {
  SampleTensor input;
  int64_t groups;
  bool affine;
};

const std::vector<GroupNormCase>& group_norm_cases() {
  static const std::vector<GroupNormCase> cases = {
      {tensor(F32, {2, 6, 5}), 3, true},
      {tensor(F32, {2, 6}), 2, false},  // no spatial dims
      {tensor(F32, {1, 4, 3, 3}, Layout::Transposed), 4, true},
      {tensor(F32, {0, 6, 5}), 3, true},
      {tensor(F32, {3, 1, 7}), 1, false},
      {tensor(F32, {2, 4, 2, 9}, Layout::Strided), 2, true},
      {tensor(F32, {4, 16, 33, 33}), 4, true},  // past the parallel threshold
  };
  return cases;
}

int64_t spatial_size(const Shape& shape) {
  int64_t size = 1;
  for (size_t d = 2; d < shape.size(); ++d) size *= shape[d];
  return size;
}

// The group norms in the form of `op`: aten::group_norm, native_group_norm or its backward.
std::vector<Sample> group_norms(std::string_view op) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (GroupNormCase c : group_norm_cases()) {
      c.input.dtype = dtype;
      const Shape& shape = c.input.shape;
      const Shape channels = {shape[1]}, stats = {shape[0], c.groups};
      const SampleTensor weight = maybe(c.affine, dtype, channels), bias = maybe(c.affine, dtype, channels);
      const std::vector<Attr> sizes = {
          {"N", shape[0]}, {"C", shape[1]}, {"HxW", spatial_size(shape)}, {"group", c.groups}};
      if (op == "aten::group_norm") {
        table.push_back(good({c.input, weight, bias}, {{"num_groups", c.groups}, {"eps", 1e-5}}));
      } else if (op == "aten::native_group_norm") {
        std::vector<Attr> attrs = sizes;
        attrs.emplace_back("eps", 1e-5);
        table.push_back(good({c.input, weight, bias}, attrs));
      } else {
        std::vector<Attr> attrs = sizes;
        attrs.emplace_back("output_mask", std::vector<int64_t>{1, 1, c.affine});
        table.push_back(good({tensor(dtype, shape), c.input, tensor(dtype, stats), rstd(dtype, stats), weight}, attrs));
      }
    }
  }
  return table;
}

void register_group_norms(BuiltinOps& builtins) {
  std::vector<Sample> group_norm = group_norms("aten::group_norm");
  const SampleTensor none = SampleTensor::absent();
  group_norm.push_back(bad({tensor(F32, {2, 6, 5}), none, none}, "groups: expected a divisor of the 6 channels, got 4",
                           {{"num_groups", int64_t{4}}}));
  group_norm.push_back(bad({tensor(F32, {2, 6, 5}), tensor(F32, {5}), none},
                           "weight: expected float32[6] to match input float32[2, 6, 5], got float32[5]",
                           {{"num_groups", int64_t{3}}}));
  group_norm.push_back(bad({tensor(I64, {2, 6, 5}), none, none}, "input: expected float32 or float64, got int64",
                           {{"num_groups", int64_t{3}}}));
  builtins.add_samples("aten::group_norm", group_norm);

  std::vector<Sample> native = group_norms("aten::native_group_norm");
  auto sizes = [](int64_t hxw, int64_t group) {
    return std::vector<Attr>{{"N", int64_t{2}}, {"C", int64_t{6}}, {"HxW", hxw}, {"group", group}, {"eps", 1e-5}};
  };
  native.push_back(bad({tensor(F32, {2, 6, 5}), none, none},
                       "input: expected N=2 x C=6 x HxW=4 elements, got float32[2, 6, 5]", sizes(4, 3)));
  native.push_back(
      bad({tensor(F32, {2, 6, 5}), none, none}, "groups: expected a divisor of the 6 channels, got 4", sizes(5, 4)));
  builtins.add_samples("aten::native_group_norm", native);

  std::vector<Sample> backward = group_norms("aten::native_group_norm_backward");
  std::vector<Attr> attrs = sizes(5, 3);
  attrs.back() = {"output_mask", std::vector<int64_t>{1, 1, 1}};
  backward.push_back(bad({tensor(F32, {2, 6, 5}), tensor(F32, {2, 6, 5}), tensor(F32, {2, 2}), rstd(F32, {2, 3}), none},
                         "mean: expected float32[2, 3] like the forward's mean (N, group), got float32[2, 2]", attrs));
  backward.push_back(bad({tensor(F32, {2, 6, 4}), tensor(F32, {2, 6, 5}), tensor(F32, {2, 3}), rstd(F32, {2, 3}), none},
                         "grad_out", attrs));
  builtins.add_samples("aten::native_group_norm_backward", backward);
}

struct BatchNormCase {
  SampleTensor input;
  bool affine, stats, training;
  double float32_tolerance = 0;  // 0: the default
};

const std::vector<BatchNormCase>& batch_norm_cases() {
  static const std::vector<BatchNormCase> cases = {
      {tensor(F32, {2, 3, 4}), true, true, false},
      {tensor(F32, {2, 3, 4}), false, false, true},
      {tensor(F32, {4, 5}), true, false, true},  // (N, C)
      {tensor(F32, {0, 3, 4}), true, true, false},
      {tensor(F32, {1, 3, 2, 2}, Layout::Transposed), true, true, true},
      {tensor(F32, {2, 2, 3, 5}, Layout::Strided), false, true, false},
      {tensor(F32, {4, 16, 33, 33}), true, true, true},  // past the parallel threshold
      // One element per channel: zero variance, so rstd = 1/sqrt(eps) ~ 316; the
      // fast kernels' x * scale + (bias - mean * scale), as PyTorch's, then
      // cancels two products of ~316 |x| in float32 where the reference gets 0.
      {tensor(F32, {1, 3, 1}), true, false, true, 2e-4},
  };
  return cases;
}

// A batch norm's mode attributes, then its momentum and eps.
std::vector<Attr> with_momentum(std::vector<Attr> mode) {
  mode.emplace_back("momentum", 0.1);
  mode.emplace_back("eps", 1e-5);
  return mode;
}

// The batch norms whose statistics and mode fit `fits`, in the inputs
// input, weight, bias[, running_mean, running_var] (`with_stats`: the op
// takes the running statistics) and with `mode`'s attributes.
template <typename Fits, typename Mode>
std::vector<Sample> batch_norms(bool with_stats, Fits fits, Mode mode) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (BatchNormCase c : batch_norm_cases()) {
      if (!fits(c)) continue;
      c.input.dtype = dtype;
      const Shape channels = {c.input.shape[1]};
      std::vector<SampleTensor> inputs = {c.input, maybe(c.affine, dtype, channels), maybe(c.affine, dtype, channels)};
      if (with_stats) {
        inputs.push_back(maybe(c.stats, dtype, channels));
        inputs.push_back(c.stats ? rstd(dtype, channels) : SampleTensor::absent());
      }
      Sample sample = good(std::move(inputs), with_momentum(mode(c)));
      if (dtype == F32) sample.tolerance = c.float32_tolerance;
      table.push_back(std::move(sample));
    }
  }
  return table;
}

void register_batch_norms(BuiltinOps& builtins) {
  const SampleTensor none = SampleTensor::absent();
  const auto all = [](const BatchNormCase&) { return true; };
  const auto with_stats = [](const BatchNormCase& c) { return c.stats; };
  const auto training = [](const BatchNormCase& c) { return std::vector<Attr>{{"training", c.training}}; };
  const std::vector<Attr> train = with_momentum({{"training", true}});
  const std::vector<Attr> eval = with_momentum({{"training", false}});
  const std::vector<Attr> train_cudnn = with_momentum({{"training", true}, {"cudnn_enabled", true}});
  const std::string int_input = "input: expected float32 or float64, got int64";
  const std::string weight_shape = "weight: expected float32[3] to match input float32[2, 3, 4], got float32[4]";

  std::vector<Sample> batch_norm = batch_norms(true, all, [](const BatchNormCase& c) {
    return std::vector<Attr>{{"training", c.training}, {"cudnn_enabled", true}};
  });
  batch_norm.push_back(bad({tensor(F32, {2, 3, 4}), none, none, none, none},
                           "running_mean, running_var: expected tensors in inference mode (training=False), got None",
                           with_momentum({{"training", false}, {"cudnn_enabled", true}})));
  batch_norm.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {4}), none, none, none}, weight_shape, train_cudnn));
  batch_norm.push_back(bad({tensor(I64, {2, 3, 4}), none, none, none, none}, int_input, train_cudnn));
  batch_norm.push_back(bad({tensor(F32, {3}), none, none, none, none},
                           "input: expected rank 2 or more (N, C, ...), got float32[3]", train_cudnn));
  builtins.add_samples("aten::batch_norm", batch_norm);

  std::vector<Sample> no_training =
      batch_norms(true, with_stats, [](const BatchNormCase&) { return std::vector<Attr>{}; });
  no_training.push_back(bad({tensor(F32, {2, 3, 4}), none, none, tensor(F32, {3}), tensor(F32, {2})},
                            "running_var: expected float32[3] to match input float32[2, 3, 4], got float32[2]",
                            with_momentum({})));
  no_training.push_back(
      bad({tensor(I64, {2, 3, 4}), none, none, tensor(F32, {3}), tensor(F32, {3})}, int_input, with_momentum({})));
  builtins.add_samples("aten::_native_batch_norm_legit_no_training", no_training);

  std::vector<Sample> functional = batch_norms(true, with_stats, training);
  functional.push_back(
      bad({tensor(F32, {2, 3, 4}), tensor(F32, {4}), none, tensor(F32, {3}), tensor(F32, {3})}, weight_shape, train));
  functional.push_back(bad({tensor(I64, {2, 3, 4}), none, none, tensor(F32, {3}), tensor(F32, {3})}, int_input, train));
  // _native_batch_norm_legit updates no running statistics in place: it is the functional form with fewer outputs.
  add_to_each(builtins, {"aten::_native_batch_norm_legit_functional", "aten::_native_batch_norm_legit"}, functional);

  std::vector<Sample> no_stats =
      batch_norms(false, all, [](const BatchNormCase&) { return std::vector<Attr>{{"training", true}}; });
  no_stats.push_back(
      bad({tensor(F32, {2, 3, 4}), none, none}, "training: expected True without running statistics, got False", eval));
  no_stats.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {4}), none}, weight_shape, train));
  builtins.add_samples("aten::_native_batch_norm_legit.no_stats", no_stats);

  // Instance norm: the statistics of each (sample, channel), or the running ones.
  std::vector<Sample> instance = batch_norms(true, all, [](const BatchNormCase& c) {
    return std::vector<Attr>{{"use_input_stats", c.training || !c.stats}, {"cudnn_enabled", false}};
  });
  // Inputs without spatial dims make instances of one element: zero variance,
  // as in the batch norm case above.
  for (Sample& sample : instance) {
    if (sample.inputs[0].dtype == F32 && spatial_size(sample.inputs[0].shape) == 1) sample.tolerance = 2e-4;
  }
  instance.push_back(bad({tensor(F32, {2, 3, 4}), none, none, none, none},
                         "running_mean, running_var: expected tensors when use_input_stats is False, got None",
                         with_momentum({{"use_input_stats", false}, {"cudnn_enabled", false}})));
  instance.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {4}), none, none, none}, weight_shape,
                         with_momentum({{"use_input_stats", true}, {"cudnn_enabled", false}})));
  builtins.add_samples("aten::instance_norm", instance);
}

}  // namespace

void register_norm_samples(BuiltinOps& builtins) {
  register_layer_norms(builtins);
  register_rms_norms(builtins);
  register_group_norms(builtins);
  register_batch_norms(builtins);
}

}  // namespace opgraph::kernels::samples
