// Ops that cut a tensor into a list of pieces along one dim: split,
// split_with_sizes, chunk and unbind. Each returns a Tensor[] whose length
// the shape function decides from the input's size and the attributes.
#include <cstring>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// How the dim is cut: the extent of each piece along it.
using Pieces = std::vector<int64_t>;
int64_t split_dim(const TensorMeta& self, int64_t dim) {
  OPGRAPH_CHECK(self.dim() > 0, "self: cannot split a scalar");
  return wrap_dim(dim, self.dim(), "dim");
}

// Pieces of `split_size`, the last one shorter; at least one piece.
Pieces pieces_of_size(int64_t size, int64_t split_size) {
  const int64_t count = split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  Pieces pieces(static_cast<size_t>(count), split_size);
  pieces.back() = size - split_size * (count - 1);
  return pieces;
}

Pieces split(int64_t size, int64_t split_size) {
  OPGRAPH_CHECK(split_size > 0 || (split_size == 0 && size == 0), "split_size: expected a positive size, got ",
                split_size, " for a dim of size ", size);
  return pieces_of_size(size, split_size);
}

Pieces split_with_sizes(int64_t size, std::span<const int64_t> sizes) {
  int64_t total = 0;
  for (int64_t piece : sizes) {
    OPGRAPH_CHECK(piece >= 0, "split_sizes: expected non-negative sizes, got ", shape_str(sizes));
    total += piece;
  }
  OPGRAPH_CHECK(total == size, "split_sizes: ", shape_str(sizes), " add up to ", total, ", the dim has size ", size);
  return Pieces(sizes.begin(), sizes.end());
}

Pieces chunk(int64_t size, int64_t chunks) {
  OPGRAPH_CHECK(chunks > 0, "chunks: expected a positive number of chunks, got ", chunks);
  const int64_t split_size = (size + chunks - 1) / chunks;
  // An empty dim: PyTorch gives `chunks` empty pieces.
  return split_size == 0 ? Pieces(static_cast<size_t>(chunks), 0) : pieces_of_size(size, split_size);
}

Pieces unbind(int64_t size) { return Pieces(static_cast<size_t>(size), 1); }

// The shape function and kernels of the op whose pieces kPieces cuts: it takes
// the dim's size and the op's attributes before `dim`.
template <auto kPieces, typename Signature = decltype(kPieces)>
struct Split;

template <auto kPieces, typename... A>
struct Split<kPieces, Pieces (*)(int64_t, A...)> {
  template <bool kDropDim>
  static std::vector<TensorMeta> shape(const TensorMeta& self, A... attributes, int64_t dim) {
    const int64_t wrapped = split_dim(self, dim);
    std::vector<TensorMeta> outputs;
    for (int64_t piece : kPieces(self.shape[wrapped], attributes...)) {
      TensorMeta meta = self;
      meta.shape[wrapped] = piece;
      if (kDropDim) meta.shape.erase(meta.shape.begin() + wrapped);
      outputs.push_back(std::move(meta));
    }
    return outputs;
  }

  // Each piece is `outer` blocks of contiguous bytes: one memcpy per block, or
  // with kReference one per element.
  template <bool kReference>
  static void kernel(const KernelContext&, const Tensor& self, A... attributes, int64_t dim,
                     std::span<const Tensor> outputs) {
    const DimLayout layout = layout_around(self.shape(), split_dim(self.meta(), dim));
    const Pieces pieces = kPieces(layout.size, attributes...);
    const auto item = static_cast<int64_t>(self.itemsize());
    const auto* x = static_cast<const char*>(self.data());
    for (int64_t k = 0, start = 0; k < std::ssize(pieces); start += pieces[k++]) {
      const int64_t block = pieces[k] * layout.inner;  // elements of one outer block of the piece
      if (block == 0) continue;
      auto* y = static_cast<char*>(outputs[k].data());
      for (int64_t o = 0; o < layout.outer; ++o) {
        const char* from = x + (o * layout.size + start) * layout.inner * item;
        char* to = y + o * block * item;
        if constexpr (kReference) {
          for (int64_t i = 0; i < block; ++i) std::memcpy(to + i * item, from + i * item, static_cast<size_t>(item));
        } else {
          std::memcpy(to, from, static_cast<size_t>(block * item));
        }
      }
    }
  }
};

template <auto kPieces, bool kDropDim = false>
void define_split(BuiltinOps& builtins, const char* schema,
                  std::source_location where = std::source_location::current()) {
  using Op = Split<kPieces>;
  define(builtins,
         {.schema = schema,
          .shape = Op::template shape<kDropDim>,
          .cpu = Op::template kernel<false>,
          .reference = Op::template kernel<true>},
         where);
}

}  // namespace

void register_split_ops(BuiltinOps& builtins) {
  define_split<split>(builtins, "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  define_split<split_with_sizes>(
      builtins, "aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]");
  define_split<chunk>(builtins, "aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
  define_split<unbind, true>(builtins, "aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]");
}

}  // namespace opgraph::kernels
