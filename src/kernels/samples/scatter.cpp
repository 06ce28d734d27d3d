// Samples of the ops that index (gather.cpp, scatter.cpp, sort.cpp,
// data_dependent.cpp, compare.cpp's where and masked ops): int64 and int32
// indices drawn inside the indexed dim (repeats included, where scatters and index_put
// must combine or pick them alike every run), 0-d and empty index tensors,
// indices smaller than self, transposed and strided operands, every dtype
// of the indexed values; an index out of range, index shapes that do not
// fit and masks or indices of the wrong dtype are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

// An index tensor into a dim of `size`.
SampleTensor index(Shape shape, int64_t size, DType dtype = I64) {
  return tensor(dtype, std::move(shape)).in(0, size - 1);
}

// self, index (and src) along `dim`, as gather and the scatters take them.
struct Along {
  SampleTensor self;
  int64_t dim;
  SampleTensor index;
  Shape src;
};

const std::vector<Along>& along_dims() {
  static const std::vector<Along> cases = {
      {tensor(F32, {3, 4}), 1, index({3, 2}, 4), {3, 3}},
      {tensor(F32, {3, 4}), 0, index({2, 4}, 3), {2, 4}},
      {tensor(F32, {5}), 0, index({7}, 5, I32), {8}},
      {tensor(F32, {}), 0, index({}, 1), {}},
      {tensor(F32, {3, 4}, Layout::Transposed), -1, index({2, 3}, 4), {2, 4}},
      {tensor(F32, {2, 3, 6}, Layout::Strided), 2, index({2, 3, 4}, 6, I32), {2, 3, 4}},
      {tensor(F32, {0, 4}), 1, index({0, 2}, 4), {0, 2}},
  };
  return cases;
}

// `with_src`: self, index, src (its dtype self's); else self, index.
std::vector<Sample> indexed_along(bool with_src, const std::vector<Attr>& attrs) {
  std::vector<Sample> table;
  for (const Along& c : along_dims()) {
    std::vector<Attr> all = {{"dim", c.dim}};
    all.insert(all.end(), attrs.begin(), attrs.end());
    std::vector<SampleTensor> inputs = {c.self, c.index};
    if (with_src) inputs.push_back(tensor(F32, c.src));
    table.push_back(good(std::move(inputs), all));
  }
  return table;
}

void register_gathers(BuiltinOps& builtins) {
  const Attr dim1 = {"dim", int64_t{1}};
  builtins.add_samples(
      "aten::gather",
      with(any_dtype(indexed_along(false, {})),
           {bad({tensor(F32, {3, 4}), index({3, 2}, 4).in(11, 11)},
                "index: 11 at position 0 is out of range for a dim of size 4", {dim1}),
            bad({tensor(F32, {3, 4}), index({3, 2, 2}, 4)},
                "index: expected rank 2 like self float32[3, 4], got int64[3, 2, 2]", {dim1}),
            bad({tensor(F32, {3, 4}), index({4, 2}, 4)},
                "index: expected at most 3 in dim 0 like self float32[3, 4], got int64[4, 2]", {dim1})}));

  builtins.add_samples(
      "aten::index_select",
      with(
          any_dtype({good({tensor(F32, {3, 4}), index({5}, 4)}, {dim1}),
                     good({tensor(F32, {3, 4}), index({2}, 3, I32)}, {{"dim", int64_t{0}}}),
                     good({tensor(F32, {}), index({}, 1)}, {{"dim", int64_t{0}}}),
                     good({tensor(F32, {4, 5}, Layout::Transposed), index({0}, 5)}, {dim1}),
                     good({tensor(F32, {2, 6}, Layout::Strided), index({9}, 6)}, {{"dim", int64_t{-1}}})}),
          {bad({tensor(F32, {3, 4}), index({2, 2}, 4)}, "index: expected a 0-d or 1-d tensor, got int64[2, 2]", {dim1}),
           bad({tensor(F32, {3, 4}), index({5}, 4).in(10, 10)},
               "index: 10 at position 0 is out of range for a dim of size 4", {dim1})}));

  // index.Tensor: one index, one after a None, two that broadcast, negative ones.
  auto indices = [](std::vector<SampleTensor> inputs, std::string error = "") {
    Sample sample = error.empty() ? good(inputs) : bad(inputs, std::move(error));
    sample.list_sizes = {inputs.size() - 1};
    return sample;
  };
  builtins.add_samples(
      "aten::index.Tensor",
      with(any_dtype({indices({tensor(F32, {3, 4}), index({5}, 3)}),
                      indices({tensor(F32, {3, 4}), SampleTensor::absent(), index({5}, 4, I32)}),
                      indices({tensor(F32, {3, 4}), index({2, 3}, 3).in(-3, 2), index({3}, 4).in(-4, 3)}),
                      indices({tensor(F32, {5}), index({}, 5)}),
                      indices({tensor(F32, {4, 6}, Layout::Transposed), index({0}, 4)}),
                      indices({tensor(F32, {2, 3, 8}, Layout::Strided), SampleTensor::absent(), index({4, 1}, 3),
                               index({5}, 8)})}),
           {indices({tensor(F32, {3, 4}), tensor(B, {3})},
                    "indices[0]: expected an int64 or int32 tensor (boolean masks give a data-dependent shape), got "
                    "bool[3]"),
            indices({tensor(F32, {3, 4}), index({5}, 3).in(10, 10)},
                    "index: 10 at position 0 is out of range for a dim of size 3")}));

  // index_put: values broadcast to the indexed part; repeated indices accumulate or pick one.
  std::vector<Sample> index_put;
  for (bool accumulate : {false, true}) {
    for (Sample sample :
         retyped({F32, F64, I64}, {indices({tensor(F32, {3, 4}), index({5}, 3), tensor(F32, {4})}),
                                   indices({tensor(F32, {3, 4}), index({2}, 3), index({2}, 4), tensor(F32, {})}),
                                   indices({tensor(F32, {5}), index({0}, 5), tensor(F32, {0})}),
                                   indices({tensor(F32, {4, 6}, Layout::Transposed), SampleTensor::absent(),
                                            index({3}, 6, I32), tensor(F32, {4, 3})})})) {
      sample.list_sizes = {sample.inputs.size() - 2};
      sample.attrs = {{"accumulate", accumulate}};
      index_put.push_back(std::move(sample));
    }
  }
  Sample wrong_values = indices({tensor(F32, {3, 4}), index({5}, 3), tensor(F32, {3})}, "values");
  wrong_values.list_sizes = {1};
  Sample out_of_range = indices({tensor(F32, {3, 4}), index({5}, 3).in(7, 7), tensor(F32, {4})}, "out of range");
  out_of_range.list_sizes = {1};
  index_put.push_back(wrong_values);
  index_put.push_back(out_of_range);
  // index_put_ runs as the functional form (the result in its own output).
  add_to_each(builtins, {"aten::index_put", "aten::index_put_"}, index_put);
}

void register_scatters(BuiltinOps& builtins) {
  const Attr dim1 = {"dim", int64_t{1}};
  const std::vector<Sample> refusals = {
      bad({tensor(F32, {3, 4}), index({3, 2}, 4), tensor(F32, {2, 2})},
          "index: expected at most src's extents [2, 2] and, except in dim 1, self's [3, 4]; got int64[3, 2]", {dim1}),
      bad({tensor(F32, {3, 4}), index({3, 2}, 4), tensor(F64, {3, 2})},
          "src: expected float32 like self, got float64[3, 2]", {dim1}),
      bad({tensor(F32, {3, 4}), index({3, 2}, 4).in(10, 10), tensor(F32, {3, 2})},
          "index: 10 at position 0 is out of range for a dim of size 4", {dim1})};
  std::vector<Sample> scatter = any_dtype(indexed_along(true, {}));
  scatter.insert(scatter.end(), refusals.begin(), refusals.end());
  builtins.add_samples("aten::scatter.src", scatter);

  std::vector<Sample> add = retyped({F32, F64, I32, I64}, indexed_along(true, {}));
  add.insert(add.end(), refusals.begin(), refusals.end());
  builtins.add_samples("aten::scatter_add", add);

  builtins.add_samples("aten::scatter.value",
                       with(retyped({F32, F64, I64}, indexed_along(false, {{"value", int64_t{3}}})),
                            {bad({tensor(F32, {3, 4}), index({3, 2}, 4).in(10, 10)},
                                 "index: 10 at position 0 is out of range for a dim of size 4", {dim1, {"value", 1.5}}),
                             bad({tensor(F32, {3, 4}), index({3, 2, 2}, 4)}, "index", {dim1, {"value", 1.5}})}));

  std::vector<Sample> reduce;
  for (const char* mode : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      const std::vector<Sample> modes = retyped(
          {F32, F64, I64}, indexed_along(true, {{"reduce", std::string(mode)}, {"include_self", include_self}}));
      reduce.insert(reduce.end(), modes.begin(), modes.end());
    }
  }
  reduce.push_back(bad({tensor(F32, {3, 4}), index({3, 2}, 4), tensor(F32, {3, 2})},
                       "reduce: expected one of sum, prod, mean, amax, amin, got 'bogus'",
                       {dim1, {"reduce", std::string("bogus")}}));
  reduce.push_back(bad({tensor(F32, {3, 4}), index({3, 2}, 4), tensor(F64, {3, 2})},
                       "src: expected float32 like self, got float64[3, 2]", {dim1, {"reduce", std::string("sum")}}));
  builtins.add_samples("aten::scatter_reduce.two", reduce);
}

void register_embeddings(BuiltinOps& builtins) {
  builtins.add_samples(
      "aten::embedding",
      with(retyped({F32, F64}, {good({tensor(F32, {10, 3}), index({4, 5}, 10)}),
                                good({tensor(F32, {10, 3}), index({4}, 10, I32)}, {{"padding_idx", int64_t{2}}}),
                                good({tensor(F32, {6, 4}, Layout::Transposed), index({}, 6)}),
                                good({tensor(F32, {5, 7}, Layout::Strided), index({0, 3}, 5)}),
                                good({tensor(F32, {1, 1}), index({3}, 1)})}),
           {bad({tensor(F32, {10, 3}), index({4}, 10).in(20, 20)},
                "indices: index 20 at position 0 is out of range for 10 embeddings"),
            bad({tensor(F32, {10}), index({4}, 10)},
                "weight: expected rank 2 (num_embeddings, embedding_dim), got float32[10]"),
            bad({tensor(F32, {10, 3}), tensor(F32, {4})}, "indices: expected int64 or int32, got float32[4]")}));

  // Repeated indices sum their rows; scale_grad_by_freq divides by the count.
  auto backward = [](Shape grad, SampleTensor indices, int64_t num_weights, int64_t padding_idx, bool scale) {
    return good({tensor(F32, std::move(grad)), std::move(indices)},
                {{"num_weights", num_weights}, {"padding_idx", padding_idx}, {"scale_grad_by_freq", scale}});
  };
  const std::vector<Attr> attrs = {
      {"num_weights", int64_t{10}}, {"padding_idx", int64_t{-1}}, {"scale_grad_by_freq", false}};
  builtins.add_samples(
      "aten::embedding_dense_backward",
      with(retyped({F32, F64},
                   {backward({4, 5, 3}, index({4, 5}, 10), 10, -1, false),
                    backward({4, 3}, index({4}, 3, I32), 3, -1, true), backward({6, 2}, index({6}, 4), 4, 1, false),
                    backward({0, 3}, index({0}, 5), 5, -1, true), backward({3}, index({}, 2), 2, 0, true)}),
           {bad({tensor(F32, {4, 3}), index({5}, 10)},
                "grad_output: expected indices' shape [5] and one more dim, got float32[4, 3]", attrs),
            bad({tensor(F32, {4, 3}), index({4}, 10).in(12, 12)}, "12", attrs)}));
}

// Bags of indices: offsets drawn as 0 (samples draw values from a range, so
// the valid offsets a sample can hold are zeros): one bag of all indices, or
// empty bags before it; each mode, with and without per-sample weights.
std::vector<Sample> bags(const std::vector<Attr>& extra) {
  const SampleTensor none = SampleTensor::absent();
  auto bag = [&](SampleTensor weight, Shape indices, int64_t offsets, int64_t mode, bool weighted, bool last = false) {
    const int64_t rows = weight.shape[0];
    std::vector<Attr> attrs = {{"mode", mode}, {"include_last_offset", last}};
    attrs.insert(attrs.end(), extra.begin(), extra.end());
    SampleTensor per_sample = weighted ? tensor(F32, indices) : none;
    return good({weight, index(std::move(indices), rows), tensor(I64, {offsets}).in(0, 0), per_sample}, attrs);
  };
  std::vector<Sample> table = retyped(
      {F32, F64},
      {bag(tensor(F32, {10, 3}), {6}, 1, 0, false), bag(tensor(F32, {10, 3}), {6}, 3, 1, false),
       bag(tensor(F32, {10, 3}), {7}, 2, 2, false), bag(tensor(F32, {10, 3}), {6}, 1, 0, true),
       bag(tensor(F32, {6, 4}, Layout::Transposed), {0}, 2, 0, false, true),  // the last offset ends the indices
       bag(tensor(F32, {5, 7}, Layout::Strided), {3}, 2, 1, false), bag(tensor(F32, {1, 1}), {4}, 1, 2, false)});
  std::vector<Attr> sum = {{"mode", int64_t{0}}, {"include_last_offset", false}};
  sum.insert(sum.end(), extra.begin(), extra.end());
  std::vector<Attr> mean = sum;
  mean[0].second = int64_t{1};
  table.push_back(bad({tensor(F32, {10, 3}), index({6}, 10), tensor(I64, {1}).in(0, 0), tensor(F32, {6})},
                      "per_sample_weights: only mode 0 (sum) takes them, got mode 1", mean));
  table.push_back(bad({tensor(F32, {10, 3}), index({2, 3}, 10), tensor(I64, {1}).in(0, 0), none},
                      "indices: expected a 1-d tensor, got int64[2, 3]", sum));
  table.push_back(bad({tensor(F32, {10, 3}), index({6}, 10), tensor(I64, {1}).in(2, 2), none},
                      "offsets: expected non-decreasing offsets from 0 to at most 6, got 2 for bag 0", sum));
  return table;
}

void register_bags(BuiltinOps& builtins) {
  add_to_each(builtins, {"aten::embedding_bag", "aten::_embedding_bag"}, bags({}));
  builtins.add_samples("aten::embedding_bag.padding_idx",
                       bags({{"scale_grad_by_freq", false}, {"sparse", false}, {"padding_idx", int64_t{3}}}));
}

void register_sorts(BuiltinOps& builtins) {
  // Small integer ranges tie: the kernels must break ties alike.
  const auto along = [](std::vector<Attr> attrs, int64_t dim) {
    attrs.emplace_back("dim", dim);
    return attrs;
  };
  std::vector<Sample> sort;
  for (bool descending : {false, true}) {
    const std::vector<Sample> both = any_dtype(
        {one({5, 7}, along({{"descending", descending}}, -1)), one({3, 4, 5}, along({{"descending", descending}}, 1)),
         one({}, along({{"descending", descending}}, 0)), one({0, 4}, along({{"descending", descending}}, 1)),
         one({6, 3}, along({{"descending", descending}}, 0), Layout::Transposed),
         one({2, 300}, along({{"descending", descending}}, 1), Layout::Strided)});
    sort.insert(sort.end(), both.begin(), both.end());
  }
  sort.push_back(bad({tensor(F32, {3, 4})}, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2",
                     {{"dim", int64_t{2}}}));
  sort.push_back(bad({tensor(DType::Complex64, {3})}, "complex64"));
  builtins.add_samples("aten::sort", sort);

  std::vector<Sample> topk;
  for (bool largest : {false, true}) {
    const std::vector<Sample> both = retyped(
        {F32, F64, I32, I64},
        {one({5, 7}, {{"k", int64_t{3}}, {"largest", largest}}),
         one({3, 4, 5}, {{"k", int64_t{4}}, {"dim", int64_t{1}}, {"largest", largest}}),
         one({4}, {{"k", int64_t{0}}, {"largest", largest}}), one({0, 4}, {{"k", int64_t{2}}, {"largest", largest}}),
         one({6, 3}, {{"k", int64_t{6}}, {"dim", int64_t{0}}, {"largest", largest}}, Layout::Transposed),
         one({2, 300}, {{"k", int64_t{17}}, {"largest", largest}}, Layout::Strided)});
    topk.insert(topk.end(), both.begin(), both.end());
  }
  topk.push_back(
      bad({tensor(F32, {3, 4})}, "k: expected a k in [0, 4] (the size of dim 1), got 5", {{"k", int64_t{5}}}));
  topk.push_back(bad({tensor(F32, {3, 4})}, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2",
                     {{"k", int64_t{1}}, {"dim", int64_t{2}}}));
  builtins.add_samples("aten::topk", topk);

  std::vector<Sample> nonzero = elementwise({F32, F64, I32, I64, B}, -1, 1);
  nonzero.push_back(bad({tensor(DType::Complex64, {3})}, "complex64"));
  nonzero.push_back(bad({tensor(DType::Complex128, {2, 2})}, "complex128"));
  builtins.add_samples("aten::nonzero", nonzero);
}

void register_selections(BuiltinOps& builtins) {
  // (self, mask) pairs that broadcast, as the masked ops and where take them.
  const std::vector<std::pair<SampleTensor, SampleTensor>> masked = {
      {tensor(F32, {2, 3}), tensor(B, {3})},
      {tensor(F32, {}), tensor(B, {})},
      {tensor(F32, {0, 3}), tensor(B, {1, 3})},
      {tensor(F32, {4, 5}, Layout::Transposed), tensor(B, {4, 5}, Layout::Strided)},
      {tensor(F32, {3, 1}), tensor(B, {3, 1})},
  };
  std::vector<Sample> fill_scalar, fill_tensor, scatter, where, where_other, where_self;
  for (const auto& [self, mask] : masked) {
    fill_scalar.push_back(good({self, mask}, {{"value", int64_t{1}}}));
    fill_tensor.push_back(good({self, mask, tensor(F32, {})}));
    scatter.push_back(good({self, mask, tensor(F32, {7, 3})}));
    where.push_back(good({mask, self, tensor(F32, {1})}));
    where_other.push_back(good({mask, self}, {{"other", int64_t{-1}}}));
    where_self.push_back(good({mask, self}, {{"self", int64_t{2}}}));
  }
  const std::string mask_dtype = "mask: expected a bool tensor, got float32[3]";
  add_to_each(builtins, {"aten::masked_fill.Scalar", "aten::masked_fill_.Scalar"},
              with(any_dtype(fill_scalar),
                   {bad({tensor(F32, {2, 3}), tensor(F32, {3})}, mask_dtype, {{"value", 1.5}}),
                    bad({tensor(F32, {2, 3}), tensor(B, {4})}, "cannot be broadcast", {{"value", 1.5}})}));
  builtins.add_samples(
      "aten::masked_fill.Tensor",
      with(any_dtype(fill_tensor), {bad({tensor(F32, {2, 3}), tensor(F32, {3}), tensor(F32, {})}, mask_dtype),
                                    bad({tensor(F32, {2, 3}), tensor(B, {3}), tensor(F32, {3})},
                                        "value: expected a 0-d tensor, got float32[3]")}));
  builtins.add_samples("aten::masked_scatter",
                       with(any_dtype(scatter), {bad({tensor(F32, {2, 3}), tensor(F32, {2, 3}), tensor(F32, {6})},
                                                     "mask: expected bool, got float32[2, 3]"),
                                                 bad({tensor(F32, {2, 3}), tensor(B, {2, 3}), tensor(F32, {0})},
                                                     "source: mask holds more true elements than source's 0")}));
  const std::string condition = "condition: expected a bool tensor, got float32[2, 3]";
  builtins.add_samples(
      "aten::where.self",
      with(any_dtype(where),
           {bad({tensor(F32, {2, 3}), tensor(F32, {3}), tensor(F32, {2, 1})}, condition),
            bad({tensor(B, {2, 3}), tensor(F32, {3}), tensor(F64, {3})},
                "other: expected float32 like self (no type promotion except from 0-d tensors), got float64[3]")}));
  builtins.add_samples(
      "aten::where.ScalarOther",
      with(any_dtype(where_other),
           {bad({tensor(F32, {2, 3}), tensor(F32, {3})}, condition, {{"other", 1.5}}),
            bad({tensor(B, {2, 3}), tensor(I64, {3})},
                "other: expected a whole number for a int64 tensor (no type promotion), got 1.5", {{"other", 1.5}})}));
  builtins.add_samples(
      "aten::where.ScalarSelf",
      with(any_dtype(where_self), {bad({tensor(F32, {2, 3}), tensor(F32, {3})}, condition, {{"self", 1.5}}),
                                   bad({tensor(B, {2, 3}), tensor(I64, {3})}, "got 1.5", {{"self", 1.5}})}));
}

}  // namespace

void register_scatter_samples(BuiltinOps& builtins) {
  register_gathers(builtins);
  register_scatters(builtins);
  register_embeddings(builtins);
  register_bags(builtins);
  register_sorts(builtins);
  register_selections(builtins);
}

}  // namespace opgraph::kernels::samples
