// Samples of the shape and layout ops (shape.cpp, concat.cpp, split.cpp, pad.cpp):
// views, reshapes, permutations, expansion, squeezing, concatenation,
// splitting, slicing, flipping, repeating and padding, each on 0-d, empty,
// size-1, transposed and strided inputs in every dtype (as they only move
// elements); sizes that do not fit, dims out of range or repeated and
// attribute values the op refuses are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

Sample refused(Shape shape, std::string error, std::vector<Attr> attrs) {
  return bad({tensor(F32, std::move(shape))}, std::move(error), std::move(attrs));
}

// A list attribute.
AttrValue ints(std::initializer_list<int64_t> values) { return std::vector<int64_t>(values); }

void register_reshapes(BuiltinOps& builtins) {
  for (const char* name : {"size", "shape"}) {
    // A transposed input split in its last dim still has a view; a strided one is flattened.
    const std::string holds = "[5, 4] holds 20 elements, the input has 24";
    std::vector<Sample> table =
        with(any_dtype({one({2, 3, 4}, {{name, ints({6, 4})}}), one({2, 3, 4}, {{name, ints({-1, 4})}}),
                        one({0, 3}, {{name, ints({3, 0, 1})}}), one({}, {{name, ints({1})}}),
                        one({1}, {{name, ints({})}}), one({3, 4}, {{name, ints({3, 2, 2})}}, Layout::Transposed),
                        one({2, 6}, {{name, ints({12})}}, Layout::Strided)}),
             {refused({2, 3, 4}, holds, {{name, ints({5, 4})}}),
              refused({2, 3, 4}, "only one dimension can be -1, got [-1, -1]", {{name, ints({-1, -1})}}),
              refused({2, 3, 4}, "cannot infer -1 in [7, -1] for 24 elements", {{name, ints({7, -1})}})});
    if (std::string(name) == "size") {
      add_to_each(builtins, {"aten::view", "aten::_unsafe_view"}, table);
    } else {
      builtins.add_samples("aten::reshape", table);
    }
  }

  builtins.add_samples(
      "aten::flatten.using_ints",
      with(any_dtype({one({2, 3, 4}, {{"start_dim", int64_t{1}}}), one({}, {{"start_dim", int64_t{0}}}),
                      one({2, 0, 3}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{1}}}),
                      one({3, 4}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{1}}}, Layout::Transposed),
                      one({2, 5}, {{"start_dim", int64_t{1}}, {"end_dim", int64_t{1}}}, Layout::Strided)}),
           {refused({2, 3, 4}, "start_dim 2 must not come after end_dim 1",
                    {{"start_dim", int64_t{2}}, {"end_dim", int64_t{1}}}),
            refused({2, 3}, "end_dim: dimension 2 is out of range for rank 2", {{"end_dim", int64_t{2}}})}));

  builtins.add_samples(
      "aten::unflatten.int",
      with(any_dtype({one({6, 2}, {{"dim", int64_t{0}}, {"sizes", ints({2, 3})}}),
                      one({6, 2}, {{"dim", int64_t{1}}, {"sizes", ints({1, 2})}}),
                      one({0, 4}, {{"dim", int64_t{1}}, {"sizes", ints({2, -1})}}),
                      one({4, 6}, {{"dim", int64_t{-1}}, {"sizes", ints({3, -1})}}, Layout::Transposed)}),
           {refused({6, 2}, "sizes: shape [4, 2] holds 8 elements, the input has 6",
                    {{"dim", int64_t{0}}, {"sizes", ints({4, 2})}}),
            refused({6, 2}, "dim: dimension 2 is out of range for rank 2",
                    {{"dim", int64_t{2}}, {"sizes", ints({1, 2})}})}));

  // resize_ runs as the functional form: self's elements in order, zeros past them.
  builtins.add_samples(
      "aten::resize_",
      with(any_dtype({one({2, 3}, {{"size", ints({3, 3})}}), one({2, 3}, {{"size", ints({2})}}),
                      one({2, 3}, {{"size", ints({0})}}), one({}, {{"size", ints({4})}}),
                      one({3, 4}, {{"size", ints({12})}}, Layout::Transposed),
                      one({2, 5}, {{"size", ints({})}}, Layout::Strided)}),
           {refused({2, 3}, "size: expected extents of at least 0, got [2, -1]", {{"size", ints({2, -1})}}),
            refused({2, 3}, "memory_format", {{"size", ints({6})}, {"memory_format", std::string("channels_last")}})}));

  builtins.add_samples(
      "aten::sum_to_size",
      with(retyped({F32, F64},
                   {one({2, 3}, {{"size", ints({1, 3})}}), one({2, 3}, {{"size", ints({2, 3})}}),
                    one({4, 5}, {{"size", ints({4, 1})}}, Layout::Transposed), one({0, 3}, {{"size", ints({1, 3})}}),
                    one({2, 3, 4}, {{"size", ints({3, 1})}}), one({2, 8}, {{"size", ints({})}}, Layout::Strided)}),
           {refused({2, 3}, "size: expected a shape that broadcasts to self's [2, 3], got [2, 1, 3]",
                    {{"size", ints({2, 1, 3})}}),
            refused({2, 3}, "got [4]", {{"size", ints({4})}})}));
}

void register_permutations(BuiltinOps& builtins) {
  builtins.add_samples(
      "aten::permute",
      with(any_dtype({one({2, 3, 4}, {{"dims", ints({2, 0, 1})}}), one({}, {{"dims", ints({})}}),
                      one({0, 5}, {{"dims", ints({1, 0})}}), one({3, 4}, {{"dims", ints({-1, 0})}}, Layout::Transposed),
                      one({2, 3, 4}, {{"dims", ints({1, 2, 0})}}, Layout::Strided)}),
           {refused({2, 3, 4}, "dims: dimension 0 repeats in [0, 0, 1]", {{"dims", ints({0, 0, 1})}}),
            refused({2, 3, 4}, "dims: expected 3 dimensions for input float32[2, 3, 4], got [0, 1]",
                    {{"dims", ints({0, 1})}})}));

  builtins.add_samples("aten::transpose.int",
                       with(any_dtype({one({2, 3, 4}, {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}),
                                       one({5}, {{"dim0", int64_t{0}}, {"dim1", int64_t{-1}}}),
                                       one({0, 3}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}),
                                       one({3, 4}, {{"dim0", int64_t{-1}}, {"dim1", int64_t{-2}}}, Layout::Transposed),
                                       one({2, 7}, {{"dim0", int64_t{1}}, {"dim1", int64_t{0}}}, Layout::Strided)}),
                            {refused({2, 3, 4}, "dim1: dimension 3 is out of range for rank 3",
                                     {{"dim0", int64_t{0}}, {"dim1", int64_t{3}}}),
                             refused({2, 3, 4}, "dim0: dimension -4 is out of range for rank 3",
                                     {{"dim0", int64_t{-4}}, {"dim1", int64_t{0}}})}));

  builtins.add_samples("aten::t",
                       with(any_dtype({one({3, 4}, {}), one({3}, {}), one({}, {}), one({0, 2}, {}),
                                       one({4, 5}, {}, Layout::Transposed), one({2, 3}, {}, Layout::Strided)}),
                            {refused({2, 3, 4}, "self: expected a tensor of rank 2 or less, got float32[2, 3, 4]", {}),
                             refused({1, 2, 3, 4}, "got float32[1, 2, 3, 4]", {})}));

  builtins.add_samples(
      "aten::expand",
      with(any_dtype({one({3, 1}, {{"size", ints({2, 3, 4})}}), one({3, 1}, {{"size", ints({-1, 4})}}),
                      one({}, {{"size", ints({2, 3})}}), one({1}, {{"size", ints({0})}}),
                      one({4, 1}, {{"size", ints({2, 4, 5})}}, Layout::Transposed)}),
           {refused({3, 2}, "size: cannot expand float32[3, 2] to [3, 4]", {{"size", ints({3, 4})}}),
            refused({3, 1}, "size: [4] has fewer dimensions than input float32[3, 1]", {{"size", ints({4})}})}));

  builtins.add_samples(
      "aten::flip",
      with(any_dtype({one({2, 3, 4}, {{"dims", ints({0, 2})}}), one({}, {{"dims", ints({})}}),
                      one({0, 3}, {{"dims", ints({1})}}), one({3, 4}, {{"dims", ints({-1})}}, Layout::Transposed),
                      one({2, 5}, {{"dims", ints({0, 1})}}, Layout::Strided)}),
           {refused({2, 3, 4}, "dims: dimension 0 repeats in [0, 0]", {{"dims", ints({0, 0})}}),
            refused({2, 3}, "dimension 2 is out of range for rank 2", {{"dims", ints({2})}})}));

  builtins.add_samples(
      "aten::repeat",
      with(any_dtype(
               {one({2, 3}, {{"repeats", ints({2, 1, 2})}}), one({}, {{"repeats", ints({3})}}),
                one({0, 2}, {{"repeats", ints({2, 3})}}), one({3, 4}, {{"repeats", ints({1, 2})}}, Layout::Transposed),
                one({2, 3}, {{"repeats", ints({0, 1})}}), one({2, 3}, {{"repeats", ints({2, 2})}}, Layout::Strided)}),
           {refused({2, 3}, "repeats: expected at least 2 values for input float32[2, 3], got [2]",
                    {{"repeats", ints({2})}}),
            refused({2, 3}, "repeats: expected non-negative values, got [-1, 1]", {{"repeats", ints({-1, 1})}})}));
}

void register_squeezes(BuiltinOps& builtins) {
  builtins.add_samples("aten::squeeze.dim",
                       with(any_dtype({one({3, 1}, {{"dim", int64_t{1}}}), one({3, 1}, {{"dim", int64_t{0}}}),
                                       one({}, {{"dim", int64_t{0}}}), one({1, 0}, {{"dim", int64_t{0}}}),
                                       one({1, 4}, {{"dim", int64_t{-2}}}, Layout::Transposed)}),
                            {refused({3, 1}, "dim: dimension 2 is out of range for rank 2", {{"dim", int64_t{2}}}),
                             refused({3, 1}, "dim: dimension -3 is out of range for rank 2", {{"dim", int64_t{-3}}})}));

  builtins.add_samples(
      "aten::squeeze.dims",
      with(any_dtype({one({3, 1, 1}, {{"dim", ints({1, 2})}}), one({1, 3, 1}, {{"dim", ints({0, 1})}}),
                      one({}, {{"dim", ints({})}}), one({1, 5}, {{"dim", ints({0})}}, Layout::Transposed)}),
           {refused({3, 1, 1}, "dim: dimension 3 is out of range for rank 3", {{"dim", ints({3})}}),
            refused({3, 1, 1}, "dimension -4 is out of range for rank 3", {{"dim", ints({-4})}})}));

  builtins.add_samples("aten::unsqueeze",
                       with(any_dtype({one({3}, {{"dim", int64_t{1}}}), one({}, {{"dim", int64_t{0}}}),
                                       one({2, 3}, {{"dim", int64_t{-1}}}), one({0, 2}, {{"dim", int64_t{1}}}),
                                       one({3, 4}, {{"dim", int64_t{0}}}, Layout::Transposed)}),
                            {refused({3}, "dim: dimension 2 is out of range for rank 2", {{"dim", int64_t{2}}}),
                             refused({3}, "dim: dimension -3 is out of range for rank 2", {{"dim", int64_t{-3}}})}));
}

// A Tensor[] of `shapes` (the sample's list size is their count).
Sample listed(std::vector<SampleTensor> tensors, std::vector<Attr> attrs, std::string error = "") {
  Sample sample = error.empty() ? good(tensors, std::move(attrs)) : bad(tensors, std::move(error), std::move(attrs));
  sample.list_sizes = {tensors.size()};
  return sample;
}

void register_joins_and_splits(BuiltinOps& builtins) {
  builtins.add_samples(
      "aten::cat",
      with(any_dtype(
               {listed({tensor(F32, {2, 3}), tensor(F32, {1, 3})}, {{"dim", int64_t{0}}}),
                listed({tensor(F32, {2, 3}), tensor(F32, {2, 0})}, {{"dim", int64_t{1}}}),
                listed({tensor(F32, {2, 3}, Layout::Transposed), tensor(F32, {2, 5}, Layout::Strided)},
                       {{"dim", int64_t{-1}}}),
                listed({tensor(F32, {2, 3}), tensor(F32, {0})}, {{"dim", int64_t{0}}}),  // a legacy empty 1-d: skipped
                listed({tensor(F32, {4})}, {{"dim", int64_t{0}}}),
                listed({tensor(F32, {1, 2, 3}), tensor(F32, {1, 2, 3}), tensor(F32, {1, 2, 3})},
                       {{"dim", int64_t{1}}})}),
           {listed({tensor(F32, {2, 3}), tensor(F32, {1, 4})}, {{"dim", int64_t{0}}},
                   "tensors[1]: expected size 3 in dimension 1 like tensors[0], got float32[1, 4]"),
            listed({tensor(F32, {2, 3}), tensor(F64, {1, 3})}, {{"dim", int64_t{0}}},
                   "tensors[1]: expected float32 like tensors[0], got float64[1, 3] (dtypes are not promoted)"),
            listed({tensor(F32, {2, 3}), tensor(F32, {1, 3})}, {{"dim", int64_t{2}}},
                   "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2")}));

  builtins.add_samples(
      "aten::stack",
      with(any_dtype({listed({tensor(F32, {2, 3}), tensor(F32, {2, 3})}, {{"dim", int64_t{2}}}),
                      listed({tensor(F32, {}), tensor(F32, {})}, {{"dim", int64_t{0}}}),
                      listed({tensor(F32, {0, 3}), tensor(F32, {0, 3})}, {{"dim", int64_t{1}}}),
                      listed({tensor(F32, {3, 4}, Layout::Transposed), tensor(F32, {3, 4}, Layout::Strided)},
                             {{"dim", int64_t{-1}}}),
                      listed({tensor(F32, {5})}, {{"dim", int64_t{0}}})}),
           {listed({tensor(F32, {2, 3}), tensor(F32, {2, 4})}, {{"dim", int64_t{0}}},
                   "tensors[1]: expected shape [2, 3] like tensors[0], got float32[2, 4]"),
            listed({tensor(F32, {2, 3})}, {{"dim", int64_t{3}}},
                   "dim: expected a dim in [-3, 2] for a tensor of rank 3, got 3")}));

  const Attr dim_out_of_range = {"dim", int64_t{2}};
  const std::string out_of_range = "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2";
  builtins.add_samples(
      "aten::split.Tensor",
      with(any_dtype({one({5, 3}, {{"split_size", int64_t{2}}}), one({0, 3}, {{"split_size", int64_t{0}}}),
                      one({5, 3}, {{"split_size", int64_t{5}}}),
                      one({3, 7}, {{"split_size", int64_t{3}}, {"dim", int64_t{1}}}, Layout::Transposed),
                      one({2, 6}, {{"split_size", int64_t{4}}, {"dim", int64_t{-1}}}, Layout::Strided)}),
           {refused({5, 3}, "split_size: expected a positive size, got 0 for a dim of size 5",
                    {{"split_size", int64_t{0}}}),
            refused({5, 3}, "split_size: expected a positive size, got -1", {{"split_size", int64_t{-1}}})}));

  builtins.add_samples(
      "aten::split_with_sizes",
      with(any_dtype({one({5, 3}, {{"split_sizes", ints({2, 3})}}), one({5, 3}, {{"split_sizes", ints({0, 5})}}),
                      one({4, 6}, {{"split_sizes", ints({1, 5})}, {"dim", int64_t{1}}}, Layout::Transposed),
                      one({0, 2}, {{"split_sizes", ints({0})}})}),
           {refused({5, 3}, "split_sizes: [2, 2] add up to 4, the dim has size 5", {{"split_sizes", ints({2, 2})}}),
            refused({5, 3}, "split_sizes: expected non-negative sizes, got [-1, 6]",
                    {{"split_sizes", ints({-1, 6})}})}));

  builtins.add_samples(
      "aten::chunk",
      with(any_dtype({one({5, 3}, {{"chunks", int64_t{2}}}), one({5, 3}, {{"chunks", int64_t{7}}}),
                      one({0, 3}, {{"chunks", int64_t{3}}}),
                      one({4, 6}, {{"chunks", int64_t{4}}, {"dim", int64_t{1}}}, Layout::Transposed)}),
           {refused({5, 3}, "chunks: expected a positive number of chunks, got 0", {{"chunks", int64_t{0}}}),
            refused({5, 3}, out_of_range, {{"chunks", int64_t{2}}, dim_out_of_range})}));

  builtins.add_samples(
      "aten::unbind.int",
      with(any_dtype({one({3, 2}, {{"dim", int64_t{1}}}), one({1}, {{"dim", int64_t{0}}}),
                      one({0, 2}, {{"dim", int64_t{1}}}), one({3, 4}, {{"dim", int64_t{0}}}, Layout::Transposed)}),
           {refused({3, 2}, out_of_range, {dim_out_of_range}),
            refused({3, 2}, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got -3", {{"dim", int64_t{-3}}})}));
}

void register_slices(BuiltinOps& builtins) {
  builtins.add_samples("aten::select.int",
                       with(any_dtype({one({2, 3, 4}, {{"dim", int64_t{1}}, {"index", int64_t{-1}}}),
                                       one({5}, {{"dim", int64_t{0}}, {"index", int64_t{2}}}),
                                       one({3, 4}, {{"dim", int64_t{0}}, {"index", int64_t{1}}}, Layout::Transposed),
                                       one({2, 6}, {{"dim", int64_t{1}}, {"index", int64_t{5}}}, Layout::Strided),
                                       one({0, 2}, {{"dim", int64_t{1}}, {"index", int64_t{0}}})}),
                            {refused({2, 3, 4}, "index: 3 is out of range for dim 1 of size 3",
                                     {{"dim", int64_t{1}}, {"index", int64_t{3}}}),
                             refused({2, 3, 4}, "dim", {{"dim", int64_t{3}}, {"index", int64_t{0}}})}));

  builtins.add_samples(
      "aten::slice.Tensor",
      with(any_dtype(
               {one({2, 3, 4}, {{"dim", int64_t{2}}, {"start", int64_t{1}}, {"step", int64_t{2}}}),
                one({5}, {{"start", int64_t{-3}}}), one({5}, {{"start", int64_t{10}}}),
                one({0, 3}, {{"dim", int64_t{1}}, {"end", int64_t{2}}}),
                one({4, 5}, {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{4}}, {"step", int64_t{2}}},
                    Layout::Transposed),
                one({3, 6}, {{"dim", int64_t{-1}}, {"end", int64_t{-2}}}, Layout::Strided)}),
           {refused({2, 3, 4}, "step: expected a positive step, got 0", {{"dim", int64_t{2}}, {"step", int64_t{0}}}),
            refused({2, 3}, "dim", {{"dim", int64_t{2}}})}));

  builtins.add_samples(
      "aten::diagonal",
      with(any_dtype({one({3, 4}, {{"offset", int64_t{1}}}), one({3, 4}, {{"offset", int64_t{-1}}}),
                      one({2, 3, 4}, {{"dim1", int64_t{1}}, {"dim2", int64_t{2}}}), one({4, 5}, {}, Layout::Transposed),
                      one({0, 3}, {}), one({3, 4}, {{"offset", int64_t{10}}}),
                      one({3, 4}, {{"dim1", int64_t{1}}, {"dim2", int64_t{0}}}, Layout::Strided)}),
           {refused({3, 4}, "dim1 and dim2: expected two different dims, got 0 twice",
                    {{"dim1", int64_t{0}}, {"dim2", int64_t{0}}}),
            refused({3, 4}, "dim", {{"dim1", int64_t{0}}, {"dim2", int64_t{2}}})}));

  // The scatters of a select and a slice: src shaped like the part it replaces.
  builtins.add_samples(
      "aten::select_scatter",
      with(any_dtype({good({tensor(F32, {2, 3}), tensor(F32, {3})}, {{"dim", int64_t{0}}, {"index", int64_t{1}}}),
                      good({tensor(F32, {4, 3}, Layout::Transposed), tensor(F32, {4})},
                           {{"dim", int64_t{1}}, {"index", int64_t{-1}}}),
                      good({tensor(F32, {5}), tensor(F32, {})}, {{"dim", int64_t{0}}, {"index", int64_t{4}}}),
                      good({tensor(F32, {2, 0}), tensor(F32, {0})}, {{"dim", int64_t{0}}, {"index", int64_t{0}}})}),
           {bad({tensor(F32, {2, 3}), tensor(F32, {2})},
                "src: expected float32[3], the part of self float32[2, 3] it replaces, got float32[2]",
                {{"dim", int64_t{0}}, {"index", int64_t{1}}}),
            bad({tensor(F32, {2, 3}), tensor(F32, {3})}, "index: 2 is out of range for dim 0 of size 2",
                {{"dim", int64_t{0}}, {"index", int64_t{2}}})}));

  builtins.add_samples(
      "aten::slice_scatter",
      with(any_dtype({good({tensor(F32, {4, 3}), tensor(F32, {2, 3})}, {{"start", int64_t{1}}, {"end", int64_t{3}}}),
                      good({tensor(F32, {3, 6}, Layout::Transposed), tensor(F32, {3, 3})},
                           {{"dim", int64_t{1}}, {"step", int64_t{2}}}),
                      good({tensor(F32, {5}), tensor(F32, {0})}, {{"start", int64_t{7}}}),
                      good({tensor(F32, {2, 4}), tensor(F32, {2, 4}, Layout::Strided)}, {{"dim", int64_t{1}}})}),
           {bad({tensor(F32, {4, 3}), tensor(F32, {3, 3})},
                "src: expected float32[2, 3], the part of self float32[4, 3] it replaces, got float32[3, 3]",
                {{"start", int64_t{1}}, {"end", int64_t{3}}}),
            bad({tensor(F32, {4, 3}), tensor(F32, {2, 3})}, "step: expected a positive step, got 0",
                {{"start", int64_t{1}}, {"end", int64_t{3}}, {"step", int64_t{0}}})}));
}

void register_pads(BuiltinOps& builtins) {
  builtins.add_samples(
      "aten::constant_pad_nd",
      with(any_dtype({one({2, 3}, {{"pad", ints({1, 2})}}),
                      one({2, 3}, {{"pad", ints({1, 2, 0, 1})}, {"value", int64_t{1}}}),
                      one({2, 3}, {{"pad", ints({-1, -1})}}), one({0, 3}, {{"pad", ints({1, 1})}}),
                      one({}, {{"pad", ints({})}}), one({3, 4}, {{"pad", ints({1, 0, 2, 1})}}, Layout::Transposed),
                      one({2, 5}, {{"pad", ints({0, 3})}}, Layout::Strided)}),
           {refused({2, 3}, "pad: expected an even number of values, got [1, 2, 3]", {{"pad", ints({1, 2, 3})}}),
            refused({2, 3}, "pad: 6 values pad more dims than input float32[2, 3] has",
                    {{"pad", ints({1, 1, 1, 1, 1, 1})}}),
            refused({2, 3}, "pad: [-2, -2] gives dim 1 of input float32[2, 3] extent -1, expected at least 0",
                    {{"pad", ints({-2, -2})}})}));

  const auto mode = [](const char* name) { return Attr{"mode", std::string(name)}; };
  builtins.add_samples(
      "aten::pad",
      with(retyped({F32, F64}, {one({1, 2, 3}, {{"pad", ints({1, 1})}, mode("reflect")}),
                                one({1, 2, 3}, {{"pad", ints({1, 1})}, mode("circular")}),
                                one({1, 2, 3}, {{"pad", ints({1, 2, 1, 1})}, mode("replicate")}),
                                one({2, 3}, {{"pad", ints({1, 1})}, mode("constant"), {"value", 2.0}}),
                                one({1, 4, 5}, {{"pad", ints({2, 1, 3, 0})}, mode("reflect")}, Layout::Transposed),
                                one({2, 2, 4}, {{"pad", ints({3, 3})}, mode("replicate")}, Layout::Strided)}),
           {refused({1, 2, 3}, "pad: [3, 3] must stay below the extent it reflects, but 3 pads a dim of extent 3",
                    {{"pad", ints({3, 3})}, mode("reflect")}),
            refused({1, 2, 3}, "mode: expected constant, reflect, replicate or circular, got 'bogus'",
                    {{"pad", ints({1, 1})}, mode("bogus")}),
            refused({2, 3}, "pad: [4, 1] must stay within the extent it wraps",
                    {{"pad", ints({4, 1})}, mode("circular")})}));

  // Reflection and replication over the last 1, 2 or 3 dims, batched and not.
  for (size_t dims : {1, 2, 3}) {
    const Shape unbatched = std::vector<int64_t>(dims + 1, 3), batched = std::vector<int64_t>(dims + 2, 4);
    std::vector<int64_t> pads(2 * dims, 2), small(2 * dims, 1);
    pads[0] = 0;
    std::vector<Sample> table =
        retyped({F32, F64}, {one(unbatched, {{"padding", small}}), one(batched, {{"padding", pads}}),
                             one(batched, {{"padding", small}}, Layout::Transposed),
                             one(unbatched, {{"padding", pads}}, Layout::Strided)});
    Shape empty_batch = batched;
    empty_batch[0] = 0;
    table.push_back(one(empty_batch, {{"padding", small}}));
    table.push_back(refused(Shape(dims, 4), "self: expected rank", {{"padding", small}}));
    table.push_back(
        refused(batched, detail::concat("padding: expected ", 2 * dims, " values"), {{"padding", ints({1})}}));
    const std::string dims_name = std::to_string(dims) + "d";
    builtins.add_samples("aten::replication_pad" + dims_name, table);
    Shape shallow = batched;
    shallow.back() = 2;
    table.push_back(refused(shallow, "must stay below the extent it reflects", {{"padding", pads}}));
    builtins.add_samples("aten::reflection_pad" + dims_name, table);
  }

  builtins.add_samples(
      "aten::pixel_shuffle",
      with(
          any_dtype(
              {one({1, 8, 2, 3}, {{"upscale_factor", int64_t{2}}}), one({8, 2, 3}, {{"upscale_factor", int64_t{2}}}),
               one({0, 9, 1, 1}, {{"upscale_factor", int64_t{3}}}), one({2, 3, 4, 5}, {{"upscale_factor", int64_t{1}}}),
               one({1, 4, 3, 5}, {{"upscale_factor", int64_t{2}}}, Layout::Transposed)}),
          {refused({1, 6, 2, 3}, "self: expected channels divisible by upscale_factor^2 = 4, got float32[1, 6, 2, 3]",
                   {{"upscale_factor", int64_t{2}}}),
           refused({4, 2}, "self: expected rank 3 or more (..., channels, height, width), got float32[4, 2]",
                   {{"upscale_factor", int64_t{2}}})}));

  builtins.add_samples(
      "aten::pixel_unshuffle",
      with(any_dtype({one({1, 2, 4, 6}, {{"downscale_factor", int64_t{2}}}),
                      one({2, 6, 3}, {{"downscale_factor", int64_t{3}}}),
                      one({0, 1, 2, 2}, {{"downscale_factor", int64_t{2}}}),
                      one({2, 3, 4, 5}, {{"downscale_factor", int64_t{1}}}),
                      one({1, 3, 4, 6}, {{"downscale_factor", int64_t{2}}}, Layout::Transposed)}),
           {refused({1, 2, 5, 6},
                    "self: expected height and width divisible by downscale_factor 2, got float32[1, 2, 5, 6]",
                    {{"downscale_factor", int64_t{2}}}),
            refused({4, 2}, "self: expected rank 3 or more", {{"downscale_factor", int64_t{2}}})}));
}

void register_copies(BuiltinOps& builtins) {
  const std::vector<Sample> copies =
      with(any_dtype({one({2, 3}, {}), one({}, {}), one({0, 4}, {}), one({1}, {}), one({4, 5}, {}, Layout::Transposed),
                      one({3, 6}, {}, Layout::Strided)}),
           {refused({3}, "memory_format: expected None, contiguous_format or preserve_format, got \"channels_last\"",
                    {{"memory_format", std::string("channels_last")}}),
            refused({3}, "got \"bogus\"", {{"memory_format", std::string("bogus")}})});
  add_to_each(builtins, {"aten::clone", "aten::contiguous"}, copies);

  // src broadcast into self's shape, and of another dtype: copy converts.
  std::vector<Sample> copy =
      any_dtype({good({tensor(F32, {2, 3}), tensor(F32, {3})}), good({tensor(F32, {}), tensor(F32, {})}),
                 good({tensor(F32, {0, 3}), tensor(F32, {1, 3})}),
                 good({tensor(F32, {4, 5}, Layout::Transposed), tensor(F32, {4, 5}, Layout::Strided)})});
  copy.push_back(good({tensor(F32, {2, 3}), tensor(I64, {2, 3})}));
  copy.push_back(good({tensor(I32, {4}), tensor(F64, {4}).in(-100, 100)}));
  copy.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {4})}, "shapes [2, 3] and [4] cannot be broadcast together"));
  copy.push_back(bad({tensor(F32, {3}), tensor(F32, {2, 3})},
                     "src: expected a shape that broadcasts to float32[3], got float32[2, 3]"));
  builtins.add_samples("aten::copy", copy);
}

}  // namespace

void register_shape_samples(BuiltinOps& builtins) {
  register_reshapes(builtins);
  register_permutations(builtins);
  register_squeezes(builtins);
  register_joins_and_splits(builtins);
  register_slices(builtins);
  register_pads(builtins);
  register_copies(builtins);
}

}  // namespace opgraph::kernels::samples
