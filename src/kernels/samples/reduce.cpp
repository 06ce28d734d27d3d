// Samples of the reductions and scans (reduce.cpp): along the last, a
// middle, the first and several dims, kept or not, over rows of one element
// and past rows of none, on 0-d, transposed and strided inputs, in each
// dtype the op takes (integer ties for the arg- and index-returning ones);
// dims out of range, repeated dims, empty reduced dims of the reductions
// without identity and dtypes the op does not take are refused.
#include <functional>

#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

struct Reduction {
  SampleTensor input;
  std::vector<int64_t> dims;  // one dim first: the ops of one dim take dims[0]
  bool keepdim = false;
};

const std::vector<Reduction>& reductions() {
  static const std::vector<Reduction> cases = {
      {tensor(F32, {5, 7}), {-1}},
      {tensor(F32, {3, 4, 5}), {1}, true},
      {tensor(F32, {3, 4, 5}), {2, 0}},
      {tensor(F32, {6, 3}, Layout::Transposed), {0}},
      {tensor(F32, {4, 1}), {1}, true},
      {tensor(F32, {0, 4}), {1}},  // no rows: an empty result
      {tensor(F32, {2, 300}, Layout::Strided), {1}},
      {tensor(F32, {}), {0}},
      {tensor(F32, {3, 4}), {}},  // an empty dim list reduces every dim
      // Past the kernels' parallel threshold: many long rows, and long columns.
      {tensor(F32, {67, 1031}), {1}},
      {tensor(F32, {1031, 67}), {0}},
  };
  return cases;
}

using MakeAttrs = std::function<std::vector<Attr>(const Reduction&)>;

// The reductions over `dims` in each of `dtypes`; `several`: the op takes a
// list of dims (else the cases of one dim only).
std::vector<Sample> reduced(std::initializer_list<DType> dtypes, bool several, const MakeAttrs& attrs, double low = -2,
                            double high = 2) {
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (Reduction reduction : reductions()) {
      if (!several && reduction.dims.size() != 1) continue;
      reduction.input.dtype = dtype;
      table.push_back(good({reduction.input.in(low, high)}, attrs(reduction)));
    }
  }
  return table;
}

std::vector<Attr> dim_list(const Reduction& r) { return {{"dim", r.dims}, {"keepdim", r.keepdim}}; }
std::vector<Attr> one_dim(const Reduction& r) { return {{"dim", r.dims[0]}, {"keepdim", r.keepdim}}; }

// Refusals every op with dims gives: a dim out of range, and `dtype`, one it does not take.
void add_refusals(std::vector<Sample>& table, const Attr& out_of_range, DType dtype, const std::string& dtype_error,
                  std::vector<Attr> dtype_attrs = {}) {
  table.push_back(
      bad({tensor(F32, {3, 4})}, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2", {out_of_range}));
  table.push_back(bad({tensor(dtype, {3, 4})}, dtype_error, std::move(dtype_attrs)));
}

const std::string floats_only = "self: expected float32 or float64, got int64[3, 4]";
const std::string no_identity =
    "self: expected a non-zero size along reduced dim 0 (this reduction has no identity), got float32[0, 4]";

void register_sums(BuiltinOps& builtins) {
  std::vector<Sample> sums = reduced({F32, F64}, true, dim_list);
  sums.push_back(good({tensor(F64, {2, 3, 4})}, {{"dim", std::monostate{}}}));
  add_refusals(sums, {"dim", std::vector<int64_t>{2}}, I64, floats_only, {{"dim", std::vector<int64_t>{0}}});
  sums.push_back(bad({tensor(F32, {3, 4})}, "dim: expected distinct dims, dim 1 appears more than once in [1, -1]",
                     {{"dim", std::vector<int64_t>{1, -1}}}));
  add_to_each(builtins, {"aten::sum.dim_IntList", "aten::mean.dim"}, sums);

  std::vector<Sample> mean = elementwise({F32, F64}, -2, 2);
  mean.push_back(bad({tensor(I64, {3, 4})}, floats_only));
  mean.push_back(bad({tensor(F32, {3})}, "dtype: expected None or float32", {{"dtype", F64}}));
  builtins.add_samples("aten::mean", mean);

  // Rows of one element divide by zero when unbiased: nan, as in PyTorch.
  std::vector<Sample> var_dim = reduced({F32, F64}, true, [](const Reduction& r) {
    return std::vector<Attr>{{"dim", r.dims}, {"unbiased", !r.keepdim}, {"keepdim", r.keepdim}};
  });
  add_refusals(var_dim, {"dim", std::vector<int64_t>{2}}, I64, floats_only, {{"dim", std::vector<int64_t>{0}}});
  builtins.add_samples("aten::var.dim", var_dim);

  std::vector<Sample> var_correction = reduced({F32, F64}, true, [](const Reduction& r) {
    return std::vector<Attr>{{"dim", r.dims}, {"correction", r.keepdim ? 0.5 : 2.0}, {"keepdim", r.keepdim}};
  });
  var_correction.push_back(good({tensor(F64, {7, 3}, Layout::Transposed)}, {{"dim", std::monostate{}}}));
  add_refusals(var_correction, {"dim", std::vector<int64_t>{2}}, I64, floats_only);
  builtins.add_samples("aten::var.correction", var_correction);
}

void register_extremes(BuiltinOps& builtins) {
  std::vector<Sample> amax = reduced({F32, F64, I32, I64, B}, true, dim_list);
  add_refusals(amax, {"dim", std::vector<int64_t>{2}}, F32, no_identity, {{"dim", std::vector<int64_t>{0}}});
  amax.back().inputs[0].shape = {0, 4};
  add_to_each(builtins, {"aten::amax", "aten::amin"}, amax);

  // Values in [-2, 2]: integer rows with ties, where the first index wins.
  std::vector<Sample> max = reduced({F32, F64, I32, I64, B}, false, one_dim);
  add_refusals(max, {"dim", int64_t{2}}, F32, no_identity, {{"dim", int64_t{0}}});
  max.back().inputs[0].shape = {0, 4};
  add_to_each(builtins, {"aten::max.dim", "aten::min.dim"}, max);

  std::vector<Sample> argmax = reduced({F32, F64, I32, I64}, false, one_dim);
  argmax.push_back(good({tensor(I64, {4, 5}, Layout::Transposed)}, {{"dim", std::monostate{}}}));
  argmax.push_back(good({tensor(F32, {})}, {{"dim", std::monostate{}}, {"keepdim", true}}));
  add_refusals(argmax, {"dim", int64_t{2}}, B, "self: expected a numeric dtype, got bool[3, 4]");
  argmax.push_back(bad({tensor(F32, {0, 4})}, no_identity, {{"dim", int64_t{0}}}));
  add_to_each(builtins, {"aten::argmax", "aten::argmin"}, argmax);
}

void register_products_and_tests(BuiltinOps& builtins) {
  // Factors near 1, so that float products stay well inside their range.
  std::vector<Sample> prod_dim = reduced({F32, F64}, false, one_dim, 0.5, 1.5);
  for (const Sample& sample : reduced({I32, I64, B}, false, one_dim, -2, 2)) prod_dim.push_back(sample);
  add_refusals(prod_dim, {"dim", int64_t{2}}, F32, "dtype: expected None or float32",
               {{"dim", int64_t{0}}, {"dtype", F64}});
  builtins.add_samples("aten::prod.dim_int", prod_dim);

  std::vector<Sample> prod = elementwise({F32, F64, I32, I64, B}, 0.5, 1.5);
  prod.push_back(bad({tensor(F32, {3})}, "dtype: expected None or float32", {{"dtype", F64}}));
  prod.push_back(bad({tensor(I32, {3})}, "dtype: expected None or int64", {{"dtype", F32}}));
  builtins.add_samples("aten::prod", prod);

  std::vector<Sample> any_dims = reduced({F32, I64, B}, true, dim_list, -1, 1);
  any_dims.push_back(good({tensor(B, {2, 3, 4})}, {{"dim", std::monostate{}}}));
  add_refusals(any_dims, {"dim", std::vector<int64_t>{2}}, F32, "dim: expected distinct dims",
               {{"dim", std::vector<int64_t>{0, 0}}});
  builtins.add_samples("aten::any.dims", any_dims);

  std::vector<Sample> any_dim = reduced({F32, I64, B}, false, one_dim, -1, 1);
  add_refusals(any_dim, {"dim", int64_t{2}}, F32, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got -3",
               {{"dim", int64_t{-3}}});
  builtins.add_samples("aten::any.dim", any_dim);

  std::vector<Sample> any = elementwise({F32, F64, I32, I64, B}, -1, 1);
  any.push_back(
      bad({tensor(DType::Complex64, {3})}, "self: expected float32, float64, int64, int32 or bool, got complex64"));
  any.push_back(bad({tensor(DType::Complex128, {2, 2})}, "got complex128"));
  builtins.add_samples("aten::any", any);

  // A running sum along the dim: each dtype, integers and bool into int64.
  std::vector<Sample> cumsum =
      reduced({F32, F64, I32, I64, B}, false, [](const Reduction& r) { return std::vector<Attr>{{"dim", r.dims[0]}}; });
  cumsum.push_back(good({tensor(F32, {3, 5})}, {{"dim", int64_t{1}}, {"dtype", F64}}));
  add_refusals(cumsum, {"dim", int64_t{2}}, F32, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got -3",
               {{"dim", int64_t{-3}}});
  builtins.add_samples("aten::cumsum", cumsum);
}

}  // namespace

void register_reduce_samples(BuiltinOps& builtins) {
  register_sums(builtins);
  register_extremes(builtins);
  register_products_and_tests(builtins);
}

}  // namespace opgraph::kernels::samples
