// softmax / log_softmax along D of a contiguous [outer, D, inner] array: one
// block per row (o, c), whose D elements lie `inner` apart. Sums in double,
// degenerate rows (no finite element) as on the CPU: NaN if the row holds a
// NaN, else 0 (softmax) or -inf (log_softmax); their backward gives 0 for
// log_softmax.
#include <limits>

#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

constexpr int kRowThreads = 128;

template <class T, bool Log>
__global__ void __launch_bounds__(kRowThreads) softmax_fwd_kernel(const T* x, T* y, int64_t D, int64_t inner) {
  const int64_t row = blockIdx.x, o = row / inner, c = row - o * inner;
  const T* xr = x + o * D * inner + c;
  T* yr = y + o * D * inner + c;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T m = kNegInf;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) m = xr[j * inner] > m ? xr[j * inner] : m;  // skips NaN
  m = block_reduce(m, kNegInf, MaxOp{});
  if (m == kNegInf) {
    int nan = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) nan |= xr[j * inner] != xr[j * inner];
    nan = block_reduce(nan, 0, MaxOp{});
    const T v = nan ? std::numeric_limits<T>::quiet_NaN() : (Log ? kNegInf : T(0));
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) yr[j * inner] = v;
    return;
  }
  double s = 0;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += static_cast<double>(exp(xr[j * inner] - m));
  s = block_reduce(s, 0.0, SumOp{});
  if constexpr (Log) {
    const T ls = static_cast<T>(log(s));
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) yr[j * inner] = (xr[j * inner] - m) - ls;
  } else {
    const T inv = static_cast<T>(1.0 / s);
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) yr[j * inner] = exp(xr[j * inner] - m) * inv;
  }
}

// softmax: dx = y (g - sum(g y));  log_softmax: dx = g - exp(y) sum(g), 0 on all -inf rows.
template <class T, bool Log>
__global__ void __launch_bounds__(kRowThreads)
    softmax_bwd_kernel(const T* y, const T* g, T* dx, int64_t D, int64_t inner) {
  const int64_t row = blockIdx.x, o = row / inner, c = row - o * inner;
  const int64_t base = o * D * inner + c;
  const T *yr = y + base, *gr = g + base;
  T* dr = dx + base;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  double s = 0;
  int live = 0;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    if constexpr (Log) {
      s += static_cast<double>(gr[j * inner]);
      live |= yr[j * inner] != kNegInf;
    } else {
      s += static_cast<double>(gr[j * inner]) * static_cast<double>(yr[j * inner]);
    }
  }
  s = block_reduce(s, 0.0, SumOp{});
  const T st = static_cast<T>(s);
  if constexpr (Log) {
    live = block_reduce(live, 0, MaxOp{});
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
      dr[j * inner] = live ? gr[j * inner] - exp(yr[j * inner]) * st : T(0);
  } else {
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) dr[j * inner] = yr[j * inner] * (gr[j * inner] - st);
  }
}

}  // namespace

template <class T, bool Log>
void softmax_forward(const void* x, void* y, int64_t outer, int64_t D, int64_t inner) {
  const int64_t rows = outer * inner;
  if (rows <= 0 || D <= 0) return;
  HKT_CHECK(rows < (int64_t{1} << 31), "softmax: too many rows (", rows, ") for the CUDA kernel");
  HKT_LAUNCH(static_cast<unsigned>(rows), kRowThreads, 0, softmax_fwd_kernel<T, Log>)(
      static_cast<const T*>(x), static_cast<T*>(y), D, inner);
  CUDA_CHECK_LAUNCH();
}
template <class T, bool Log>
void softmax_backward(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner) {
  const int64_t rows = outer * inner;
  if (rows <= 0 || D <= 0) return;
  HKT_CHECK(rows < (int64_t{1} << 31), "softmax_backward: too many rows (", rows, ") for the CUDA kernel");
  HKT_LAUNCH(static_cast<unsigned>(rows), kRowThreads, 0, softmax_bwd_kernel<T, Log>)(
      static_cast<const T*>(y), static_cast<const T*>(g), static_cast<T*>(dx), D, inner);
  CUDA_CHECK_LAUNCH();
}

#define HKT_INST(T, L)                                                                             \
  template void softmax_forward<T, L>(const void*, void*, int64_t, int64_t, int64_t);              \
  template void softmax_backward<T, L>(const void*, const void*, void*, int64_t, int64_t, int64_t);
HKT_INST(float, false)
HKT_INST(float, true)
HKT_INST(double, false)
HKT_INST(double, true)
#undef HKT_INST

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(softmax, softmax_forward<T, false>)
HKT_CUDA_KERNEL_AS(log_softmax, softmax_forward<T, true>)
HKT_CUDA_KERNEL_AS(softmax_backward, softmax_backward<T, false>)
HKT_CUDA_KERNEL_AS(log_softmax_backward, softmax_backward<T, true>)

}  // namespace hkt::cuda
