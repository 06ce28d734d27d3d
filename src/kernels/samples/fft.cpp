// Samples of the discrete Fourier transforms (fft.cpp): real to complex,
// one- and two-sided, complex to complex both ways and complex to real of
// even and odd lengths, over one dim and several, in each normalization, on
// transposed and strided inputs and lengths of one; inputs of the wrong
// kind, dims out of range, unknown normalizations and empty lengths are
// refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

constexpr DType C64 = DType::Complex64;

// (input, dims) over which every transform is sampled; real inputs for r2c.
const std::vector<std::pair<SampleTensor, Shape>>& transformed() {
  static const std::vector<std::pair<SampleTensor, Shape>> cases = {
      {tensor(F32, {4, 6}), {1}},
      {tensor(F32, {4, 6}), {0, 1}},
      {tensor(F32, {7}), {0}},
      {tensor(F32, {3, 1}), {-1}},
      {tensor(F32, {5, 6}, Layout::Transposed), {0}},
      {tensor(F32, {2, 3, 10}, Layout::Strided), {2, 1}},
      {tensor(F32, {0, 5}), {1}},
  };
  return cases;
}

// Each case in `dtypes`, with `attrs(dims, normalization, k)`.
template <typename Attrs>
std::vector<Sample> transforms(std::initializer_list<DType> dtypes, Attrs attrs) {
  std::vector<Sample> table;
  int64_t k = 0;
  for (DType dtype : dtypes) {
    for (auto [input, dims] : transformed()) {
      input.dtype = dtype;
      table.push_back(good({input}, attrs(dims, k % 3, k)));
      ++k;
    }
  }
  return table;
}

}  // namespace

void register_fft_samples(BuiltinOps& builtins) {
  const std::string bad_norm = "normalization: expected 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got 3";
  builtins.add_samples("aten::_fft_r2c",
                       with(transforms({F32, F64},
                                       [](const Shape& dims, int64_t norm, int64_t k) {
                                         return std::vector<Attr>{
                                             {"dim", dims}, {"normalization", norm}, {"onesided", k % 2 == 0}};
                                       }),
                            {bad({tensor(C64, {4, 6})}, "self: expected float32 or float64, got complex64[4, 6]",
                                 {{"dim", Shape{1}}, {"normalization", int64_t{0}}, {"onesided", true}}),
                             bad({tensor(F32, {4, 6})}, "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2",
                                 {{"dim", Shape{2}}, {"normalization", int64_t{0}}, {"onesided", true}}),
                             bad({tensor(F32, {4, 6})}, bad_norm,
                                 {{"dim", Shape{1}}, {"normalization", int64_t{3}}, {"onesided", true}})}));

  builtins.add_samples("aten::_fft_c2c",
                       with(transforms({C64, DType::Complex128},
                                       [](const Shape& dims, int64_t norm, int64_t k) {
                                         return std::vector<Attr>{
                                             {"dim", dims}, {"normalization", norm}, {"forward", k % 2 == 0}};
                                       }),
                            {bad({tensor(F32, {4, 6})}, "self: expected complex64 or complex128, got float32",
                                 {{"dim", Shape{1}}, {"normalization", int64_t{1}}, {"forward", true}}),
                             bad({tensor(C64, {4, 6})}, bad_norm,
                                 {{"dim", Shape{1}}, {"normalization", int64_t{3}}, {"forward", true}})}));

  // The last dim's output length: even (2 (n - 1)) and odd (2 n - 1) alternately.
  std::vector<Sample> c2r;
  for (const Sample& sample : transforms({C64, DType::Complex128}, [](const Shape& dims, int64_t norm, int64_t) {
         return std::vector<Attr>{{"dim", dims}, {"normalization", norm}};
       })) {
    const Shape& shape = sample.inputs[0].shape;
    const Shape& dims = std::get<std::vector<int64_t>>(sample.attrs[0].second);
    const int64_t last = dims.back() < 0 ? dims.back() + static_cast<int64_t>(shape.size()) : dims.back();
    const int64_t n = shape[static_cast<size_t>(last)];
    Sample with_size = sample;
    with_size.attrs.emplace_back("last_dim_size", c2r.size() % 2 || n < 2 ? 2 * n - 1 : 2 * (n - 1));
    if (n == 0) std::get<int64_t>(with_size.attrs.back().second) = 1;
    c2r.push_back(std::move(with_size));
  }
  c2r.push_back(bad({tensor(C64, {4, 4})}, "last_dim_size: expected at least 1, got 0",
                    {{"dim", Shape{1}}, {"normalization", int64_t{0}}, {"last_dim_size", int64_t{0}}}));
  c2r.push_back(bad({tensor(F32, {4, 4})}, "self: expected complex64 or complex128, got float32",
                    {{"dim", Shape{1}}, {"normalization", int64_t{0}}, {"last_dim_size", int64_t{6}}}));
  builtins.add_samples("aten::_fft_c2r", c2r);
}

}  // namespace opgraph::kernels::samples
