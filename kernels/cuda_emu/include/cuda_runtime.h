// Stand-in for the CUDA runtime header in emulated builds (kernels/cuda_emu):
// the part of the runtime API that kernels/cuda/ calls, on one emulated
// device (cuda:0, an H200's limits) whose memory is host memory.
//
// Device memory (runtime_emu.cpp): cudaMalloc hands out 256-byte aligned host
// blocks filled with 0xFF bytes (NaN in every float type, as uninitialised
// device memory is garbage), and keeps a list of them. While the strict
// checks are on (the default; hkt_emu::set_strict_device_memory), a copy
// whose kind does not match where its pointers are (a host pointer given as
// the device side, or the other way round), a memset of host memory, a
// cudaFree of a pointer cudaMalloc did not return, and a cuBLAS call whose
// matrices are not inside device memory all fail with cudaErrorInvalidValue
// (CUBLAS_STATUS_INVALID_VALUE), as the real calls fail or fault. Work is
// done when the call returns: every stream is synchronous.
//
// These are C++ functions (not extern "C"), so a test that also links the
// real CUDA runtime keeps both.
#pragma once
#ifndef HKT_CUDA_EMULATED
#error "kernels/cuda_emu/include is for emulated builds: include kernels/cuda_emu/hkt_cuda_emu.hpp first"
#endif
#include <cstddef>

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
struct CUstream_st;
using cudaStream_t = CUstream_st*;
constexpr unsigned cudaStreamDefault = 0x00;
constexpr unsigned cudaStreamNonBlocking = 0x01;
enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
inline cudaError_t cudaGetLastError() { return static_cast<cudaError_t>(::hkt_emu::take_last_error()); }

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaMalloc(void** p, size_t n);
template <class T>
cudaError_t cudaMalloc(T** p, size_t n) {
  return cudaMalloc(reinterpret_cast<void**>(p), n);
}
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s = nullptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind);
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s = nullptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
// An H200: compute capability 9.0, 132 SMs, 227 KiB of dynamic shared memory per block when a kernel opts in.
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int device) {
  if (!v || device != 0) return cudaErrorInvalidValue;
  switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = 132; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = 232448; return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}
template <class... P>
cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute a, int value) {
  if (a != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > 232448) return cudaErrorInvalidValue;
  ::hkt_emu::allow_dynamic_shared(reinterpret_cast<const void*>(kernel), value);
  return cudaSuccess;
}
// Blocks per SM as an H200 fits them: by warps (64 per SM, at most 32 blocks)
// and by shared memory (228 KiB per SM, 1 KiB of it reserved per block). The
// emulator does not know a kernel's registers, so they are not counted. 0 when
// the dynamic shared memory is above what the kernel is allowed.
template <class... P>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void (*kernel)(P...), int threads, size_t smem) {
  if (!n || threads <= 0 || threads > 1024) return cudaErrorInvalidValue;
  const int warps = (threads + 31) / 32;
  const size_t limit = ::hkt_emu::dynamic_shared_limit(reinterpret_cast<const void*>(kernel));
  const int by_smem = smem > limit ? 0 : int(233472 / (smem + 1024));
  *n = by_smem < 64 / warps ? by_smem : 64 / warps;
  if (*n > 32) *n = 32;
  return cudaSuccess;
}
