// The convolutions' parameters, read and checked from an op's attributes,
// and the shape of their output (shape/conv.h).
#include "kernels/shape/conv.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/shape/checked.h"

namespace opgraph::kernels {
namespace {

// Spatial parameters come as lists of one value per dimension or one value
// for all.
std::vector<int64_t> per_dimension(Ints values, int64_t spatial, const char* name, int64_t lowest) {
  OPGRAPH_CHECK(values.size() == 1 || static_cast<int64_t>(values.size()) == spatial, name, ": expected 1 or ", spatial,
                " values, got ", shape_str(values));
  std::vector<int64_t> out(spatial, values[0]);
  if (values.size() > 1) out.assign(values.begin(), values.end());
  for (int64_t v : out)
    OPGRAPH_CHECK(v >= lowest, name, ": expected values of at least ", lowest, ", got ", shape_str(values));
  return out;
}

// The extent of the taps along one dim: dilation * (kernel - 1) + 1.
int64_t dilated_span(int64_t kernel, int64_t dilation) {
  return checked_add(checked_mul(dilation, kernel - 1, "dilation"), 1, "dilation");
}

// Output shape of a batched convolution; checks every operand against the others.
Shape conv_output(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias, const ConvParams& p) {
  const int64_t rank = p.spatial + 2;
  OPGRAPH_CHECK(input.dtype == DType::Float32 || input.dtype == DType::Float64,
                "input: expected float32 or float64, got ", input.str());
  OPGRAPH_CHECK(weight.dtype == input.dtype, "weight: expected ", dtype_name(input.dtype), " like input, got ",
                weight.str());
  OPGRAPH_CHECK(input.dim() == rank, "input: expected rank ", rank, " (batch, channels, spatial...), got ",
                input.str());
  OPGRAPH_CHECK(weight.dim() == rank, "weight: expected rank ", rank,
                p.transposed ? " (in_channels, out_channels/groups, kernel...)"
                             : " (out_channels, in_channels/groups, kernel...)",
                ", got ", weight.str());
  const int64_t channels = input.shape[1];
  const int64_t out_channels = p.transposed ? checked_mul(weight.shape[1], p.groups, "groups") : weight.shape[0];
  OPGRAPH_CHECK(channels % p.groups == 0 && out_channels % p.groups == 0, "groups: ", p.groups,
                " must divide the input channels (", channels, ") and output channels (", out_channels, ")");
  if (p.transposed) {
    OPGRAPH_CHECK(weight.shape[0] == channels, "weight: expected ", channels, " input channels (input ", input.str(),
                  ") in a transposed convolution's weight, got ", weight.str());
  } else {
    OPGRAPH_CHECK(checked_mul(weight.shape[1], p.groups, "groups") == channels, "weight: expected ",
                  channels / p.groups, " input channels per group (input ", input.str(), ", groups ", p.groups,
                  "), got ", weight.str());
  }
  if (bias) {
    OPGRAPH_CHECK(bias->dtype == input.dtype && bias->dim() == 1 && bias->shape[0] == out_channels, "bias: expected ",
                  dtype_name(input.dtype), "[", out_channels, "], got ", bias->str());
  }
  Shape out{input.shape[0], out_channels};
  for (int64_t d = 0; d < p.spatial; ++d) {
    const int64_t span = dilated_span(weight.shape[2 + d], p.dilation[d]), size = input.shape[2 + d];
    const int64_t padding = checked_add(p.padding[d], p.padding_end[d], "padding");
    if (p.transposed) {
      // The convolution from the output back to the input reads all of it.
      const int64_t extent = checked_add(checked_mul(size - 1, p.stride[d], "stride"), span - padding, "padding");
      OPGRAPH_CHECK(size > 0 && extent > 0, "input: spatial size ", size, " gives an output of size ", extent,
                    " (stride ", p.stride[d], ", padding ", p.padding[d], ", dilated kernel ", span,
                    "); expected at least 1");
      out.push_back(extent);
    } else {
      const int64_t padded = checked_add(size, padding, "padding");
      OPGRAPH_CHECK(padded >= span, "input: spatial size ", size, " (padded to ", padded,
                    ") is smaller than the dilated kernel (", span, ")");
      out.push_back((padded - span) / p.stride[d] + 1);
    }
  }
  return out;
}

// Reads stride, dilation and groups, and takes `padding` (one value per dim
// or one for all) as the padding on both sides.
ConvParams params_with_padding(Ints stride, Ints padding, Ints dilation, int64_t groups, int64_t spatial) {
  ConvParams p;
  p.spatial = spatial;
  p.stride = per_dimension(stride, spatial, "stride", 1);
  p.padding = per_dimension(padding, spatial, "padding", 0);
  p.padding_end = p.padding;
  p.dilation = per_dimension(dilation, spatial, "dilation", 1);
  p.groups = groups;
  OPGRAPH_CHECK(p.groups >= 1, "groups: expected at least 1, got ", p.groups);
  return p;
}

// Makes `p` transposed with the output_padding attribute, which ATen takes
// below the stride or the dilation (only then does it say where the output
// ends that the input alone leaves open).
void make_transposed(ConvParams& p, Ints output_padding_given) {
  const std::vector<int64_t> output_padding = per_dimension(output_padding_given, p.spatial, "output_padding", 0);
  for (int64_t d = 0; d < p.spatial; ++d) {
    OPGRAPH_CHECK(output_padding[d] < p.stride[d] || output_padding[d] < p.dilation[d],
                  "output_padding: expected values smaller than the stride or the dilation in each dim, got ",
                  shape_str(output_padding), " (stride ", shape_str(p.stride), ", dilation ", shape_str(p.dilation),
                  ")");
    p.padding_end[d] -= output_padding[d];
  }
  p.transposed = true;
}

}  // namespace

ConvParams conv_params(Ints stride, Ints padding, Ints dilation, int64_t groups, int64_t spatial) {
  return params_with_padding(stride, padding, dilation, groups, spatial);
}

// "same" pads the total the taps overhang, d * (k - 1), half before the input
// and the rest (one more when odd) after it, as ATen does.
ConvParams str_padding_conv_params(Ints stride, std::string_view padding, Ints dilation, int64_t groups,
                                   int64_t spatial, const Shape& weight) {
  const int64_t zero = 0;
  ConvParams p = params_with_padding(stride, {&zero, 1}, dilation, groups, spatial);
  if (padding == "valid") return p;
  OPGRAPH_CHECK(padding == "same", "padding: expected \"valid\" or \"same\", got \"", padding, "\"");
  OPGRAPH_CHECK(std::all_of(p.stride.begin(), p.stride.end(), [](int64_t s) { return s == 1; }),
                "padding: \"same\" is not supported for strided convolutions (stride ", shape_str(p.stride), ")");
  if (static_cast<int64_t>(weight.size()) != spatial + 2) return p;  // conv_output reports the weight's rank
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t total = checked_mul(p.dilation[d], std::max<int64_t>(weight[2 + d] - 1, 0), "dilation");
    p.padding[d] = total / 2;
    p.padding_end[d] = total - total / 2;
  }
  return p;
}

ConvParams transposed_conv_params(Ints stride, Ints padding, Ints output_padding, int64_t groups, Ints dilation,
                                  int64_t spatial) {
  ConvParams p = conv_params(stride, padding, dilation, groups, spatial);
  make_transposed(p, output_padding);
  return p;
}

ConvParams convolution_params(Ints stride, Ints padding, Ints dilation, bool transposed, Ints output_padding,
                              int64_t groups, const TensorMeta& weight) {
  OPGRAPH_CHECK(weight.dim() >= 3 && weight.dim() <= 5,
                "weight: expected rank 3, 4 or 5 (a 1-D, 2-D or 3-D convolution), got ", weight.str());
  ConvParams p = conv_params(stride, padding, dilation, groups, weight.dim() - 2);
  if (transposed) make_transposed(p, output_padding);
  return p;
}

TensorMeta conv_output_meta(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias,
                            const ConvParams& p) {
  const int64_t rank = p.spatial + 2;
  Shape out = conv_output(batched(input, rank), weight, bias, p);
  if (input.dim() == rank - 1) out.erase(out.begin());
  return {input.dtype, out};
}

Tensor batched(const Tensor& t, int64_t rank) {
  if (t.dim() == rank) return t;
  Shape shape = t.shape();
  shape.insert(shape.begin(), 1);
  return t.view(shape);
}

TensorMeta batched(const TensorMeta& meta, int64_t rank) {
  if (meta.dim() != rank - 1) return meta;
  Shape shape = meta.shape;
  shape.insert(shape.begin(), 1);
  return {meta.dtype, shape};
}

}  // namespace opgraph::kernels
