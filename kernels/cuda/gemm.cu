// Batched matrix products through cuBLAS (full float32 / float64 math).
//
// cuBLAS is column-major: a row-major C (m x n) is the column-major C^T, so
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T, i.e. cuBLAS gets B
// first, A second, dims (n, m, k) and ldc = n. A row-major operand without
// the transpose flag is, read column-major, already the transposed matrix
// cuBLAS wants (CUBLAS_OP_N); a transpose view becomes CUBLAS_OP_T.
//
// Batches: one strided-batched call when both operands advance by a fixed
// stride, one tall product when B is shared and the A_i are consecutive row
// blocks, otherwise one call per entry.
#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

template <class T>
void gemm_one(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
              T* c, int64_t batch, int64_t sa, int64_t sb) {
  const T alpha = 1, beta = 0;
  const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  const int LDA = static_cast<int>(lda), LDB = static_cast<int>(ldb);
  if (batch == 1) {
    if constexpr (std::is_same_v<T, float>)
      CUBLAS_CHECK(cublasSgemm(cublas(), opb, opa, N, M, K, &alpha, b, LDB, a, LDA, &beta, c, N));
    else
      CUBLAS_CHECK(cublasDgemm(cublas(), opb, opa, N, M, K, &alpha, b, LDB, a, LDA, &beta, c, N));
  } else {
    if constexpr (std::is_same_v<T, float>)
      CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), opb, opa, N, M, K, &alpha, b, LDB, sb, a, LDA, sa, &beta, c,
                                             N, m * n, static_cast<int>(batch)));
    else
      CUBLAS_CHECK(cublasDgemmStridedBatched(cublas(), opb, opa, N, M, K, &alpha, b, LDB, sb, a, LDA, sa, &beta, c,
                                             N, m * n, static_cast<int>(batch)));
  }
}

bool arithmetic(const int64_t* off, int64_t batch, int64_t* step) {
  *step = batch > 1 ? off[1] - off[0] : 0;
  for (int64_t i = 1; i < batch; ++i)
    if (off[i] - off[i - 1] != *step) return false;
  return true;
}

}  // namespace

template <class T>
void gemm_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* av, int64_t lda,
                  const int64_t* a_off, const void* bv, int64_t ldb, const int64_t* b_off, void* cv, int64_t batch) {
  if (batch <= 0 || m == 0 || n == 0) return;
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  T* c = static_cast<T*>(cv);
  HKT_CHECK(m < (int64_t{1} << 31) && n < (int64_t{1} << 31) && k < (int64_t{1} << 31) && batch < (int64_t{1} << 31),
            "matmul: dims too large for cuBLAS (m ", m, ", n ", n, ", k ", k, ", batch ", batch, ")");
  if (k == 0) {
    CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<size_t>(batch * m * n) * sizeof(T), stream()));
    return;
  }
  int64_t sa = 0, sb = 0;
  const bool ua = arithmetic(a_off, batch, &sa), ub = arithmetic(b_off, batch, &sb);
  if (batch == 1 || (ua && ub && sa > 0 && sb > 0)) {
    gemm_one<T>(ta, tb, m, n, k, a + a_off[0], lda, b + b_off[0], ldb, c, batch, sa, sb);
  } else if (ua && ub && sb == 0 && !ta && sa == m * lda && m * batch < (int64_t{1} << 31)) {
    gemm_one<T>(ta, tb, m * batch, n, k, a + a_off[0], lda, b + b_off[0], ldb, c, 1, 0, 0);
  } else {
    for (int64_t i = 0; i < batch; ++i)
      gemm_one<T>(ta, tb, m, n, k, a + a_off[i], lda, b + b_off[i], ldb, c + i * m * n, 1, 0, 0);
  }
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(matmul, gemm_batched<T>)

}  // namespace hkt::cuda
