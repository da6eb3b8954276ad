// Stand-in for cuBLAS's header in emulated builds (tests/cuda_emu): the types
// kernels/cuda/common.cuh names. No cuBLAS call is emulated.
#pragma once
#ifndef HKT_CUDA_EMULATED
#error "tests/cuda_emu/include is for emulated builds: include tests/cuda_emu/hkt_cuda_emu.hpp first"
#endif
struct cublasContext;
using cublasHandle_t = cublasContext*;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
inline const char* cublasGetStatusName(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_NOT_SUPPORTED";
}
inline const char* cublasGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "success" : "not supported (emulated build)";
}
