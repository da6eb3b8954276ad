// Stand-in for cuBLAS's header in emulated builds (kernels/cuda_emu): the GEMMs
// kernels/cuda/gemm.cu calls, with cuBLAS's column-major semantics and its
// argument checks (cublas_emu.cpp): C = alpha op(A) op(B) + beta C, op(A)
// m x k, C m x n, column j of a matrix with leading dimension ld at ptr + j ld.
// A negative m, n, k or batch count, or lda < max(1, rows of A as stored)
// (m for CUBLAS_OP_N, else k; likewise ldb with k / n, ldc with m) returns
// CUBLAS_STATUS_INVALID_VALUE, as cuBLAS does; so does, under the strict
// device-memory checks (cuda_runtime.h), an operand not inside device memory.
// Products accumulate in the element type, in k order (what
// CUBLAS_DEFAULT_MATH promises: no TF32); with beta = 0, C is not read.
#pragma once
#ifndef HKT_CUDA_EMULATED
#error "kernels/cuda_emu/include is for emulated builds: include kernels/cuda_emu/hkt_cuda_emu.hpp first"
#endif
#include <cuda_runtime.h>

struct cublasContext;
using cublasHandle_t = cublasContext*;
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasMath_t {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_TENSOR_OP_MATH = 1,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
};

const char* cublasGetStatusName(cublasStatus_t s);
const char* cublasGetStatusString(cublasStatus_t s);
cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t s);
// Only CUBLAS_DEFAULT_MATH and CUBLAS_PEDANTIC_MATH (full precision) are
// emulated; the others return CUBLAS_STATUS_NOT_SUPPORTED.
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double* alpha, const double* A, int lda, const double* B, int ldb,
                           const double* beta, double* C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                                         int n, int k, const float* alpha, const float* A, int lda, long long sa,
                                         const float* B, int ldb, long long sb, const float* beta, float* C, int ldc,
                                         long long sc, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                                         int n, int k, const double* alpha, const double* A, int lda, long long sa,
                                         const double* B, int ldb, long long sb, const double* beta, double* C,
                                         int ldc, long long sc, int batch);
