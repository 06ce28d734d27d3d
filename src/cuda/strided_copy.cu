#include "cuda/strided_copy.h"

#include <cstdint>

#include "cuda/cuda_check.h"

namespace opgraph::cuda {
namespace {

constexpr int kMaxRank = 12;

// Shape and both tensors' strides, passed to the kernel by value.
struct Layout {
  int rank;
  int64_t sizes[kMaxRank];
  int64_t dst_strides[kMaxRank];
  int64_t src_strides[kMaxRank];
};

// One element of `Item` bytes per iteration: the element's index is unravelled
// once and applied to both tensors' strides.
template <typename Item>
__global__ void copy_elements(Item* dst, const Item* src, Layout layout, int64_t numel) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < numel; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, dst_offset = 0, src_offset = 0;
    for (int d = layout.rank - 1; d >= 0; --d) {
      const int64_t index = rest % layout.sizes[d];
      rest /= layout.sizes[d];
      dst_offset += index * layout.dst_strides[d];
      src_offset += index * layout.src_strides[d];
    }
    dst[dst_offset] = src[src_offset];
  }
}

struct alignas(16) Bytes16 {
  uint64_t low, high;
};

template <typename Item>
void launch(const Tensor& dst, const Tensor& src, const Layout& layout, cudaStream_t stream) {
  constexpr int threads = 256;
  const int64_t blocks = std::min<int64_t>((dst.numel() + threads - 1) / threads, 65535);
  copy_elements<Item><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
      static_cast<Item*>(dst.data()), static_cast<const Item*>(src.data()), layout, dst.numel());
  OPGRAPH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void strided_copy(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
  if (dst.numel() == 0) return;
  if (dst.is_contiguous() && src.is_contiguous()) {
    OPGRAPH_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), dst.nbytes(), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  OPGRAPH_CHECK(dst.dim() <= kMaxRank, "copy on cuda: tensors of rank ", dst.dim(), " are not supported (at most ",
                kMaxRank, ")");
  Layout layout{static_cast<int>(dst.dim()), {}, {}, {}};
  for (int d = 0; d < layout.rank; ++d) {
    layout.sizes[d] = dst.shape()[d];
    layout.dst_strides[d] = dst.strides()[d];
    layout.src_strides[d] = src.strides()[d];
  }
  switch (dst.itemsize()) {
    case 1: return launch<uint8_t>(dst, src, layout, stream);
    case 2: return launch<uint16_t>(dst, src, layout, stream);
    case 4: return launch<uint32_t>(dst, src, layout, stream);
    case 8: return launch<uint64_t>(dst, src, layout, stream);
    case 16: return launch<Bytes16>(dst, src, layout, stream);
  }
  throw Error(detail::concat("copy on cuda: elements of ", dst.itemsize(), " bytes are not supported"));
}

}  // namespace opgraph::cuda
