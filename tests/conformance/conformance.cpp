// The C++ conformance suite: every registered op that declares samples,
// through the native checks of registry/conformance.h (the fast kernel
// against the reference, twice into the same outputs, four threads at once,
// every bad sample's error). `make test-asan` runs it under AddressSanitizer
// and UBSan, which is how every kernel with samples runs under the sanitizers.
#include <gtest/gtest.h>

#include "opgraph/opgraph.h"

namespace opgraph {
namespace {

std::vector<std::string> sampled_ops() {
  std::vector<std::string> names;
  for (const std::string& name : Registry::global().list()) {
    if (!Registry::global().get(name).samples.empty()) names.push_back(name);
  }
  return names;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class Samples : public ::testing::TestWithParam<std::string> {};

TEST_P(Samples, PassEveryCheck) {
  const OpDef& op = Registry::global().get(GetParam());
  for (const CheckResult& result : check_samples(op)) {
    EXPECT_EQ(result.failure, "") << op.name() << ", " << check_name(result.check) << " check, sample " << result.sample
                                  << " (" << sample_str(op.samples[result.sample]) << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Samples, ::testing::ValuesIn(sampled_ops()), test_name);

// Every built-in op has at least 3 good and 2 bad samples: a new op comes with its samples.
TEST(Coverage, EveryBuiltInOpHasSamples) {
  std::string missing;
  for (const std::string& name : Registry::global().list()) {
    if (name.rfind("aten::", 0) != 0 && name.rfind("opgraph::", 0) != 0) continue;
    const OpDef& op = Registry::global().get(name);
    size_t good = 0;
    for (const Sample& sample : op.samples) good += sample.good();
    if (good < 3 || op.samples.size() - good < 2) missing += "\n  " + name;
  }
  EXPECT_EQ(missing, "") << "ops with fewer than 3 good and 2 bad samples (src/kernels/samples/):" << missing;
}

}  // namespace
}  // namespace opgraph
