#include "opgraph/registry/conformance.h"

#include <cmath>
#include <complex>
#include <thread>

namespace opgraph {
namespace {

constexpr int kThreads = 4;

// Element i of a contiguous tensor as a complex double (real tensors: imaginary part 0).
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

bool same_bits(std::complex<double> a, std::complex<double> b) {
  auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  return same(a.real(), b.real()) && same(a.imag(), b.imag());
}

// Why `actual` disagrees with `expected` (within the sample's tolerance, or
// bit for bit when `exact`); empty when they agree.
std::string disagreement(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected, const Sample& sample,
                         bool exact) {
  if (actual.size() != expected.size()) return detail::concat(actual.size(), " outputs against ", expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    const Tensor a = actual[k].contiguous(), e = expected[k].contiguous();
    if (a.meta() != e.meta()) return detail::concat("output ", k, " is ", a.str(), ", expected ", e.str());
    const double tolerance = exact ? 0 : sample_tolerance(sample, e.dtype());
    for (int64_t i = 0; i < e.numel(); ++i) {
      const std::complex<double> x = element(a, i), y = element(e, i);
      const bool agree =
          exact ? same_bits(x, y) : close(x.real(), y.real(), tolerance) && close(x.imag(), y.imag(), tolerance);
      if (!agree) {
        return detail::concat("output ", k, " element ", i, ": ", x.real(), " against ", y.real(), " (tolerance ",
                              tolerance, ")");
      }
    }
  }
  return {};
}

// Runs fn, turning what it throws into a failure message.
template <typename Fn>
std::string failure_of(Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

std::string twice_into_the_same_outputs(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                                        const Sample& sample, const std::vector<Tensor>& first) {
  std::vector<Tensor> again;
  if (op.data_dependent_shapes) {
    again = call(op, inputs, attrs);
  } else {
    for (const Tensor& t : first) again.push_back(Tensor::empty(t.meta()));
    call_out(op, inputs, again, attrs);
    call_out(op, inputs, again, attrs);
  }
  return disagreement(again, first, sample, /*exact=*/true);
}

std::string threads_at_once(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs, const Sample& sample,
                            const std::vector<Tensor>& alone) {
  std::vector<std::vector<Tensor>> results(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        results[t] = call(op, inputs, attrs);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    if (!errors[t].empty()) return detail::concat("thread ", t, " threw: ", errors[t]);
    if (std::string why = disagreement(results[t], alone, sample, false); !why.empty()) {
      return detail::concat("thread ", t, ": ", why);
    }
  }
  return {};
}

// The fast kernel and the reference, each writing its output over a copy of
// input `in_place_input`, which it reads as that input.
std::string in_place(const OpDef& op, std::vector<Tensor> inputs, const Attrs& attrs, const Sample& sample,
                     const std::vector<Tensor>& apart) {
  const size_t k = *op.in_place_input;
  const Tensor given = inputs[k];
  for (bool reference : {false, true}) {
    if (reference && !op.reference) continue;
    inputs[k] = given.clone();
    call_out(op, inputs, std::span<const Tensor>(&inputs[k], 1), attrs, {.reference = reference});
    if (std::string why = disagreement({inputs[k]}, apart, sample, false); !why.empty()) {
      return detail::concat(reference ? "the reference: " : "", why);
    }
  }
  return {};
}

std::string expected_error(const OpDef& op, const Sample& sample, uint64_t seed) {
  try {
    const std::vector<Tensor> inputs = make_sample_inputs(sample, seed);
    call(op, inputs, Attrs::bind(op.schema, sample_attrs(sample), sample.list_sizes));
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.find(op.name() + ": ") != std::string::npos && message.find(sample.error) != std::string::npos) {
      return {};
    }
    return detail::concat("expected an error containing '", sample.error, "', got '", message, "'");
  }
  return detail::concat("expected an error containing '", sample.error, "', the call succeeded");
}

}  // namespace

const char* check_name(Check check) {
  switch (check) {
    case Check::Reference: return "reference";
    case Check::Twice: return "twice";
    case Check::Threads: return "threads";
    case Check::InPlace: return "in place";
    case Check::Error: return "error";
  }
  return "?";
}

std::vector<CheckResult> check_samples(const OpDef& op) {
  std::vector<CheckResult> results;
  for (size_t s = 0; s < op.samples.size(); ++s) {
    const Sample& sample = op.samples[s];
    const uint64_t seed = kSampleSeed + s;
    if (!sample.good()) {
      results.push_back({Check::Error, s, expected_error(op, sample, seed)});
      continue;
    }
    std::vector<Tensor> inputs, fast;
    Attrs attrs;
    const std::string setup = failure_of([&] {
      inputs = make_sample_inputs(sample, seed);
      attrs = Attrs::bind(op.schema, sample_attrs(sample), sample.list_sizes);
      fast = call(op, inputs, attrs);
      return std::string();
    });
    if (!setup.empty()) {
      for (Check check : {Check::Reference, Check::Twice, Check::Threads}) results.push_back({check, s, setup});
      continue;
    }
    if (op.reference) {
      results.push_back({Check::Reference, s, failure_of([&] {
                           return disagreement(fast, call(op, inputs, attrs, {.reference = true}), sample, false);
                         })});
    } else {
      results.push_back({Check::Reference, s, {}, /*skipped=*/true});
    }
    results.push_back(
        {Check::Twice, s, failure_of([&] { return twice_into_the_same_outputs(op, inputs, attrs, sample, fast); })});
    results.push_back(
        {Check::Threads, s, failure_of([&] { return threads_at_once(op, inputs, attrs, sample, fast); })});
    if (op.in_place_input && inputs.at(*op.in_place_input).defined()) {
      results.push_back({Check::InPlace, s, failure_of([&] { return in_place(op, inputs, attrs, sample, fast); })});
    }
  }
  return results;
}

}  // namespace opgraph
