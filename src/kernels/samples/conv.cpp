// Samples of the convolutions (conv.cpp, conv_backward.cpp, conv_nchwc.cpp) over 1, 2 and
// 3 spatial dims: grouped and depthwise, strided and dilated, padded past
// half the kernel, 1x1 kernels and single pixels, an empty batch, an
// unbatched input, with and without bias, on transposed and strided
// inputs; the transposed convolutions with output padding. Integer inputs,
// weights whose channels do not fit the groups, zero strides, biases of the
// wrong size and kernels larger than the padded input are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

struct Conv {
  int64_t batch;  // -1: unbatched
  int64_t in_channels, size, out_channels, kernel;
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  bool bias = false;
  Layout layout = Layout::Contiguous;
};

const std::vector<Conv>& convs() {
  static const std::vector<Conv> cases = {
      {2, 4, 5, 6, 3, 1, 1, 1, 2, true},
      {1, 3, 7, 5, 2, 2, 0, 2, 1, false},
      {0, 4, 5, 2, 3, 1, 0, 1, 1, true},
      {-1, 2, 4, 3, 1, 1, 0, 1, 1, true},
      {1, 3, 6, 4, 3, 1, 2, 1, 1, true, Layout::Transposed},
      {1, 4, 5, 8, 3, 2, 1, 1, 4, false, Layout::Strided},  // depthwise
      {1, 1, 1, 1, 1, 1, 0, 1, 1, true},
  };
  return cases;
}

Shape input_shape(const Conv& c, size_t dims) {
  return spatial(c.batch < 0 ? Shape{c.in_channels} : Shape{c.batch, c.in_channels}, c.size, dims);
}

// The weight: (out, in / groups, kernel...), or transposed (in, out / groups, kernel...).
Shape weight_shape(const Conv& c, size_t dims, bool transposed) {
  Shape shape =
      transposed ? Shape{c.in_channels, c.out_channels / c.groups} : Shape{c.out_channels, c.in_channels / c.groups};
  shape.insert(shape.end(), dims, c.kernel);
  return shape;
}

// For a transposed convolution: output padding below the stride, where there is room.
int64_t output_padding(const Conv& c) { return c.stride > 1 ? 1 : 0; }

// The output's spatial size.
int64_t output_size(const Conv& c, bool transposed) {
  const int64_t span = c.dilation * (c.kernel - 1);
  if (transposed) return (c.size - 1) * c.stride - 2 * c.padding + span + output_padding(c) + 1;
  return (c.size + 2 * c.padding - span - 1) / c.stride + 1;
}

Shape output_shape(const Conv& c, size_t dims, bool transposed) {
  return spatial(c.batch < 0 ? Shape{c.out_channels} : Shape{c.batch, c.out_channels}, output_size(c, transposed),
                 dims);
}

std::vector<SampleTensor> conv_inputs(const Conv& c, size_t dims, bool transposed, DType dtype) {
  return {tensor(dtype, input_shape(c, dims), c.layout), tensor(dtype, weight_shape(c, dims, transposed)),
          c.bias ? tensor(dtype, {c.out_channels}) : SampleTensor::absent()};
}

std::vector<Attr> window_attrs(const Conv& c, size_t dims) {
  return {{"stride", repeat(c.stride, dims)},
          {"padding", repeat(c.padding, dims)},
          {"dilation", repeat(c.dilation, dims)},
          {"groups", c.groups}};
}

// `form`: how the op takes its window ("convolution", "conv", "transpose", "same").
std::vector<Sample> convolutions(size_t dims, const std::string& form, bool transposed = false) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (const Conv& c : convs()) {
      if (form == "convolution" && c.batch < 0) continue;  // aten::convolution takes batches only
      if (form == "same" && c.stride != 1) continue;
      std::vector<Attr> attrs = window_attrs(c, dims);
      if (form == "convolution") {
        attrs.emplace_back("transposed", transposed);
        attrs.emplace_back("output_padding", repeat(transposed ? output_padding(c) : 0, dims));
      } else if (form == "transpose") {
        attrs.emplace_back("output_padding", repeat(output_padding(c), dims));
      } else if (form == "same") {
        attrs[1].second = std::string(c.padding > 0 ? "same" : "valid");
      }
      table.push_back(good(conv_inputs(c, dims, transposed, dtype), attrs));
    }
  }
  return table;
}

// The refusals of every convolution over `dims` spatial dims; `extra`: the form's attributes.
std::vector<Sample> with_refusals(std::vector<Sample> table, size_t dims, const std::vector<Attr>& extra,
                                  bool transposed = false) {
  const Conv c{1, 4, 5, 6, 3};
  auto attrs = [&](int64_t stride) {
    std::vector<Attr> all = window_attrs(c, dims);
    all[0].second = repeat(stride, dims);
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  std::vector<SampleTensor> inputs = conv_inputs(c, dims, transposed, F32);
  std::vector<SampleTensor> ints = inputs;
  ints[0].dtype = ints[1].dtype = I64;
  table.push_back(bad(ints, "input: expected float32 or float64, got int64", attrs(1)));
  std::vector<SampleTensor> mixed = inputs;
  mixed[1].dtype = F64;
  table.push_back(bad(mixed, "weight: expected float32 like input, got float64", attrs(1)));
  table.push_back(bad(inputs, "stride: expected values of at least 1, got [0", attrs(0)));
  std::vector<SampleTensor> biased = inputs;
  biased[2] = tensor(F32, {5});
  table.push_back(bad(biased, "bias: expected float32[", attrs(1)));
  return table;
}

// The backward ops: grad_output shaped like the convolution's output, then
// its input and weight (and for conv2d_act_backward, bias and output).
void register_conv_backward_samples(BuiltinOps& builtins) {
  std::vector<Sample> aten, plain, activated;
  bool mask = false;
  for (DType dtype : {F32, F64}) {
    for (const Conv& c : convs()) {
      for (size_t dims : {1, 2, 3}) {
        for (bool transposed : {false, true}) {
          if (c.batch < 0 || (dims != 2 && transposed)) continue;
          std::vector<SampleTensor> inputs = conv_inputs(c, dims, transposed, dtype);
          inputs.pop_back();
          inputs.insert(inputs.begin(), tensor(dtype, output_shape(c, dims, transposed)));
          std::vector<Attr> attrs = window_attrs(c, dims);
          attrs.emplace_back("transposed", transposed);
          attrs.emplace_back("output_padding", repeat(transposed ? output_padding(c) : 0, dims));
          attrs.emplace_back("bias_sizes", c.bias ? AttrValue(std::vector<int64_t>{c.out_channels}) : AttrValue());
          attrs.emplace_back("output_mask", std::vector<int64_t>{1, mask = !mask, c.bias});
          aten.push_back(good(inputs, attrs));
        }
      }
      std::vector<SampleTensor> inputs = conv_inputs(c, 2, false, dtype);
      const SampleTensor grad = tensor(dtype, output_shape(c, 2, false)), bias = inputs[2];
      inputs.pop_back();
      inputs.insert(inputs.begin(), grad);
      plain.push_back(good(inputs, window_attrs(c, 2)));
      // The fast kernel takes the activation's derivative from `output`, the
      // reference from the recomputed pre-activation: they agree on random
      // samples only where both recompute it (none, gelu); see gemm_backward.
      inputs.push_back(bias);
      inputs.push_back(grad);
      std::vector<Attr> attrs = window_attrs(c, 2);
      attrs.emplace_back("activation", std::string(activated.size() % 2 ? "gelu" : "none"));
      activated.push_back(good(inputs, attrs));
    }
  }
  const Conv c{1, 4, 5, 6, 3, 1, 1};
  std::vector<SampleTensor> inputs = conv_inputs(c, 2, false, F32);
  inputs.pop_back();
  inputs.insert(inputs.begin(), tensor(F32, {1, 6, 4, 4}));
  const std::string misshapen =
      "grad_output: expected float32[1, 6, 5, 5] like the convolution's output, got float32[1, 6, 4, 4]";
  std::vector<SampleTensor> ints = inputs;
  for (SampleTensor& input : ints) input.dtype = I64;
  std::vector<Attr> attrs = window_attrs(c, 2);
  plain.push_back(bad(inputs, misshapen, attrs));
  plain.push_back(bad(ints, "expected float32 or float64, got int64", attrs));
  builtins.add_samples("opgraph::conv2d_backward", plain);

  std::vector<Attr> aten_attrs = attrs;
  aten_attrs.emplace_back("transposed", false);
  aten_attrs.emplace_back("output_padding", repeat(0, 2));
  aten_attrs.emplace_back("bias_sizes", std::monostate{});
  aten_attrs.emplace_back("output_mask", std::vector<int64_t>{1, 1, 1});
  aten.push_back(bad(inputs, misshapen, aten_attrs));
  aten.push_back(bad(ints, "expected float32 or float64, got int64", aten_attrs));
  builtins.add_samples("aten::convolution_backward", aten);

  inputs.push_back(SampleTensor::absent());
  inputs.push_back(tensor(F32, {1, 6, 5, 5}));
  attrs.emplace_back("activation", std::string("none"));
  activated.push_back(bad(inputs, misshapen, attrs));
  inputs[0].shape = {1, 6, 5, 5};
  attrs.back().second = std::string("mish");
  activated.push_back(bad(inputs, "activation: expected one of", attrs));
  builtins.add_samples("opgraph::conv2d_act_backward", activated);
}

}  // namespace

void register_conv_samples(BuiltinOps& builtins) {
  for (size_t dims : {1, 2, 3}) {
    const std::string n = std::to_string(dims) + "d";
    std::vector<Sample> conv = with_refusals(convolutions(dims, "conv"), dims, {});
    const Conv small{1, 4, 2, 6, 3};
    conv.push_back(bad(conv_inputs(small, dims, false, F32),
                       "input: spatial size 2 (padded to 2) is smaller than the dilated kernel (3)",
                       window_attrs(small, dims)));
    Conv grouped{1, 4, 5, 6, 3};
    grouped.groups = 2;
    std::vector<SampleTensor> misgrouped = conv_inputs(grouped, dims, false, F32);
    misgrouped[1].shape[1] = 3;
    conv.push_back(bad(misgrouped, "weight: expected 2 input channels per group", window_attrs(grouped, dims)));
    builtins.add_samples("aten::conv" + n, conv);

    std::vector<Sample> same = with_refusals(convolutions(dims, "same"), dims, {});
    for (Sample& sample : same) {
      if (!sample.good()) sample.attrs[1].second = std::string("valid");
    }
    std::vector<Attr> bogus = window_attrs(small, dims);
    bogus[1].second = std::string("bogus");
    same.push_back(
        bad(conv_inputs(small, dims, false, F32), "padding: expected \"valid\" or \"same\", got \"bogus\"", bogus));
    builtins.add_samples("aten::conv" + n + ".padding", same);

    std::vector<Sample> transpose =
        with_refusals(convolutions(dims, "transpose", true), dims, {{"output_padding", repeat(0, dims)}}, true);
    std::vector<Attr> too_much = window_attrs(Conv{1, 4, 5, 6, 3, 2}, dims);
    too_much.emplace_back("output_padding", repeat(2, dims));
    transpose.push_back(bad(conv_inputs(Conv{1, 4, 5, 6, 3, 2}, dims, true, F32),
                            "output_padding: expected values smaller than the stride or the dilation", too_much));
    builtins.add_samples(dims == 1 ? "aten::conv_transpose1d" : "aten::conv_transpose" + n + ".input", transpose);
  }

  std::vector<Sample> convolution;
  for (size_t dims : {1, 2, 3}) {
    for (bool transposed : {false, true}) {
      const std::vector<Sample> some = convolutions(dims, "convolution", transposed);
      convolution.insert(convolution.end(), some.begin(), some.end());
    }
  }
  builtins.add_samples("aten::convolution",
                       with_refusals(convolution, 2, {{"transposed", false}, {"output_padding", repeat(0, 2)}}));

  // The fused convolution and activation: each activation on the 2-d windows.
  std::vector<Sample> fused;
  const char* activations[] = {"none", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "relu6", "silu"};
  size_t next = 0;
  for (Sample sample : convolutions(2, "conv")) {
    sample.attrs.emplace_back("activation", std::string(activations[next++ % std::size(activations)]));
    fused.push_back(std::move(sample));
  }
  fused = with_refusals(fused, 2, {});
  const Conv c{1, 4, 5, 6, 3};
  std::vector<Attr> mish = window_attrs(c, 2);
  mish.emplace_back("activation", std::string("mish"));
  fused.push_back(bad(conv_inputs(c, 2, false, F32),
                      "activation: expected one of \"none\", \"relu\", \"gelu\", \"gelu_tanh\", \"sigmoid\", \"tanh\", "
                      "\"relu6\", \"silu\", got \"mish\"",
                      mish));
  builtins.add_samples("opgraph::conv2d", fused);

  register_conv_backward_samples(builtins);

  // The convolution into the channel-blocked layout, from a plain input
  // (a blocked one must hold zeros past its channels, which random values do
  // not), in blocks of 16, 8 or every channel (channels-last) in turn; those
  // whose blocks its channels fill add a residual (a blocked input with
  // channels past its own must hold zeros there).
  std::vector<Sample> blocked;
  next = 0;
  for (const Conv& c : convs()) {
    if (c.batch < 0) continue;
    const int64_t padding_end = next % 2 ? 0 : c.padding;
    const int64_t block = next % 3 == 2 ? c.out_channels : next % 3 == 1 ? 8 : 16;
    std::vector<Attr> attrs = window_attrs(c, 2);
    attrs.emplace_back("padding_end", repeat(padding_end, 2));
    attrs.emplace_back("block", block);
    attrs.emplace_back("activation", std::string(activations[next % std::size(activations)]));
    std::vector<SampleTensor> inputs = conv_inputs(c, 2, false, F32);
    const int64_t size = (c.size + c.padding + padding_end - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
    const Shape out{c.batch, (c.out_channels + block - 1) / block, size, size, block};
    inputs.push_back(c.out_channels % block == 0 ? tensor(F32, out) : SampleTensor::absent());
    ++next;
    blocked.push_back(good(inputs, attrs));
  }
  std::vector<SampleTensor> inputs = conv_inputs(c, 2, false, F32);
  inputs.push_back(SampleTensor::absent());
  std::vector<Attr> block12 = window_attrs(c, 2);
  block12.emplace_back("block", int64_t{12});
  blocked.push_back(bad(inputs, "block: expected 8, 16 or the output's 6 channels, got 12", block12));
  std::vector<SampleTensor> in_blocks_of_12 = inputs;
  in_blocks_of_12[0] = tensor(F32, {1, 1, 5, 5, 12});
  blocked.push_back(bad(in_blocks_of_12,
                        "input: expected blocks of 8, 16 or its 4 channels, got float32[1, 1, 5, 5, 12]",
                        window_attrs(c, 2)));
  inputs.back() = tensor(F32, {1, 1, 5, 5, 16});
  blocked.push_back(bad(inputs, "residual: expected the output's float32[1, 1, 3, 3, 16], got float32[1, 1, 5, 5, 16]",
                        window_attrs(c, 2)));
  inputs = conv_inputs(c, 2, false, F64);
  inputs.push_back(SampleTensor::absent());
  blocked.push_back(bad(inputs, "input: expected float32, got float64[1, 4, 5, 5]", window_attrs(c, 2)));
  builtins.add_samples("opgraph::conv2d_nchwc", blocked);
}

}  // namespace opgraph::kernels::samples
