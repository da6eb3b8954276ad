// The emulated cuBLAS GEMMs (include/cublas_v2.h): column-major, with
// cuBLAS's argument checks, on the emulated device's memory.
#include "kernels/cuda_emu/hkt_cuda_emu.hpp"

#include <cublas_v2.h>

#include <algorithm>

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace {

// A column-major matrix of `rows` x `cols` with leading dimension ld, at p:
// inside one device block (the strict checks of cuda_runtime.h).
template <class T>
bool on_device(const T* p, long long rows, long long cols, long long ld) {
  return rows == 0 || cols == 0 ||
         hkt_emu::device_ok(p, static_cast<size_t>((cols - 1) * ld + rows) * sizeof(T));
}

template <class T>
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const T* alpha, const T* A, int lda, long long sa, const T* B, int ldb, long long sb,
                    const T* beta, T* C, int ldc, long long sc, int batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  hkt_emu::count_work(hkt_emu::Work::gemm);
  const auto op_ok = [](cublasOperation_t o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; };
  if (!op_ok(ta) || !op_ok(tb) || m < 0 || n < 0 || k < 0 || batch < 0 || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  // A is stored as ar x ac (op(A) = A is m x k; op(A) = A^T means A is k x m).
  const int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
  const int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
  if (lda < std::max(1, ar) || ldb < std::max(1, br) || ldc < std::max(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < batch; ++i) {
    const T* a = A + i * sa;
    const T* b = B + i * sb;
    T* c = C + i * sc;
    if (!on_device(c, m, n, ldc) || (k > 0 && (!on_device(a, ar, ac, lda) || !on_device(b, br, bc, ldb))))
      return CUBLAS_STATUS_INVALID_VALUE;
    for (int col = 0; col < n; ++col)
      for (int row = 0; row < m; ++row) {
        T acc = 0;
        for (long long p = 0; p < k; ++p) {
          const T x = ta == CUBLAS_OP_N ? a[row + p * lda] : a[p + static_cast<long long>(row) * lda];
          const T y = tb == CUBLAS_OP_N ? b[p + static_cast<long long>(col) * ldb] : b[col + p * ldb];
          acc += x * y;
        }
        T& out = c[row + static_cast<long long>(col) * ldc];
        out = *beta == T(0) ? *alpha * acc : *alpha * acc + *beta * out;  // beta = 0: C is not read
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  }
  return "unknown error";
}

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t s) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_PEDANTIC_MATH) return CUBLAS_STATUS_NOT_SUPPORTED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc) {
  return gemm(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double* alpha, const double* A, int lda, const double* B, int ldb,
                           const double* beta, double* C, int ldc) {
  return gemm(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float* alpha, const float* A, int lda, long long sa,
                                         const float* B, int ldb, long long sb, const float* beta, float* C, int ldc,
                                         long long sc, int batch) {
  return gemm(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double* alpha, const double* A, int lda, long long sa,
                                         const double* B, int ldb, long long sb, const double* beta, double* C,
                                         int ldc, long long sc, int batch) {
  return gemm(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
