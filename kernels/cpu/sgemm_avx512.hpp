// The library's own float32 matrix product for CPUs with AVX-512F (docs/design.md, "Matrix
// products"): C = alpha op(A) op(B) + beta C, row-major, the conventions of gemm.hpp.
//
// Every output is one fused multiply-add chain over k in order, from 0 (acc = fma(a_ik, b_kj,
// acc)), then alpha * acc + beta * c: its bits depend on the operands alone, not on the thread
// count, the blocking, or which rows or columns a call covers. 8 x 32 register tiles (sixteen
// 512-bit accumulators), B packed into 32-column panels, A into 8-row panels per block of k,
// tasks over blocks of rows (and of columns when the rows are few) on the library's threads.
#pragma once
#include <cstdint>

namespace hkt::cpu {

// Whether float32 products run here rather than in BLAS: the CPU has AVX-512F and HKT_SGEMM is
// not "blas" (read once).
bool own_sgemm_enabled();

// The product as above (m, n, k > 0; ld as gemm.hpp checks them). Call only where
// own_sgemm_enabled(); not from inside a parallel region of the library's threads.
void own_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace hkt::cpu
