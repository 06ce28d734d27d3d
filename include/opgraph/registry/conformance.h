// The native half of the conformance suites: an op's declared samples
// (sample.h) run through its kernels. A good sample's fast kernel must agree
// with the reference (where the op has one), give the same bits when run
// twice into the same outputs, and agree with itself when four threads run it
// at once and, for an op that may write its output over an input
// (OpDef::in_place_input), when it does; a bad sample's call must fail with an error naming the op and
// containing the sample's text. The C++ suite (tests/conformance), `opgraph
// test-package` and opgraph.testing all run these.
#pragma once

#include <string>
#include <vector>

#include "opgraph/registry/registry.h"

namespace opgraph {

enum class Check { Reference, Twice, Threads, InPlace, Error };

struct CheckResult {
  Check check;
  size_t sample;         // index into OpDef::samples
  std::string failure;   // empty when it passed
  bool skipped = false;  // Reference on an op without a reference implementation
};

const char* check_name(Check check);

// Sample s of an op draws its values from seed kSampleSeed + s, in every suite.
inline constexpr uint64_t kSampleSeed = 1234;  // "reference", "twice", "threads", "error"

// Every check of every sample of `op`, in sample order.
std::vector<CheckResult> check_samples(const OpDef& op);

}  // namespace opgraph
