// Shape ops: view, reshape, permute, transpose, t, flatten, unflatten, slice,
// select, squeeze, unsqueeze, expand, flip, diagonal, as_strided, repeat,
// pixel_shuffle, pixel_unshuffle, and embedding.
//
// Every view op is described by one function from the input's shape to the
// layout of the result inside the (contiguous) input: shape, strides and
// offset. The shape function keeps the shape; the kernel copies the strided
// view into the caller's output, since outputs are allocated by the caller.
// flip, diagonal, repeat and the pixel shuffles are copies in ATen but views
// of this kind all the same: flip walks dims with negative strides, repeat a
// dim with stride 0, a pixel shuffle its channels' factors as spatial dims.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <numeric>

#include "kernels/cpu/util/view_layout.h"
#include "kernels/shape/checked.h"

namespace opgraph::kernels {
namespace {

int64_t wrap(int64_t dim, int64_t rank, const char* argument) {
  const int64_t extent = std::max<int64_t>(rank, 1);  // a scalar takes dim 0 and -1
  OPGRAPH_CHECK(dim >= -extent && dim < extent, argument, ": dimension ", dim, " is out of range for rank ", rank);
  return dim < 0 ? dim + extent : dim;
}

Layout identity(const TensorMeta& self) { return {self.shape, contiguous_strides(self.shape), 0}; }

// `size` with its one -1 filled in so the element count matches.
Shape infer_size(std::span<const int64_t> given, int64_t numel, const char* argument) {
  Shape size(given.begin(), given.end());
  auto missing = std::find(size.begin(), size.end(), -1);
  OPGRAPH_CHECK(std::count(size.begin(), size.end(), -1) <= 1, argument, ": only one dimension can be -1, got ",
                shape_str(size));
  int64_t known = 1;
  for (int64_t extent : size) {
    OPGRAPH_CHECK(extent >= -1, argument, ": invalid extent in ", shape_str(size));
    if (extent != -1) known = checked_mul(known, extent, argument);
  }
  if (missing != size.end()) {
    OPGRAPH_CHECK(known != 0 && numel % known == 0, argument, ": cannot infer -1 in ", shape_str(size), " for ", numel,
                  " elements");
    *missing = numel / known;
  }
  OPGRAPH_CHECK(shape_numel(size) == numel, argument, ": shape ", shape_str(size), " holds ", shape_numel(size),
                " elements, the input has ", numel);
  return size;
}

Layout view(const TensorMeta& self, Ints size) {
  Shape shape = infer_size(size, self.numel(), "size");
  return {shape, contiguous_strides(shape), 0};
}

Layout reshape(const TensorMeta& self, Ints shape_given) {
  Shape shape = infer_size(shape_given, self.numel(), "shape");
  return {shape, contiguous_strides(shape), 0};
}

Layout permute(const TensorMeta& self, Ints dims) {
  OPGRAPH_CHECK(static_cast<int64_t>(dims.size()) == self.dim(), "dims: expected ", self.dim(),
                " dimensions for input ", self.str(), ", got ", shape_str(dims));
  Layout in = identity(self), out;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    int64_t w = wrap(d, self.dim(), "dims");
    OPGRAPH_CHECK(!seen[w], "dims: dimension ", d, " repeats in ", shape_str(dims));
    seen[w] = true;
    out.shape.push_back(in.shape[w]);
    out.strides.push_back(in.strides[w]);
  }
  return out;
}

Layout swap(const TensorMeta& self, int64_t dim0, int64_t dim1) {
  Layout layout = identity(self);
  if (self.dim() == 0) return layout;
  dim0 = wrap(dim0, self.dim(), "dim0");
  dim1 = wrap(dim1, self.dim(), "dim1");
  std::swap(layout.shape[dim0], layout.shape[dim1]);
  std::swap(layout.strides[dim0], layout.strides[dim1]);
  return layout;
}

Layout transpose(const TensorMeta& self, int64_t dim0, int64_t dim1) { return swap(self, dim0, dim1); }

Layout t(const TensorMeta& self) {
  OPGRAPH_CHECK(self.dim() <= 2, "self: expected a tensor of rank 2 or less, got ", self.str());
  return self.dim() < 2 ? identity(self) : swap(self, 0, 1);
}

Layout flatten(const TensorMeta& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return {{1}, {1}, 0};
  const int64_t start = wrap(start_dim, self.dim(), "start_dim");
  const int64_t end = wrap(end_dim, self.dim(), "end_dim");
  OPGRAPH_CHECK(start <= end, "start_dim ", start, " must not come after end_dim ", end);
  Shape shape(self.shape.begin(), self.shape.begin() + start);
  shape.push_back(shape_numel(std::span(self.shape).subspan(start, end - start + 1)));
  shape.insert(shape.end(), self.shape.begin() + end + 1, self.shape.end());
  return {shape, contiguous_strides(shape), 0};
}

}  // namespace

Layout slice_layout(const TensorMeta& self, int64_t dim_given, std::optional<int64_t> start_given,
                    std::optional<int64_t> end_given, int64_t step) {
  OPGRAPH_CHECK(self.dim() > 0, "self: cannot slice a scalar");
  const int64_t dim = wrap(dim_given, self.dim(), "dim");
  OPGRAPH_CHECK(step > 0, "step: expected a positive step, got ", step);
  const int64_t n = self.shape[dim];
  auto bound = [&](std::optional<int64_t> given, int64_t fallback) {
    const int64_t i = given.value_or(fallback);
    return std::clamp(i < 0 ? i + n : i, int64_t{0}, n);
  };
  const int64_t start = bound(start_given, 0);
  const int64_t end = std::max(bound(end_given, n), start);
  Layout layout = identity(self);
  layout.offset = start * layout.strides[dim];
  layout.shape[dim] = (end - start + step - 1) / step;
  layout.strides[dim] *= step;
  return layout;
}

// Drops `dim` at `index`: the slice of that one position.
Layout select_layout(const TensorMeta& self, int64_t dim_given, int64_t index) {
  OPGRAPH_CHECK(self.dim() > 0, "self: cannot select from a scalar");
  const int64_t dim = wrap(dim_given, self.dim(), "dim");
  const int64_t n = self.shape[dim];
  OPGRAPH_CHECK(index >= -n && index < n, "index: ", index, " is out of range for dim ", dim, " of size ", n);
  Layout layout = identity(self);
  layout.offset = (index < 0 ? index + n : index) * layout.strides[dim];
  layout.shape.erase(layout.shape.begin() + dim);
  layout.strides.erase(layout.strides.begin() + dim);
  return layout;
}

namespace {

// Splits `dim` into `sizes` (one of them may be -1).
Layout unflatten(const TensorMeta& self, int64_t dim_given, Ints sizes) {
  OPGRAPH_CHECK(self.dim() > 0, "self: cannot unflatten a scalar");
  const int64_t dim = wrap(dim_given, self.dim(), "dim");
  OPGRAPH_CHECK(!sizes.empty(), "sizes: expected at least one size, got []");
  Shape shape(self.shape.begin(), self.shape.begin() + dim);
  const Shape inner = infer_size(sizes, self.shape[dim], "sizes");
  shape.insert(shape.end(), inner.begin(), inner.end());
  shape.insert(shape.end(), self.shape.begin() + dim + 1, self.shape.end());
  return {shape, contiguous_strides(shape), 0};
}

// squeeze.dims: drops each of `dim` that has extent 1.
Layout squeeze_dims(const TensorMeta& self, Ints dims) {
  Layout in = identity(self), out;
  std::vector<bool> drop(self.shape.size(), false);
  for (int64_t d : dims) {
    if (self.dim() > 0) drop[wrap(d, self.dim(), "dim")] = true;
  }
  for (size_t d = 0; d < self.shape.size(); ++d) {
    if (drop[d] && self.shape[d] == 1) continue;
    out.shape.push_back(in.shape[d]);
    out.strides.push_back(in.strides[d]);
  }
  return out;
}

Layout squeeze(const TensorMeta& self, int64_t dim_given) {
  Layout layout = identity(self);
  if (self.dim() == 0) return layout;
  const int64_t dim = wrap(dim_given, self.dim(), "dim");
  if (layout.shape[dim] == 1) {
    layout.shape.erase(layout.shape.begin() + dim);
    layout.strides.erase(layout.strides.begin() + dim);
  }
  return layout;
}

Layout unsqueeze(const TensorMeta& self, int64_t dim_given) {
  const int64_t dim = wrap(dim_given, self.dim() + 1, "dim");
  Layout layout = identity(self);
  const int64_t stride = dim < self.dim() ? layout.shape[dim] * layout.strides[dim] : 1;
  layout.shape.insert(layout.shape.begin() + dim, 1);
  layout.strides.insert(layout.strides.begin() + dim, stride);
  return layout;
}

// Broadcasts size-1 (and missing leading) dimensions with stride 0.
Layout expand(const TensorMeta& self, Ints size, bool) {
  OPGRAPH_CHECK(size.size() >= self.shape.size(), "size: ", shape_str(size), " has fewer dimensions than input ",
                self.str());
  const Layout in = identity(self);
  const size_t lead = size.size() - self.shape.size();
  Layout out{Shape(size.size()), Strides(size.size(), 0), 0};
  for (size_t i = 0; i < size.size(); ++i) {
    const int64_t have = i < lead ? 1 : in.shape[i - lead];
    const int64_t want = size[i] == -1 && i >= lead ? have : size[i];
    OPGRAPH_CHECK(want >= 0 && (have == want || have == 1), "size: cannot expand ", self.str(), " to ",
                  shape_str(size));
    out.shape[i] = want;
    if (i >= lead && have == want) out.strides[i] = in.strides[i - lead];
  }
  return out;
}

// Reverses each of `dims`: its stride negated, starting from its last element.
Layout flip(const TensorMeta& self, Ints dims) {
  Layout layout = identity(self);
  std::vector<bool> seen(std::max<int64_t>(self.dim(), 1), false);
  for (int64_t d : dims) {
    const int64_t w = wrap(d, self.dim(), "dims");
    OPGRAPH_CHECK(!seen[w], "dims: dimension ", d, " repeats in ", shape_str(dims));
    seen[w] = true;
    if (self.dim() == 0 || layout.shape[w] == 0) continue;
    layout.offset += (layout.shape[w] - 1) * layout.strides[w];
    layout.strides[w] = -layout.strides[w];
  }
  return layout;
}

// The elements (i, i + offset) of dims dim1 and dim2 as a last dim, which the
// other dims keep in front of.
Layout diagonal(const TensorMeta& self, int64_t offset, int64_t dim1_given, int64_t dim2_given) {
  OPGRAPH_CHECK(self.dim() >= 2, "self: expected a tensor of rank 2 or more, got ", self.str());
  const int64_t dim1 = wrap(dim1_given, self.dim(), "dim1");
  const int64_t dim2 = wrap(dim2_given, self.dim(), "dim2");
  OPGRAPH_CHECK(dim1 != dim2, "dim1 and dim2: expected two different dims, got ", dim1, " twice");
  const Layout in = identity(self);
  const int64_t rows = self.shape[dim1], cols = self.shape[dim2];
  // An offset beyond either extent leaves an empty diagonal (ATen allows any offset).
  const int64_t length = offset >= 0 ? std::max<int64_t>(std::min(rows, cols - std::min(offset, cols)), 0)
                                     : std::max<int64_t>(std::min(rows - std::min(-offset, rows), cols), 0);
  Layout out;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == dim1 || d == dim2) continue;
    out.shape.push_back(in.shape[d]);
    out.strides.push_back(in.strides[d]);
  }
  out.shape.push_back(length);
  out.strides.push_back(in.strides[dim1] + in.strides[dim2]);
  if (length > 0) out.offset = offset >= 0 ? offset * in.strides[dim2] : -offset * in.strides[dim1];
  return out;
}

// Reads the input's elements, in row-major order, as the storage that `size`,
// `stride` and `storage_offset` describe. Every element read must lie inside
// the input: ATen would read whatever its storage holds there.
Layout as_strided(const TensorMeta& self, Ints size, Ints stride, std::optional<int64_t> storage_offset) {
  OPGRAPH_CHECK(size.size() == stride.size(), "size and stride: expected as many strides as sizes, got ",
                shape_str(size), " and ", shape_str(stride));
  const int64_t offset = storage_offset.value_or(0);
  OPGRAPH_CHECK(offset >= 0, "storage_offset: expected a non-negative offset, got ", offset);
  int64_t last = offset;  // the furthest element read
  bool empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    OPGRAPH_CHECK(size[d] >= 0 && stride[d] >= 0, "size and stride: expected non-negative values, got ",
                  shape_str(size), " and ", shape_str(stride));
    empty = empty || size[d] == 0;
    if (size[d] > 0) last = checked_add(last, checked_mul(size[d] - 1, stride[d], "stride"), "stride");
  }
  OPGRAPH_CHECK(empty || last < self.numel(), "size and stride: ", shape_str(size), " with strides ", shape_str(stride),
                " and offset ", offset, " read element ", last, ", beyond input ", self.str());
  return {Shape(size.begin(), size.end()), Strides(stride.begin(), stride.end()), empty ? 0 : offset};
}

// Tiles self `repeats` times along each dim (leading repeats add dims): a view
// of shape [r0, s0, r1, s1, ...] that walks each rI with stride 0, read as
// [r0 * s0, r1 * s1, ...].
Layout repeat(const TensorMeta& self, Ints repeats) {
  OPGRAPH_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim(), "repeats: expected at least ", self.dim(),
                " values for input ", self.str(), ", got ", shape_str(repeats));
  const size_t lead = repeats.size() - self.shape.size();
  const Layout in = identity(self);
  Layout out{{}, {}, 0, Shape{}};
  for (size_t d = 0; d < repeats.size(); ++d) {
    OPGRAPH_CHECK(repeats[d] >= 0, "repeats: expected non-negative values, got ", shape_str(repeats));
    const int64_t extent = d < lead ? 1 : in.shape[d - lead];
    out.shape.insert(out.shape.end(), {repeats[d], extent});
    out.strides.insert(out.strides.end(), {0, d < lead ? 0 : in.strides[d - lead]});
    out.result->push_back(checked_mul(repeats[d], extent, "repeats"));
  }
  return out;
}

// The factor of pixel_shuffle and pixel_unshuffle, and the leading dims of
// `self` before its last three (channels, height, width).
int64_t shuffle_factor(const TensorMeta& self, int64_t factor, const char* name) {
  OPGRAPH_CHECK(factor >= 1, name, ": expected at least 1, got ", factor);
  OPGRAPH_CHECK(self.dim() >= 3, "self: expected rank 3 or more (..., channels, height, width), got ", self.str());
  return factor;
}

// The first `lead` dims of `self` as they are, the result's shape too.
Layout leading_dims(const TensorMeta& self, size_t lead) {
  const Layout in = identity(self);
  const Shape shape(self.shape.begin(), self.shape.begin() + lead);
  return {shape, Strides(in.strides.begin(), in.strides.begin() + lead), 0, shape};
}

// [..., C * r * r, H, W] -> [..., C, H * r, W * r]: out[..., c, h * r + i,
// w * r + j] = self[..., c * r * r + i * r + j, h, w], a view of shape
// [..., C, H, r, W, r].
Layout pixel_shuffle(const TensorMeta& self, int64_t upscale_factor) {
  const int64_t r = shuffle_factor(self, upscale_factor, "upscale_factor");
  const size_t lead = self.shape.size() - 3;
  const int64_t channels = self.shape[lead], height = self.shape[lead + 1], width = self.shape[lead + 2];
  OPGRAPH_CHECK(channels % (r * r) == 0, "self: expected channels divisible by upscale_factor^2 = ", r * r, ", got ",
                self.str());
  Layout out = leading_dims(self, lead);
  const int64_t plane = height * width;
  out.shape.insert(out.shape.end(), {channels / (r * r), height, r, width, r});
  out.strides.insert(out.strides.end(), {r * r * plane, width, r * plane, 1, plane});
  out.result->insert(out.result->end(), {channels / (r * r), height * r, width * r});
  return out;
}

// [..., C, H * r, W * r] -> [..., C * r * r, H, W]: pixel_shuffle undone, a
// view of shape [..., C, r, r, H, W].
Layout pixel_unshuffle(const TensorMeta& self, int64_t downscale_factor) {
  const int64_t r = shuffle_factor(self, downscale_factor, "downscale_factor");
  const size_t lead = self.shape.size() - 3;
  const int64_t channels = self.shape[lead], height = self.shape[lead + 1], width = self.shape[lead + 2];
  OPGRAPH_CHECK(height % r == 0 && width % r == 0, "self: expected height and width divisible by downscale_factor ", r,
                ", got ", self.str());
  Layout out = leading_dims(self, lead);
  out.shape.insert(out.shape.end(), {channels, r, r, height / r, width / r});
  out.strides.insert(out.strides.end(), {height * width, width, 1, r * width, r});
  out.result->insert(out.result->end(), {channels * r * r, height / r, width / r});
  return out;
}

// Copies self's elements through `layout` into out, one at a time.
void copy_through(const Layout& layout, const Tensor& self, const Tensor& output) {
  const auto* in = static_cast<const char*>(self.data());
  auto* out = static_cast<char*>(output.data());
  const size_t item = self.itemsize();
  std::vector<int64_t> index(layout.shape.size(), 0);
  for (int64_t flat = 0; flat < output.numel(); ++flat) {
    int64_t source = layout.offset;
    for (size_t d = 0; d < index.size(); ++d) source += index[d] * layout.strides[d];
    std::memcpy(out + flat * static_cast<int64_t>(item), in + source * static_cast<int64_t>(item), item);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < layout.shape[d]) break;
      index[d] = 0;
    }
  }
}

// The typed shape function and kernels of the view whose layout kLayout
// makes from self and the op's attributes.
template <auto kLayout, typename Signature = decltype(kLayout)>
struct View;

template <auto kLayout, typename... A>
struct View<kLayout, Layout (*)(const TensorMeta&, A...)> {
  static TensorMeta shape(const TensorMeta& self, A... attributes) {
    const Layout layout = kLayout(self, attributes...);
    return {self.dtype, layout.result.value_or(layout.shape)};
  }

  static void cpu(const KernelContext&, const Tensor& self, A... attributes, const Tensor& out) {
    const Layout layout = kLayout(self.meta(), attributes...);
    Tensor result = layout.result ? out.view(layout.shape) : out;
    result.copy_(self.as_strided(layout.shape, layout.strides, layout.offset));
  }

  // One element at a time through the layout's index arithmetic.
  static void reference(const KernelContext&, const Tensor& self, A... attributes, const Tensor& out) {
    copy_through(kLayout(self.meta(), attributes...), self, out);
  }
};

template <auto kLayout>
void define_view(BuiltinOps& builtins, const char* schema, const char* backward = nullptr,
                 std::source_location where = std::source_location::current(), bool reshapes_input = false) {
  define(builtins,
         {.schema = schema,
          .shape = View<kLayout>::shape,
          .cpu = View<kLayout>::cpu,
          .reference = View<kLayout>::reference,
          .backward = backward,
          .reshapes_input = reshapes_input},
         where);
}

// A view whose output is its input's elements in order, only shaped anew
// (OpDef::reshapes_input).
template <auto kLayout>
void define_reshape(BuiltinOps& builtins, const char* schema, const char* backward = nullptr,
                    std::source_location where = std::source_location::current()) {
  define_view<kLayout>(builtins, schema, backward, where, /*reshapes_input=*/true);
}

// embedding: out[..., :] = weight[indices[...], :].
TensorMeta embedding_shape(const TensorMeta& weight, const TensorMeta& indices, int64_t, bool, bool) {
  OPGRAPH_CHECK(weight.dim() == 2, "weight: expected rank 2 (num_embeddings, embedding_dim), got ", weight.str());
  OPGRAPH_CHECK(indices.dtype == DType::Int64 || indices.dtype == DType::Int32,
                "indices: expected int64 or int32, got ", indices.str());
  Shape shape = indices.shape;
  shape.push_back(weight.shape[1]);
  return {weight.dtype, shape};
}

// The row that position i of `indices` (int64 or int32) names; an error when
// it is not one of weight's `rows`.
int64_t embedding_row(const Tensor& indices, int64_t i, int64_t rows) {
  const int64_t row = indices.dtype() == DType::Int64 ? indices.data_ptr<int64_t>()[i] : indices.data_ptr<int32_t>()[i];
  OPGRAPH_CHECK(row >= 0 && row < rows, "indices: index ", row, " at position ", i, " is out of range for ", rows,
                " embeddings");
  return row;
}

// Rows are copied whole.
void embedding_cpu(const KernelContext&, const Tensor& weight, const Tensor& indices, int64_t, bool, bool,
                   const Tensor& out) {
  const size_t row_bytes = static_cast<size_t>(weight.size(1)) * weight.itemsize();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    std::memcpy(static_cast<char*>(out.data()) + i * row_bytes,
                static_cast<const char*>(weight.data()) + embedding_row(indices, i, weight.size(0)) * row_bytes,
                row_bytes);
  }
}

// Element by element: out[i, j] = weight[indices[i], j], each element its
// itemsize bytes, whatever the dtype.
void embedding_reference(const KernelContext&, const Tensor& weight, const Tensor& indices, int64_t, bool, bool,
                         const Tensor& out) {
  const int64_t columns = weight.size(1);
  const size_t item = weight.itemsize();
  const auto* from = static_cast<const std::byte*>(weight.data());
  auto* to = static_cast<std::byte*>(out.data());
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t row = embedding_row(indices, i, weight.size(0));
    for (int64_t j = 0; j < columns; ++j) {
      std::memcpy(to + (i * columns + j) * item, from + (row * columns + j) * item, item);
    }
  }
}

}  // namespace

void register_shape_ops(BuiltinOps& builtins) {
  define_reshape<view>(builtins, "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", "opgraph::view_backward");
  define_reshape<view>(builtins, "aten::_unsafe_view(Tensor self, SymInt[] size) -> Tensor");
  define_reshape<reshape>(builtins, "aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)",
                          "opgraph::reshape_backward");
  define_view<permute>(builtins, "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)");
  define_view<transpose>(builtins, "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  define_view<t>(builtins, "aten::t(Tensor(a) self) -> Tensor(a)");
  define_reshape<flatten>(builtins,
                          "aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
                          "opgraph::flatten_backward");
  define_view<slice_layout>(builtins,
                            "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
                            "SymInt step=1) -> Tensor(a)");
  define_reshape<squeeze>(builtins, "aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)");
  define_reshape<squeeze_dims>(builtins, "aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)");
  define_view<select_layout>(builtins, "aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)");
  define_reshape<unflatten>(builtins, "aten::unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)");
  define_reshape<unsqueeze>(builtins, "aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)");
  define_view<expand>(builtins, "aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)");
  define_view<flip>(builtins, "aten::flip(Tensor self, int[] dims) -> Tensor");
  define_view<diagonal>(builtins, "aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)");
  define_view<as_strided>(builtins,
                          "aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
                          "SymInt? storage_offset=None) -> Tensor(a)");
  define_view<repeat>(builtins, "aten::repeat(Tensor self, SymInt[] repeats) -> Tensor");
  define_view<pixel_shuffle>(builtins, "aten::pixel_shuffle(Tensor self, int upscale_factor) -> Tensor");
  define_view<pixel_unshuffle>(builtins, "aten::pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor");
  define(builtins, {.schema = "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
                              "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
                    .shape = embedding_shape,
                    .cpu = embedding_cpu,
                    .reference = embedding_reference});
}

}  // namespace opgraph::kernels
