#include "kernels/cuda/blas_lt.h"

#include <cublasLt.h>

#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "cuda/cuda_check.h"

namespace opgraph::cuda {
namespace {

void check(cublasStatus_t status, const char* call) {
  OPGRAPH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cuBLASLt error in ", call, ": ", cublasLtGetStatusName(status), " (",
                cublasLtGetStatusString(status), ")");
}
#define OPGRAPH_CUBLAS_CHECK(call) check((call), #call)

// One handle for the process: cuBLASLt handles carry no stream or device
// state and may be shared by threads.
cublasLtHandle_t handle() {
  static cublasLtHandle_t shared = [] {
    cublasLtHandle_t h = nullptr;
    OPGRAPH_CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }();
  return shared;
}

// Owns a cuBLASLt descriptor for the scope of one call.
template <typename T, cublasStatus_t (*Destroy)(T)>
struct Descriptor {
  T value = nullptr;
  Descriptor() = default;
  Descriptor(Descriptor&& other) noexcept : value(std::exchange(other.value, nullptr)) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (value) Destroy(value);
  }
};

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// What cuBLASLt's heuristic chooses from (the device first: GPUs differ), so
// that the same problem gets the same algorithm.
using ProblemKey =
    std::tuple<int, cudaDataType_t, cublasOperation_t, cublasOperation_t, cublasLtEpilogue_t, bool, int64_t, int64_t,
               int64_t, int64_t, int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t>;

// The alignment in bytes (a power of two, at most 256) of every matrix of an
// operand: its first at `data`, the next ones `batch_stride_bytes` apart.
// cuBLASLt's heuristic assumes 256 unless told, and the kernel it then picks
// faults on a view or a Session arena offset that is less aligned.
uint32_t alignment_of(const void* data, int64_t batch_stride_bytes) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(data) | static_cast<uintptr_t>(batch_stride_bytes) | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));  // the lowest set bit
}

// The heuristic's choice for a problem, asked once: the query costs as much
// as a small product itself, and training repeats its shapes.
cublasLtMatmulAlgo_t cached_algorithm(const ProblemKey& key, const std::function<cublasLtMatmulAlgo_t()>& choose) {
  static std::mutex mutex;
  static std::map<ProblemKey, cublasLtMatmulAlgo_t> chosen;
  std::lock_guard lock(mutex);
  auto it = chosen.find(key);
  if (it == chosen.end()) it = chosen.emplace(key, choose()).first;
  return it->second;
}

// The operands' type, and the type cuBLASLt sums and scales in: float32 for
// float32 (no TF32: results agree with the CPU kernels, as torch's default
// does) and for bfloat16, whose products are rounded once, on the store.
struct Arithmetic {
  cudaDataType_t type;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

Arithmetic arithmetic_of(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::Float64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    case DType::BFloat16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    default:
      throw Error(detail::concat("matmul on cuda: expected float32, float64 or bfloat16, got ", dtype_name(dtype)));
  }
}

// The workspace of the products on one device's stream, kept for the
// process as cuBLAS keeps its handle's: products on a stream run one after
// another, and allocating one per product took more host time than a small
// product's kernels. Never freed (the map outlives the CUDA runtime's
// teardown at exit); a stream that is destroyed leaves its workspace behind.
const Tensor& workspace_for(Device device, cudaStream_t stream) {
  static std::mutex mutex;
  static auto* workspaces = new std::map<std::pair<int, cudaStream_t>, Tensor>();
  std::lock_guard lock(mutex);
  auto [it, added] = workspaces->try_emplace({device.index, stream});
  if (added) it->second = Tensor::empty({static_cast<int64_t>(kWorkspaceBytes)}, DType::UInt8, device);
  return it->second;
}

}  // namespace

void matmul(const Tensor& c, MatmulOperand a, MatmulOperand b, int64_t m, int64_t n, int64_t k, const void* bias,
            bool relu, cudaStream_t stream, bool accumulate, MatmulBatch batch) {
  const Arithmetic arithmetic = arithmetic_of(c.dtype());
  if (m == 0 || n == 0) return;
  OPGRAPH_CHECK(!accumulate || (bias == nullptr && !relu), "matmul on cuda: no epilogue when accumulating");
  if (k == 0) {  // an empty sum; cuBLASLt takes no empty operand
    OPGRAPH_CHECK(bias == nullptr && !relu, "matmul on cuda: no epilogue on an empty product");
    for (int64_t i = 0; i < batch.count && !accumulate; ++i) {
      OPGRAPH_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(c.data()) + i * batch.c_stride * c.itemsize(), 0,
                                         m * n * c.itemsize(), stream));
    }
    return;
  }
  // Column-major view: C^T (n x m) = op(B)^T (n x k) @ op(A)^T (k x m).
  Descriptor<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> op;
  OPGRAPH_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op.value, arithmetic.compute, arithmetic.scale));
  const cublasOperation_t trans_first = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_second = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  OPGRAPH_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op.value, CUBLASLT_MATMUL_DESC_TRANSA, &trans_first, sizeof(trans_first)));
  OPGRAPH_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op.value, CUBLASLT_MATMUL_DESC_TRANSB, &trans_second, sizeof(trans_second)));
  const cublasLtEpilogue_t epilogue = bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                           : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  OPGRAPH_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op.value, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  if (bias) {
    OPGRAPH_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op.value, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }

  // Each operand's column-major shape as stored (rows, columns, leading
  // dimension), and where the batch's next matrix starts.
  auto layout = [&](int64_t rows, int64_t cols, int64_t batch_stride) {
    Descriptor<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> d;
    OPGRAPH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.value, arithmetic.type, rows, cols, rows));
    if (batch.count > 1) {
      const int32_t count = static_cast<int32_t>(batch.count);
      OPGRAPH_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(d.value, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      OPGRAPH_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(d.value, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                            &batch_stride, sizeof(batch_stride)));
    }
    return d;
  };
  // B row-major is k x n, stored column-major as n x k (or k x n when transposed).
  auto first = b.transposed ? layout(k, n, b.batch_stride) : layout(n, k, b.batch_stride);
  auto second = a.transposed ? layout(m, k, a.batch_stride) : layout(k, m, a.batch_stride);
  auto result = layout(n, m, batch.c_stride);

  // In cuBLASLt's terms A is our b, B our a, and C and D our c.
  const int64_t item = c.itemsize(), batched = batch.count > 1;
  const uint32_t align_first = alignment_of(b.data, batched * b.batch_stride * item);
  const uint32_t align_second = alignment_of(a.data, batched * a.batch_stride * item);
  const uint32_t align_result = alignment_of(c.data(), batched * batch.c_stride * item);
  const ProblemKey key{
      c.device().index, arithmetic.type, trans_first,    trans_second,   epilogue,    accumulate,   m,           n, k,
      batch.count,      a.batch_stride,  b.batch_stride, batch.c_stride, align_first, align_second, align_result};
  const cublasLtMatmulAlgo_t algorithm = cached_algorithm(key, [&] {
    Descriptor<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> preference;
    OPGRAPH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference.value));
    OPGRAPH_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        preference.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes, sizeof(kWorkspaceBytes)));
    for (auto [attribute, alignment] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_first},
                                        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_second},
                                        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_result},
                                        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_result}}) {
      OPGRAPH_CUBLAS_CHECK(
          cublasLtMatmulPreferenceSetAttribute(preference.value, attribute, &alignment, sizeof(alignment)));
    }
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    OPGRAPH_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle(), op.value, first.value, second.value, result.value,
                                                        result.value, preference.value, 1, &heuristic, &found));
    OPGRAPH_CHECK(found > 0, "matmul on cuda: cuBLASLt has no algorithm for ", m, "x", k, " @ ", k, "x", n, " in ",
                  dtype_name(c.dtype()));
    return heuristic.algo;
  });
  const Tensor& workspace = workspace_for(c.device(), stream);

  const double one = 1.0, zero = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const bool single_scale = arithmetic.scale == CUDA_R_32F;
  const void* alpha = single_scale ? static_cast<const void*>(&one_f) : &one;
  const void* beta = accumulate ? alpha : single_scale ? static_cast<const void*>(&zero_f) : &zero;
  OPGRAPH_CUBLAS_CHECK(cublasLtMatmul(handle(), op.value, alpha, b.data, first.value, a.data, second.value, beta,
                                      c.data(), result.value, c.data(), result.value, &algorithm, workspace.data(),
                                      kWorkspaceBytes, stream));
}

}  // namespace opgraph::cuda
