// Samples of the random ops (random.cpp): their deterministic corners, which
// the kernel and its reference, twice and from several threads, must agree
// on: inference-mode dropout (the identity), native_dropout with p = 0 (every
// element kept), p = 1 (none) and train=False (the identity), empty random
// tensors and the permutations of 0 and 1 elements.
// tests/python/test_aten_random.py checks their distributions. Probabilities
// outside [0, 1], negative sizes and lengths, dtypes a distribution has no
// values in and training-mode dropout, which opgraph does not run, are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

std::vector<Sample> dropout_inputs(const std::vector<Attr>& attrs) {
  return retyped({F32, F64}, {one({2, 3}, attrs), one({}, attrs), one({0, 4}, attrs),
                              one({4, 5}, attrs, Layout::Transposed), one({3, 6}, attrs, Layout::Strided)});
}

// Empty tensors of each float dtype (None: the default); a random tensor of any other size differs per call.
std::vector<Sample> empty_random() {
  std::vector<Sample> table;
  for (const auto& [size, dtype] :
       std::vector<std::pair<Shape, AttrValue>>{{{0}, std::monostate{}}, {{2, 0}, F32}, {{0, 5, 1}, F64}}) {
    table.push_back(good({}, {{"size", size}, {"dtype", dtype}}));
  }
  table.push_back(bad({}, "size: expected non-negative extents, got [2, -3]", {{"size", Shape{2, -3}}}));
  table.push_back(bad({}, "dtype: expected float32 or float64, got int64", {{"size", Shape{2}}, {"dtype", I64}}));
  table.push_back(
      bad({}, "device: expected None or cpu, got \"cuda\"", {{"size", Shape{2}}, {"device", std::string("cuda")}}));
  return table;
}

}  // namespace

void register_random_samples(BuiltinOps& builtins) {
  const std::string out_of_range = "p: expected a probability in [0, 1], got 1.5";
  builtins.add_samples(
      "aten::dropout",
      with(dropout_inputs({{"p", 0.5}, {"train", false}}),
           {bad({tensor(F32, {3})}, out_of_range, {{"p", 1.5}, {"train", false}}),
            bad({tensor(F32, {3})}, "expected train=False, got train=True", {{"p", 0.5}, {"train", true}}),
            bad({tensor(I64, {3})}, "input: expected float32 or float64, got int64", {{"p", 0.5}, {"train", false}})}));

  std::vector<Sample> native = dropout_inputs({{"p", 0.0}, {"train", true}});
  for (const Sample& sample : dropout_inputs({{"p", 1.0}, {"train", true}})) native.push_back(sample);
  for (const Sample& sample : dropout_inputs({{"p", 0.5}, {"train", false}})) native.push_back(sample);
  builtins.add_samples("aten::native_dropout",
                       with(native, {bad({tensor(F32, {3})}, "p: expected a probability in [0, 1], got -0.5",
                                         {{"p", -0.5}, {"train", true}}),
                                     bad({tensor(F32, {3})}, out_of_range, {{"p", 1.5}, {"train", false}})}));

  builtins.add_samples("aten::rand", empty_random());
  builtins.add_samples("aten::randn", empty_random());

  std::vector<Sample> randperm;
  for (int64_t n : {0, 1}) {
    for (AttrValue dtype : {AttrValue{}, AttrValue{I32}, AttrValue{F32}}) {
      randperm.push_back(good({}, {{"n", n}, {"dtype", dtype}}));
    }
  }
  builtins.add_samples(
      "aten::randperm",
      with(randperm, {bad({}, "n: expected a non-negative length, got -1", {{"n", int64_t{-1}}}),
                      bad({}, "dtype: expected a numeric dtype, got bool", {{"n", int64_t{3}}, {"dtype", B}})}));
}

}  // namespace opgraph::kernels::samples
