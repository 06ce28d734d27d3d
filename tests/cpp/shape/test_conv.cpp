// Convolution geometry (kernels/shape/conv.h): parameters, output shapes as
// PyTorch gives them, and the taps the plain loops walk.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/shape/conv.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

using testing::error_of;
using V = std::vector<int64_t>;

TEST(ConvGeometry, OutputShapesAsPyTorch) {
  // (in + 2p - d(k - 1) - 1) / s + 1 per spatial dim.
  const ConvParams p = conv_params(V{2, 1}, V{1, 0}, V{1, 2}, 1, 2);
  EXPECT_EQ(conv_output_meta({DType::Float32, {2, 3, 9, 10}}, {DType::Float32, {4, 3, 3, 3}}, nullptr, p).shape,
            (Shape{2, 4, 5, 6}));
  // Unbatched input: the output is unbatched too.
  EXPECT_EQ(conv_output_meta({DType::Float32, {3, 9}}, {DType::Float32, {4, 3, 3}}, nullptr,
                             conv_params(V{1}, V{0}, V{1}, 1, 1))
                .shape,
            (Shape{4, 7}));
  // Transposed: (in - 1)s - 2p + d(k - 1) + output_padding + 1, weight [in, out / groups, k].
  const ConvParams t = transposed_conv_params(V{2}, V{1}, V{1}, 1, V{1}, 1);
  EXPECT_EQ(conv_output_meta({DType::Float32, {1, 3, 5}}, {DType::Float32, {3, 2, 3}}, nullptr, t).shape,
            (Shape{1, 2, 10}));
  // "same" keeps the size; an even kernel pads one more after.
  const ConvParams same = str_padding_conv_params(V{1}, "same", V{1}, 1, 1, Shape{4, 3, 4});
  EXPECT_EQ(same.padding, V{1});
  EXPECT_EQ(same.padding_end, V{2});
  EXPECT_EQ(conv_output_meta({DType::Float32, {1, 3, 7}}, {DType::Float32, {4, 3, 4}}, nullptr, same).shape,
            (Shape{1, 4, 7}));
}

TEST(ConvGeometry, BadParametersNameTheArgument) {
  EXPECT_NE(error_of([] { conv_params(V{1, 1, 1}, V{0}, V{1}, 1, 2); }).find("stride: expected 1 or 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { conv_params(V{0}, V{0}, V{1}, 1, 2); }).find("stride: expected values of at least 1"),
            std::string::npos);
  const ConvParams p = conv_params(V{1}, V{0}, V{1}, 2, 2);
  EXPECT_NE(error_of([&] {
              conv_output_meta({DType::Float32, {1, 3, 5, 5}}, {DType::Float32, {4, 1, 3, 3}}, nullptr, p);
            }).find("groups: 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              conv_output_meta({DType::Float32, {1, 2, 2, 2}}, {DType::Float32, {4, 1, 3, 3}}, nullptr,
                               conv_params(V{1}, V{0}, V{1}, 2, 2));
            }).find("input: spatial size 2"),
            std::string::npos);
}

TEST(ConvGeometry, TapsAreThoseInsideTheInput) {
  // One channel, 3-wide input, kernel 3, padding 1: the edge outputs read 2 taps, the middle one 3.
  const ConvParams p = conv_params(V{1}, V{1}, V{1}, 1, 1);
  std::vector<int> taps(3, 0);
  std::vector<std::vector<int64_t>> inputs(3);
  for_each_tap(Shape{1, 1, 3}, Shape{1, 1, 3}, Shape{1, 1, 3}, p, [&](int64_t out, int64_t in, int64_t) {
    ++taps[out];
    inputs[out].push_back(in);
  });
  EXPECT_EQ(taps, (std::vector<int>{2, 3, 2}));
  EXPECT_EQ(inputs[0], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(inputs[2], (std::vector<int64_t>{1, 2}));
}

}  // namespace
}  // namespace opgraph::kernels
