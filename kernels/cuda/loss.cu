// Cross-entropy on the GPU (fused log-softmax + NLL), as kernels/cpu/loss.cpp:
// forward keeps the per-row log-sum-exp (double inside), backward recomputes
// the softmax as exp(x - lse). One block per row.
#include <limits>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/runtime.hpp"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

constexpr int kRowThreads = 128;

template <class T>
__global__ void __launch_bounds__(kRowThreads)
    ce_fwd_kernel(const T* x, const int64_t* t, int64_t C, int64_t ignore, T* loss, T* lse) {
  const int64_t i = blockIdx.x;
  const T* xr = x + i * C;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T m = kNegInf;
  for (int64_t j = threadIdx.x; j < C; j += blockDim.x) m = xr[j] > m ? xr[j] : m;
  m = block_reduce(m, kNegInf, MaxOp{});
  double l = static_cast<double>(m);
  if (m == kNegInf) {  // no finite logit: lse is -inf, or NaN if a logit is NaN
    int nan = 0;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) nan |= xr[j] != xr[j];
    if (block_reduce(nan, 0, MaxOp{})) l = std::numeric_limits<double>::quiet_NaN();
  } else {
    double s = 0;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) s += static_cast<double>(exp(xr[j] - m));
    l += log(block_reduce(s, 0.0, SumOp{}));
  }
  if (threadIdx.x == 0) {
    lse[i] = static_cast<T>(l);
    loss[i] = t[i] == ignore ? T(0) : static_cast<T>(l - static_cast<double>(xr[t[i]]));
  }
}

template <class T>
__global__ void ce_bwd_kernel(const T* x, const int64_t* t, int64_t C, int64_t ignore, const T* lse, const T* g,
                              int64_t g_stride, double scale, T* dx) {
  const int64_t i = blockIdx.x;
  const T* xr = x + i * C;
  T* dr = dx + i * C;
  const int64_t ti = t[i];
  if (ti == ignore) {
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dr[j] = T(0);
    return;
  }
  const T gi = static_cast<T>(static_cast<double>(g[i * g_stride]) * scale);
  const T l = lse[i];
  for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dr[j] = exp(xr[j] - l) * gi - (j == ti ? gi : T(0));
}

}  // namespace

void ce_check_targets(const int64_t* t, int64_t N, int64_t C, int64_t ignore, int64_t* bad_row, int64_t* bad_value,
                      int64_t* count) {
  std::vector<int64_t> h(static_cast<size_t>(N));
  copy_device_to_host(h.data(), t, static_cast<size_t>(N) * sizeof(int64_t));
  *bad_row = -1;
  *bad_value = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (h[i] == ignore) continue;
    if (h[i] < 0 || h[i] >= C) {
      *bad_row = i;
      *bad_value = h[i];
      break;
    }
    ++n;
  }
  *count = n;
}

template <class T>
void ce_forward(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, void* loss, void* lse) {
  if (N <= 0) return;
  HKT_CHECK(N < (int64_t{1} << 31), "cross_entropy: too many rows (", N, ") for the CUDA kernel");
  HKT_LAUNCH(static_cast<unsigned>(N), kRowThreads, 0, ce_fwd_kernel<T>)(
      static_cast<const T*>(x), t, C, ignore, static_cast<T*>(loss), static_cast<T*>(lse));
  CUDA_CHECK_LAUNCH();
}

template <class T>
void ce_backward(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, const void* lse,
                 const void* g, int64_t g_stride, double scale, void* dx) {
  if (N <= 0) return;
  HKT_CHECK(N < (int64_t{1} << 31), "cross_entropy_backward: too many rows (", N, ") for the CUDA kernel");
  HKT_LAUNCH(static_cast<unsigned>(N), kRowThreads, 0, ce_bwd_kernel<T>)(
      static_cast<const T*>(x), t, C, ignore, static_cast<const T*>(lse), static_cast<const T*>(g), g_stride, scale,
      static_cast<T*>(dx));
  CUDA_CHECK_LAUNCH();
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(ce_check, ce_check_targets)
HKT_CUDA_KERNEL_AS(cross_entropy, ce_forward<T>)
HKT_CUDA_KERNEL_AS(cross_entropy_backward, ce_backward<T>)

}  // namespace hkt::cuda
