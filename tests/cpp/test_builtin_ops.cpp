// The built-in operator set as the registry receives it: one batch, in
// which neither the op families' order nor the sample tables' matters.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/builtin.h"
#include "kernels/define.h"
#include "opgraph/registry/registry.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

std::vector<TensorMeta> same_shape(std::span<const TensorMeta* const> inputs, const Attrs&) { return {*inputs[0]}; }

void copy_kernel(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs, const Attrs&) {
  std::copy_n(inputs[0].data_ptr<float>(), inputs[0].numel(), outputs[0].data_ptr<float>());
}

kernels::OpSpec copy_op(const char* schema, const char* backward = nullptr) {
  return {.schema = schema, .shape = same_shape, .cpu = copy_kernel, .reference = copy_kernel, .backward = backward};
}

Sample one_sample() {
  Sample sample;
  sample.inputs = {SampleTensor::of(DType::Float32, {3})};
  return sample;
}

TEST(BuiltinOps, EveryBuiltinAddsInReverseOrder) {
  std::vector<OpDef> ops = kernels::builtin_ops();
  std::reverse(ops.begin(), ops.end());
  Registry registry;
  registry.add(std::move(ops));
  // The global registry's built-ins: other tests of this program may have
  // added packages' and their own ops to it before this one runs.
  std::vector<std::string> global_builtins = Registry::global().list();
  std::erase_if(global_builtins,
                [](const std::string& name) { return !Registry::global().get(name).source.starts_with("built-in"); });
  EXPECT_EQ(registry.list(), global_builtins);
  for (const std::string& name : registry.list()) {
    const OpDef& op = registry.get(name);
    if (!op.backward.empty()) {
      EXPECT_TRUE(registry.contains(op.backward)) << name << " -> " << op.backward;
    }
    EXPECT_EQ(op.samples.size(), Registry::global().get(name).samples.size()) << name;
  }
}

TEST(BuiltinOps, SamplesJoinTheirOpWhereverEitherComes) {
  kernels::BuiltinOps builtins;
  builtins.add_samples("t::copy", {one_sample()});
  kernels::define(builtins, copy_op("t::copy(Tensor self) -> Tensor"));
  builtins.add_samples("t::copy", {one_sample(), one_sample()});
  EXPECT_EQ(builtins.samples("t::copy").size(), 3u);
  std::vector<OpDef> ops = std::move(builtins).take();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].samples.size(), 3u);
}

TEST(BuiltinOps, SamplesForAnUndefinedOpAreAnError) {
  kernels::BuiltinOps builtins;
  kernels::define(builtins, copy_op("t::copy(Tensor self) -> Tensor"));
  builtins.add_samples("t::cpoy", {one_sample()});
  const std::string message = error_of([&] { std::move(builtins).take(); });
  EXPECT_NE(message.find("samples for built-in op 't::cpoy': no such built-in op is defined"), std::string::npos)
      << message;
  EXPECT_NE(error_of([&] { kernels::BuiltinOps().samples("t::copy"); }).find("'t::copy' has no samples"),
            std::string::npos);
}

TEST(BuiltinOps, DanglingBackwardIsReportedWithBothNames) {
  kernels::BuiltinOps builtins;
  kernels::define(builtins, copy_op("t::copy(Tensor self) -> Tensor", "t::copy_backward"));
  Registry registry;
  const std::string message = error_of([&] { registry.add(std::move(builtins).take()); });
  EXPECT_NE(message.find("t::copy: its backward op 't::copy_backward' is not declared (built-in, "
                         "test_builtin_ops.cpp:"),
            std::string::npos)
      << message;
  EXPECT_TRUE(registry.list().empty());
}

}  // namespace
}  // namespace opgraph
