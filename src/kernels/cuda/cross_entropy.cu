// Softmax cross-entropy of (N, C) logits against class indices on CUDA (see
// kernels/cpu/ops/softmax_cross_entropy.cpp for the maths). A block takes a row;
// rows add their losses and count into device accumulators that a last
// one-thread kernel turns into the mean. A target that is not a class is
// found on the device and reported by row, as the CPU kernel reports it.
#include <cmath>
#include <limits>

#include "cuda/cuda_check.h"
#include "kernels/cuda/reduce_block.cuh"
#include "kernels/cuda/register.h"
#include "kernels/define.h"

namespace opgraph::cuda {
namespace {

constexpr int kThreads = 256;

struct Options {
  int64_t ignore_index;
  double label_smoothing;
};

// What the rows accumulate: the sum of their losses, how many count, and the
// first row whose target is not a class (-1 if none).
struct Totals {
  double loss;
  unsigned long long count;
  long long bad_row;
};

__device__ bool counts(int64_t target, int64_t classes, int64_t ignore_index, int64_t row, Totals* totals) {
  if (target == ignore_index) return false;
  if (target < 0 || target >= classes) {
    atomicMin(&totals->bad_row, static_cast<long long>(row));
    return false;
  }
  return true;
}

template <typename T>
__global__ void forward_rows(const T* logits, const int64_t* target, T* probabilities, int64_t classes, Options o,
                             Totals* totals) {
  __shared__ T shared[32];
  const int64_t row = blockIdx.x;
  const T* x = logits + row * classes;
  T* p = probabilities + row * classes;
  const SoftmaxStats<T> stats = softmax_stats(x, classes, shared);
  const int64_t t = target[row];
  const bool counted = counts(t, classes, o.ignore_index, row, totals);
  T loss = 0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    const T log_p = x[c] - stats.max - stats.log_sum;
    p[c] = exp(log_p);
    if (counted) loss -= T((c == t ? 1 - o.label_smoothing : 0.0) + o.label_smoothing / classes) * log_p;
  }
  loss = block_reduce(loss, Sum{}, shared);
  if (threadIdx.x == 0 && counted) {
    atomicAdd(&totals->loss, static_cast<double>(loss));
    atomicAdd(&totals->count, 1ull);
  }
}

// The mean over counted rows: NaN when none counts, as PyTorch gives.
template <typename T>
__global__ void mean_loss(const Totals* totals, T* loss) {
  *loss = totals->count == 0 ? T(NAN) : T(totals->loss / double(totals->count));
}

__global__ void count_rows(const int64_t* target, int64_t rows, int64_t classes, int64_t ignore_index, Totals* totals) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += int64_t(gridDim.x) * blockDim.x) {
    if (counts(target[row], classes, ignore_index, row, totals)) atomicAdd(&totals->count, 1ull);
  }
}

template <typename T>
__global__ void backward_elements(const T* grad_loss, const T* p, const int64_t* target, T* dx, int64_t rows,
                                  int64_t classes, Options o, const Totals* totals) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * classes;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / classes, c = i % classes, t = target[row];
    T g = 0;
    if (t != o.ignore_index && t >= 0 && t < classes) {
      const T q = T((c == t ? 1 - o.label_smoothing : 0.0) + o.label_smoothing / classes);
      g = *grad_loss * (p[i] - q) / T(totals->count);
    }
    dx[i] = g;
  }
}

Tensor zero_totals(Device device) {
  Tensor totals = Tensor::empty({sizeof(Totals)}, DType::UInt8, device);
  const Totals initial{0.0, 0, std::numeric_limits<long long>::max()};
  totals.copy_(Tensor::from_blob(const_cast<Totals*>(&initial), {sizeof(Totals)}, {}, DType::UInt8));
  return totals;
}

// Copies the totals back (which waits for the kernels) and reports a bad target.
void check_targets(const Tensor& totals, int64_t classes) {
  Totals host{};
  Tensor::from_blob(&host, {sizeof(Totals)}, {}, DType::UInt8).copy_(totals);
  OPGRAPH_CHECK(host.bad_row == std::numeric_limits<long long>::max(), "target: row ", host.bad_row,
                " is not a class index in [0, ", classes, ") nor ignore_index");
}

void forward_kernel(const KernelContext& context, const Tensor& logits, const Tensor& target, int64_t ignore_index,
                    double label_smoothing, const Tensor& loss, const Tensor& probabilities) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  const Options o{ignore_index, label_smoothing};
  const cudaStream_t stream = stream_of(context);
  const Tensor totals = zero_totals(context.device);
  auto* device_totals = static_cast<Totals*>(totals.data());
  kernels::dispatch_floating(logits.dtype(), "logits", [&](auto zero) {
    using T = decltype(zero);
    for (int64_t first = 0; first < rows; first += 65535) {
      const int64_t count = std::min<int64_t>(rows - first, 65535);
      forward_rows<T><<<unsigned(count), kThreads, 0, stream>>>(
          logits.data_ptr<const T>() + first * classes, target.data_ptr<const int64_t>() + first,
          probabilities.data_ptr<T>() + first * classes, classes, o, device_totals);
    }
    mean_loss<T><<<1, 1, 0, stream>>>(device_totals, loss.data_ptr<T>());
  });
  OPGRAPH_CUDA_CHECK(cudaGetLastError());
  check_targets(totals, classes);
}

void backward_kernel(const KernelContext& context, const Tensor& grad_loss, const Tensor& probabilities,
                     const Tensor& target_tensor, int64_t ignore_index, double label_smoothing,
                     const Tensor& grad_logits) {
  const int64_t rows = probabilities.size(0), classes = probabilities.size(1);
  const cudaStream_t stream = stream_of(context);
  const Options o{ignore_index, label_smoothing};
  const Tensor totals = zero_totals(context.device);
  auto* device_totals = static_cast<Totals*>(totals.data());
  const int64_t* target = target_tensor.data_ptr<const int64_t>();
  count_rows<<<blocks_for(rows, kThreads), kThreads, 0, stream>>>(target, rows, classes, o.ignore_index, device_totals);
  kernels::dispatch_floating(probabilities.dtype(), "probabilities", [&](auto zero) {
    using T = decltype(zero);
    backward_elements<T><<<blocks_for(rows * classes, kThreads), kThreads, 0, stream>>>(
        grad_loss.data_ptr<const T>(), probabilities.data_ptr<const T>(), target, grad_logits.data_ptr<T>(), rows,
        classes, o, device_totals);
  });
  OPGRAPH_CUDA_CHECK(cudaGetLastError());
  check_targets(totals, classes);
}

}  // namespace

void register_cross_entropy_kernels(CudaKernels& kernels) {
  add_cuda_kernel(kernels, "opgraph::softmax_cross_entropy", forward_kernel);
  add_cuda_kernel(kernels, "opgraph::softmax_cross_entropy_backward", backward_kernel);
}

}  // namespace opgraph::cuda
