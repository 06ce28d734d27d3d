// Samples of the ops that read a tensor's metadata or its one value
// (sym_* and _local_scalar_dense, as exported graphs call them), of the
// runtime assertions exported graphs carry, and of the
// channel-blocked layout's conversion (conv_nchwc.cpp): 0-d, empty,
// transposed and strided tensors in every dtype; dims out of range, tensors
// of more than one value, memory formats opgraph does not keep and blocked
// shapes that do not hold the channels are refused, as are failed assertions,
// calls without a tensor and attributes an op does not have.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

// A tensor of each kind of layout, with `attrs`.
std::vector<Sample> layouts(const std::vector<Attr>& attrs) {
  return any_dtype({one({2, 3}, attrs), one({4, 5}, attrs, Layout::Transposed), one({3, 6}, attrs, Layout::Strided),
                    one({0, 2}, attrs)});
}

const std::string out_of_range = "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2";

}  // namespace

void register_data_dependent_samples(BuiltinOps& builtins) {
  for (const char* op : {"aten::sym_size.int", "aten::sym_stride.int"}) {
    std::vector<Sample> table = layouts({{"dim", int64_t{1}}});
    const std::vector<Sample> first = layouts({{"dim", int64_t{-2}}});
    table.insert(table.end(), first.begin(), first.end());
    table.push_back(bad({tensor(F32, {2, 3})}, out_of_range, {{"dim", int64_t{2}}}));
    table.push_back(bad({tensor(F32, {2, 3})}, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got -3",
                        {{"dim", int64_t{-3}}}));
    builtins.add_samples(op, table);
  }
  // These take every tensor: what they refuse is a call without one, or with an attribute they do not have.
  add_to_each(
      builtins,
      {"aten::sym_numel", "aten::sym_storage_offset", "aten::alias", "aten::detach", "aten::detach_",
       "aten::lift_fresh_copy"},
      with(layouts({}),
           {one({}, {}), bad({SampleTensor::absent()}, "input 'self' is required but was not given"),
            bad({tensor(F32, {2})}, "unexpected attribute 'dim'; its attributes are: (none)", {{"dim", int64_t{0}}})}));
  builtins.add_samples(
      "aten::sym_is_contiguous",
      with(layouts({}),
           {bad({tensor(F32, {2, 3})},
                "memory_format: opgraph tensors are row-major (contiguous_format), got channels_last",
                {{"memory_format", std::string("channels_last")}}),
            bad({tensor(F32, {2, 3})}, "got channels_last_3d", {{"memory_format", std::string("channels_last_3d")}})}));

  builtins.add_samples("aten::_local_scalar_dense",
                       with(any_dtype({one({}, {}), one({1}, {}), one({1, 1}, {}, Layout::Transposed)}),
                            {bad({tensor(F32, {3})}, "self: expected a tensor with one element, got float32[3]"),
                             bad({tensor(F32, {0})}, "self: expected a tensor with one element, got float32[0]")}));

  const std::string msg = "the size must be positive";
  builtins.add_samples(
      "aten::_assert_scalar",
      {good({}, {{"self", int64_t{1}}, {"assert_msg", msg}}), good({}, {{"self", 2.5}, {"assert_msg", msg}}),
       good({}, {{"self", int64_t{-3}}, {"assert_msg", msg}}),
       bad({}, "assertion failed: the size must be positive", {{"self", int64_t{0}}, {"assert_msg", msg}}),
       bad({}, "assertion failed: the size must be positive", {{"self", 0.0}, {"assert_msg", msg}})});
  builtins.add_samples(
      "aten::_assert_tensor_metadata",
      with(any_dtype({one({2, 3}, {{"size", Shape{2, 3}}}), one({}, {{"size", Shape{}}}), one({0, 4}, {}),
                      one({4, 5}, {{"size", Shape{4, 5}}, {"device", std::string("cpu")}}, Layout::Transposed)}),
           {bad({tensor(F32, {2, 3})}, "a: expected shape [2, 4], got float32[2, 3]", {{"size", Shape{2, 4}}}),
            bad({tensor(F32, {2, 3})}, "a: expected dtype float64, got float32[2, 3]", {{"dtype", F64}}),
            bad({tensor(F32, {2, 3})}, "device: expected cpu, got cuda", {{"device", std::string("cuda")}})}));
  auto range = [](int64_t size, AttrValue min, AttrValue max) {
    return std::vector<Attr>{{"size", size}, {"min", std::move(min)}, {"max", std::move(max)}};
  };
  builtins.add_samples(
      "aten::sym_constrain_range_for_size",
      {good({}, range(5, int64_t{2}, int64_t{10})), good({}, range(0, std::monostate{}, std::monostate{})),
       good({}, range(10, std::monostate{}, int64_t{10})),
       bad({}, "size: expected a size in [2, inf], got 1", range(1, int64_t{2}, std::monostate{})),
       bad({}, "size: expected a size in [0, 10], got 11", range(11, std::monostate{}, int64_t{10})),
       bad({}, "size: expected a size in [0, inf], got -1", range(-1, std::monostate{}, std::monostate{}))});

  // Blocks of 8 and 16 channels, the last block partly filled.
  builtins.add_samples(
      "opgraph::nchwc_to_nchw",
      with({one({1, 2, 5, 5, 8}, {{"channels", int64_t{12}}}), one({0, 1, 2, 2, 16}, {{"channels", int64_t{16}}}),
            one({2, 1, 3, 3, 8}, {{"channels", int64_t{1}}}),
            one({1, 3, 1, 4, 16}, {{"channels", int64_t{40}}}, Layout::Strided)},
           {bad({tensor(F32, {1, 2, 5, 5, 8})},
                "self: expected [N, 3, H, W, 8] (17 channels in blocks of 8), got float32[1, 2, 5, 5, 8]",
                {{"channels", int64_t{17}}}),
            bad({tensor(F64, {1, 2, 5, 5, 8})}, "self: expected float32, got float64[1, 2, 5, 5, 8]",
                {{"channels", int64_t{12}}}),
            bad({tensor(F32, {1, 2, 5, 5})},
                "self: expected a blocked [N, C/B, H, W, B] with B 8, 16 or C (12), got float32[1, 2, 5, 5]",
                {{"channels", int64_t{12}}})}));
}

}  // namespace opgraph::kernels::samples
