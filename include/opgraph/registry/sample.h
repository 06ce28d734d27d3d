// Sample inputs an op declares with its registration, as PyTorch's OpInfo
// sample generators do: the conformance suites (tests/cpp/test_conformance.cpp
// and `opgraph test-package`) run every op on every sample and hold the fast
// kernel to the reference, to itself (determinism, threads) and to every
// front end; a bad sample names the error text its call must give.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "opgraph/core/tensor.h"
#include "opgraph/registry/attrs.h"

namespace opgraph {

// One flat tensor input of a sample: its type, how it is laid out in memory,
// and the range its values are drawn from.
struct SampleTensor {
  enum class Layout : uint8_t {
    Contiguous,
    Transposed,  // the transpose of a contiguous buffer (rank >= 2): the last two dims' strides swapped
    Strided,     // every other element of a buffer twice as long in the last dim
  };
  DType dtype = DType::Float32;
  Shape shape;
  Layout layout = Layout::Contiguous;
  bool none = false;  // a `Tensor?` given as None
  // Values uniform in [low, high] (integers: the integers in it; bool: either).
  double low = -2, high = 2;

  static SampleTensor of(DType dtype, Shape shape, Layout layout = Layout::Contiguous) {
    return {dtype, std::move(shape), layout};
  }
  static SampleTensor absent() { return {DType::Float32, {}, Layout::Contiguous, true}; }
  SampleTensor& in(double lo, double hi) {
    low = lo, high = hi;
    return *this;
  }
};

struct Sample {
  std::vector<SampleTensor> inputs;  // flat, in schema order (see registry.h)
  std::vector<std::pair<std::string, AttrValue>> attrs;
  std::vector<size_t> list_sizes;  // for ops with more than one Tensor[]
  // Largest |fast - reference| allowed, relative to max(1, |reference|);
  // 0 takes the dtype's default (1e-5 for float32, 1e-10 for float64, exact otherwise).
  double tolerance = 0;
  // A bad sample: the text the call's error must contain (after the op's name).
  std::string error;

  bool good() const { return error.empty(); }
};

// The sample's input tensors, values drawn from `seed` (the same seed gives the same values).
std::vector<Tensor> make_sample_inputs(const Sample& sample, uint64_t seed);
// The sample's attributes as Attrs::bind takes them.
NamedAttrs sample_attrs(const Sample& sample);
// The tolerance a good sample's outputs of `dtype` are compared with.
double sample_tolerance(const Sample& sample, DType dtype);
// "float32[2, 3] (transposed), None; dim=1": what a failure message names.
std::string sample_str(const Sample& sample);

}  // namespace opgraph
