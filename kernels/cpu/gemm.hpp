// CPU matrix products: thin wrappers around cblas_sgemm / cblas_dgemm.
//
// All matrices are row-major. A transposed operand is described by a flag and
// its leading dimension (the stride of its slow dim in memory), so a
// transpose view reaches BLAS as CblasTrans without a copy:
//   trans == false: element (i, j) of op(X) is x[i * ld + j]
//   trans == true:  element (i, j) of op(X) is x[j * ld + i]
// These functions call BLAS directly (which runs its own threads): never call
// them from inside a TBB parallel region.
#pragma once
#include <cstdint>
#include <string>

namespace hkt::cpu {

// The number of threads OpenBLAS runs for a product (its own setting).
int blas_num_threads();

// The kernel set OpenBLAS chose when it loaded (openblas_get_corename: "Haswell", "SkylakeX", ...).
std::string blas_core();
// A sentence for the user when OpenBLAS runs float32 products (no AVX-512F for the library's own
// kernel, or HKT_SGEMM=blas) with AVX2 kernels on a CPU with AVX-512 (OPENBLAS_CORETYPE chose
// them, or this OpenBLAS does not know the CPU); empty otherwise.
std::string blas_core_advice();

// C[m, n] = alpha * op(A)[m, k] @ op(B)[k, n] + beta * C, with C's rows ldc apart.
// k == 0 gives beta * C (C is zero-filled when beta == 0, never read).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// Batched product into a contiguous output: for i in [0, batch),
//   C_i = op(A_i) @ op(B_i),  A_i = a + a_offsets[i],  B_i = b + b_offsets[i],  C_i = c + i * m * n.
// Broadcast batch dims are expressed by repeated offsets (no copy). When the
// A_i are consecutive row blocks (a_offsets[i] == i * m * lda, !trans_a) and B
// is shared (all b_offsets equal), the batch is folded into one call with
// batch * m rows. Calls run one after another (BLAS threads inside each).
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                  const int64_t* a_offsets, const T* b, int64_t ldb, const int64_t* b_offsets, T* c,
                  int64_t batch);

extern template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                                         const int64_t*, const float*, int64_t, const int64_t*, float*, int64_t);
extern template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                                          const int64_t*, const double*, int64_t, const int64_t*, double*,
                                          int64_t);

}  // namespace hkt::cpu
