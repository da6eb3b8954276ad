// Shared by every CUDA kernel file: CUDA_CHECK / CUBLAS_CHECK (file and line
// in the error), the backend's stream and cuBLAS handle, launch helpers and
// StridedIndex (an element's offset in up to kMaxDims strided dims).
//
// Ordering: every kernel, cuBLAS call and copy of the backend goes to the one
// stream returned by stream(). The caching allocator hands a freed block to
// the next allocation without synchronising: the next user of the block is
// queued on the same stream, after every kernel that used it before.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "hkt/core/error.hpp"
#include "hkt/core/shape.hpp"
#include "hkt/core/storage.hpp"

namespace hkt::cuda {

inline void check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess)
    throw Error(str_cat("CUDA error at ", file, ":", line, ": ", expr, " returned ", cudaGetErrorName(e), " (",
                        cudaGetErrorString(e), ")"));
}
inline void check(cublasStatus_t s, const char* expr, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(str_cat("cuBLAS error at ", file, ":", line, ": ", expr, " returned ", cublasGetStatusName(s), " (",
                        cublasGetStatusString(s), ")"));
}

}  // namespace hkt::cuda

// Wrap every CUDA runtime call: CUDA_CHECK(cudaMemcpyAsync(...)).
#define CUDA_CHECK(expr) ::hkt::cuda::check((expr), #expr, __FILE__, __LINE__)
#define CUBLAS_CHECK(expr) ::hkt::cuda::check((expr), #expr, __FILE__, __LINE__)
// After every kernel launch (reports bad launch configurations at once).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// A kernel's dynamic shared memory, and a launch on the backend's stream:
//   HKT_LAUNCH(grid, block, shared_bytes, kernel<T>)(args...);
// (ptx.cuh, with the instructions the kernels reach through inline PTX).
#include "kernels/cuda/ptx.cuh"

namespace hkt::cuda {

cudaStream_t stream();    // the backend's stream on device 0 (created on first use)
cublasHandle_t cublas();  // a cuBLAS handle bound to stream()

// Scratch device memory from the caching allocator, returned when it goes out
// of scope. Freeing right after queuing the kernels that use it is safe: the
// block's next user is queued on the same stream, after them.
class Scratch {
 public:
  explicit Scratch(size_t nbytes) : n_(nbytes), p_(get_allocator(DeviceType::CUDA)->allocate(nbytes, Device::cuda())) {}
  ~Scratch() { get_allocator(DeviceType::CUDA)->deallocate(p_, n_, Device::cuda()); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  size_t n_;
  void* p_;
};

constexpr int kThreads = 256;
// Blocks for n elements, kThreads each (grid-stride loops cover the rest).
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// Grid-stride loop over n elements.
#define HKT_CUDA_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024) with
// the associative `merge`; every thread gets the result. The order of the
// merges depends on blockDim only, so results are reproducible.
template <class Acc, class F>
__device__ Acc block_reduce(Acc v, Acc identity, F merge) {
  __shared__ Acc partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = merge(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads();  // a previous call may still be reading partial[0]
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : identity;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = merge(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  return partial[0];
}
struct SumOp {
  template <class A>
  __device__ A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {  // NaN-free maximum
  template <class A>
  __device__ A operator()(A a, A b) const { return a > b ? a : b; }
};

// Up to kMaxDims dims (after merging contiguous ones); enough for every
// tensor the framework makes. The offset of linear element i (row-major
// over shape) is sum_d idx_d * stride_d.
constexpr int kMaxDims = 8;
template <int N>
struct StridedIndex {
  int nd = 0;
  int64_t shape[kMaxDims];
  int64_t strides[N][kMaxDims];
  __device__ void offsets(int64_t i, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t q = i / shape[d], r = i - q * shape[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
      i = q;
    }
  }
};

// Drops size-1 dims and merges dims that are contiguous with each other in
// every operand; throws if more than kMaxDims remain.
template <int N>
StridedIndex<N> make_index(const Shape& shape, const Strides* const (&st)[N], const char* op) {
  StridedIndex<N> ix;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = ix.nd > 0;
    for (int k = 0; merge && k < N; ++k) merge = ix.strides[k][ix.nd - 1] == (*st[k])[d] * shape[d];
    if (merge) {
      ix.shape[ix.nd - 1] *= shape[d];
      for (int k = 0; k < N; ++k) ix.strides[k][ix.nd - 1] = (*st[k])[d];
      continue;
    }
    HKT_CHECK(ix.nd < kMaxDims, op, ": the CUDA kernels take at most ", kMaxDims,
              " non-mergeable dims; got shape ", shape_str(shape));
    ix.shape[ix.nd] = shape[d];
    for (int k = 0; k < N; ++k) ix.strides[k][ix.nd] = (*st[k])[d];
    ++ix.nd;
  }
  return ix;
}

// True when every operand is one dense run (coalesced to 1 dim, stride 1, or empty).
template <int N>
bool is_dense(const StridedIndex<N>& ix) {
  if (ix.nd == 0) return true;
  if (ix.nd != 1) return false;
  for (int k = 0; k < N; ++k)
    if (ix.strides[k][0] != 1) return false;
  return true;
}

}  // namespace hkt::cuda
