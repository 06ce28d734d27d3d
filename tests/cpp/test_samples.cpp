// Sample inputs (registry/sample.h): their layouts, value ranges and seeds,
// and the errors for what cannot be made.
#include <gtest/gtest.h>

#include <cstring>

#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;
using Layout = SampleTensor::Layout;

// A good sample of these inputs and no attributes.
Sample sample_of(std::vector<SampleTensor> inputs) {
  Sample sample;
  sample.inputs = std::move(inputs);
  return sample;
}

TEST(Samples, LayoutsAreViewsWithTheirStrides) {
  const Sample sample = sample_of({SampleTensor::of(DType::Float32, {4, 6}, Layout::Transposed),
                                   SampleTensor::of(DType::Float64, {2, 3}, Layout::Strided), SampleTensor::absent()});
  const std::vector<Tensor> inputs = make_sample_inputs(sample, 7);
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].shape(), (Shape{4, 6}));
  EXPECT_EQ(inputs[0].strides(), (Strides{1, 4}));
  EXPECT_EQ(inputs[1].strides(), (Strides{6, 2}));
  EXPECT_FALSE(inputs[2].defined());
  EXPECT_EQ(sample_str(sample), "float32[4, 6] (transposed), float64[2, 3] (strided), None");
}

TEST(Samples, ValuesStayInTheirRangeAndFollowTheSeed) {
  const Sample sample = sample_of({SampleTensor::of(DType::Int64, {200}).in(3, 5)});
  const Tensor values = make_sample_inputs(sample, 1)[0];
  for (int64_t i = 0; i < values.numel(); ++i) {
    EXPECT_GE(values.data_ptr<int64_t>()[i], 3);
    EXPECT_LE(values.data_ptr<int64_t>()[i], 5);
  }
  const Tensor again = make_sample_inputs(sample, 1)[0];
  EXPECT_EQ(std::memcmp(values.data(), again.data(), values.nbytes()), 0);
}

TEST(Samples, DtypesWithoutValuesAreAnError) {
  const Sample sample = sample_of({SampleTensor::of(DType::BFloat16, {2})});
  EXPECT_NE(error_of([&] { make_sample_inputs(sample, 0); }).find("make_sample_inputs: no values for bfloat16"),
            std::string::npos);
}

TEST(Samples, AddingToAnUnknownOpIsAnError) {
  const std::string message = error_of([] { Registry::global().add_samples("aten::no_such_op", {}); });
  EXPECT_NE(message.find("cannot add samples for op 'aten::no_such_op': no such op is declared"), std::string::npos)
      << message;
}

TEST(Samples, DefaultTolerancesFollowTheDtype) {
  Sample sample;
  EXPECT_EQ(sample_tolerance(sample, DType::Float32), 1e-5);
  EXPECT_EQ(sample_tolerance(sample, DType::Complex128), 1e-10);
  EXPECT_EQ(sample_tolerance(sample, DType::Int64), 0);
  sample.tolerance = 1e-3;
  EXPECT_EQ(sample_tolerance(sample, DType::Float64), 1e-3);
}

}  // namespace
}  // namespace opgraph
