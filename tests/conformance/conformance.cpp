// The C++ conformance suite: every registered op on every sample it declares
// (registry/sample.h). A good sample's fast kernel must agree with the
// reference, give the same bits when run twice into the same outputs, and
// agree with itself when four threads run it at once; a bad sample's call
// must fail with an error naming the op and the sample's text. Run under
// AddressSanitizer and UBSan by `make test-asan`, which is how every kernel
// with samples runs under the sanitizers.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <set>
#include <thread>

#include "../cpp/testing.h"
#include "opgraph/opgraph.h"

namespace opgraph {
namespace {

struct Case {
  std::string op;
  size_t sample;
};

// Every op's good samples, or its bad ones.
std::vector<Case> cases(bool good) {
  std::vector<Case> cases;
  for (const std::string& name : Registry::global().list()) {
    const OpDef& op = Registry::global().get(name);
    for (size_t i = 0; i < op.samples.size(); ++i) {
      if (op.samples[i].good() == good) cases.push_back({name, i});
    }
  }
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.op + "_" + std::to_string(info.param.sample);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// Element i of t as a complex double (real tensors: imaginary part 0).
std::complex<double> element(const Tensor& t, int64_t i) {
  const void* data = t.data();
  switch (t.dtype()) {
    case DType::Float32: return static_cast<const float*>(data)[i];
    case DType::Float64: return static_cast<const double*>(data)[i];
    case DType::Int8: return static_cast<const int8_t*>(data)[i];
    case DType::UInt8: return static_cast<const uint8_t*>(data)[i];
    case DType::Int32: return static_cast<const int32_t*>(data)[i];
    case DType::Int64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::Bool: return static_cast<const bool*>(data)[i] ? 1.0 : 0.0;
    case DType::Complex64: return std::complex<double>(static_cast<const std::complex<float>*>(data)[i]);
    case DType::Complex128: return static_cast<const std::complex<double>*>(data)[i];
    case DType::Float16:
    case DType::BFloat16: break;
  }
  throw Error(detail::concat("conformance: cannot compare ", dtype_name(t.dtype())));
}

bool close(double actual, double expected, double tolerance) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

// Whether every output agrees with `expected` within the sample's tolerance
// (0: bit for bit); the first difference goes to `why`.
bool agree(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected, const Sample& sample,
           bool exact, std::string& why) {
  if (actual.size() != expected.size()) {
    why = detail::concat(actual.size(), " outputs against ", expected.size());
    return false;
  }
  for (size_t k = 0; k < actual.size(); ++k) {
    const Tensor a = actual[k].contiguous(), e = expected[k].contiguous();
    if (a.meta() != e.meta()) {
      why = detail::concat("output ", k, " is ", a.str(), ", expected ", e.str());
      return false;
    }
    const double tolerance = exact ? 0 : sample_tolerance(sample, e.dtype());
    for (int64_t i = 0; i < e.numel(); ++i) {
      const std::complex<double> x = element(a, i), y = element(e, i);
      const bool same = exact ? (x == y || (std::isnan(x.real()) && std::isnan(y.real())))
                              : close(x.real(), y.real(), tolerance) && close(x.imag(), y.imag(), tolerance);
      if (!same) {
        why = detail::concat("output ", k, " element ", i, ": ", x.real(), " against ", y.real(), " (tolerance ",
                             tolerance, ")");
        return false;
      }
    }
  }
  return true;
}

class Sampled : public ::testing::TestWithParam<Case> {
 protected:
  const OpDef& op() const { return Registry::global().get(GetParam().op); }
  const Sample& sample() const { return op().samples[GetParam().sample]; }
  std::vector<Tensor> inputs() const { return make_sample_inputs(sample(), 1234 + GetParam().sample); }
  Attrs attrs() const { return Attrs::bind(op().schema, sample_attrs(sample()), sample().list_sizes); }
};

class GoodSample : public Sampled {};
class BadSample : public Sampled {};

TEST_P(GoodSample, FastKernelMatchesTheReference) {
  const std::vector<Tensor> given = inputs();
  const std::vector<Tensor> fast = call(op(), given, attrs());
  if (!op().reference) GTEST_SKIP() << op().name() << " has no reference implementation";
  const std::vector<Tensor> reference = call(op(), given, attrs(), {.reference = true});
  std::string why;
  EXPECT_TRUE(agree(fast, reference, sample(), false, why)) << op().name() << " on " << sample_str(sample()) << ": "
                                                            << why;
}

TEST_P(GoodSample, RunsTwiceIntoTheSameOutputsBitForBit) {
  const std::vector<Tensor> given = inputs();
  const std::vector<Tensor> first = call(op(), given, attrs());
  std::vector<Tensor> again;
  if (op().data_dependent_shapes) {
    again = call(op(), given, attrs());
  } else {
    for (const Tensor& t : first) again.push_back(Tensor::empty(t.meta()));
    call_out(op(), given, again, attrs());
    call_out(op(), given, again, attrs());
  }
  std::string why;
  EXPECT_TRUE(agree(again, first, sample(), true, why)) << op().name() << " on " << sample_str(sample()) << ": "
                                                        << why;
}

TEST_P(GoodSample, FourThreadsAtOnceAgreeWithOne) {
  const std::vector<Tensor> given = inputs();
  const std::vector<Tensor> alone = call(op(), given, attrs());
  std::vector<std::vector<Tensor>> results(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      try {
        results[t] = call(op(), given, attrs());
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < results.size(); ++t) {
    ASSERT_EQ(errors[t], "") << "thread " << t;
    std::string why;
    EXPECT_TRUE(agree(results[t], alone, sample(), false, why))
        << op().name() << " on " << sample_str(sample()) << ", thread " << t << ": " << why;
  }
}

TEST_P(BadSample, IsRefusedWithItsMessage) {
  const std::string message = testing::error_of([&] {
    const std::vector<Tensor> given = inputs();
    call(op(), given, Attrs::bind(op().schema, sample_attrs(sample()), sample().list_sizes));
  });
  EXPECT_NE(message.find(op().name() + ": "), std::string::npos) << message;
  EXPECT_NE(message.find(sample().error), std::string::npos)
      << op().name() << " on " << sample_str(sample()) << ": expected an error containing '" << sample().error
      << "', got '" << message << "'";
}

INSTANTIATE_TEST_SUITE_P(Ops, GoodSample, ::testing::ValuesIn(cases(true)), case_name);
INSTANTIATE_TEST_SUITE_P(Ops, BadSample, ::testing::ValuesIn(cases(false)), case_name);

// Every op has at least 3 good and 2 bad samples, but for those listed in
// tests/conformance/ops_without_samples.txt, which may only shrink: a new op comes
// with its samples, and an op that gets them leaves the list.
TEST(ConformanceCoverage, EveryOpHasSamplesButTheListedOnes) {
  std::set<std::string> listed;
  std::ifstream file(OPGRAPH_OPS_WITHOUT_SAMPLES);
  ASSERT_TRUE(file) << OPGRAPH_OPS_WITHOUT_SAMPLES;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty() && line[0] != '#') listed.insert(line);
  }
  std::string missing, covered;
  for (const std::string& name : Registry::global().list()) {
    if (name.rfind("aten::", 0) != 0 && name.rfind("opgraph::", 0) != 0) continue;  // built-in ops only
    const OpDef& op = Registry::global().get(name);
    size_t good = 0;
    for (const Sample& sample : op.samples) good += sample.good();
    const bool enough = good >= 3 && op.samples.size() - good >= 2;
    if (!enough && !listed.count(name)) missing += "\n  " + name;
    if (enough && listed.count(name)) covered += "\n  " + name;
  }
  EXPECT_EQ(missing, "") << "ops with fewer than 3 good and 2 bad samples:" << missing;
  EXPECT_EQ(covered, "") << "ops with samples now; remove them from " << OPGRAPH_OPS_WITHOUT_SAMPLES << ":"
                         << covered;
}

}  // namespace
}  // namespace opgraph
