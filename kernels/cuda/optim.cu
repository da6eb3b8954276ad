// Optimizer updates on the GPU, with the arithmetic of kernels/cpu/optim.cpp
// (double inside, state stored in the parameter's type): SGD, AdamW (one
// fused pass per parameter, or one launch over many parameters), scale, and
// the sum of squares used by gradient clipping (fixed chunks merged in order).
#include <algorithm>

#include "hkt/kernels/optim_defs.hpp"
#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/runtime.hpp"
#include "kernels/backends.hpp"

namespace hkt::cuda {

using AdamWTensor = opt::AdamWTensor;  // one parameter of a multi-tensor step (the op list's)

namespace {

template <class T>
__global__ void sgd_kernel(T* p, const T* g, T* buf, int64_t n, double lr, double momentum, double dampening,
                           double wd, bool nesterov, bool first_step) {
  HKT_CUDA_LOOP(i, n) opt::sgd_one(p, g, buf, i, lr, momentum, dampening, wd, nesterov, first_step);
}

template <class T>
__global__ void adamw_kernel(T* p, const T* g, T* m, T* v, int64_t n, double beta1, double beta2, double eps,
                             double decay, double step_size, double bc2_sqrt) {
  HKT_CUDA_LOOP(i, n) opt::adamw_one(p, g, m, v, i, beta1, beta2, eps, decay, step_size, bc2_sqrt);
}

// Many parameters in one launch: blockIdx.y picks the tensor, the grid-stride
// loop over x covers its elements.
template <class T>
__global__ void adamw_multi_kernel(const AdamWTensor* ts, double beta1, double beta2, double eps) {
  const AdamWTensor t = ts[blockIdx.y];
  T* p = static_cast<T*>(t.p);
  const T* g = static_cast<const T*>(t.g);
  T* m = static_cast<T*>(t.m);
  T* v = static_cast<T*>(t.v);
  HKT_CUDA_LOOP(i, t.n) opt::adamw_one(p, g, m, v, i, beta1, beta2, eps, t.decay, t.step_size, t.bc2_sqrt);
}

template <class T>
__device__ __forceinline__ void scale_one(T* x, int64_t i, double f) {
  x[i] = static_cast<T>(static_cast<double>(x[i]) * f);
}
template <class T>
__global__ void scale_kernel(T* x, int64_t n, double f) {
  HKT_CUDA_LOOP(i, n) scale_one(x, i, f);
}

constexpr int64_t kChunk = rules::kSumSquaresChunk;
// The sum of x[lo, hi)^2 over the block (one chunk's partial; every thread
// gets it). Both sum-of-squares kernels use it, so their partials agree to the bit.
template <class T>
__device__ double chunk_sum_squares(const T* x, int64_t lo, int64_t hi) {
  double s = 0;
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    const double xi = static_cast<double>(x[i]);
    s += xi * xi;
  }
  return block_reduce(s, 0.0, SumOp{});
}
// part[lo, hi) added in order.
__device__ inline double sum_range(const double* part, int64_t lo, int64_t hi) {
  double s = 0;
  for (int64_t i = lo; i < hi; ++i) s += part[i];
  return s;
}
template <class T>
__global__ void sum_squares_partial(const T* x, int64_t n, double* part) {
  const int64_t lo = blockIdx.x * kChunk, hi = lo + kChunk < n ? lo + kChunk : n;
  const double s = chunk_sum_squares(x, lo, hi);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
__global__ void sum_in_order(const double* part, int64_t n, double* out) { *out = sum_range(part, 0, n); }

// Up to 64 tensors of a multi-tensor launch, passed by value (no table to
// copy to the device first). first[i]: tensor i's first chunk among the
// launch's chunks (sum of squares), first[count] their number.
constexpr int kMultiPerLaunch = 64;
struct MultiTable {
  void* x[kMultiPerLaunch];
  int64_t n[kMultiPerLaunch];
  int64_t first[kMultiPerLaunch + 1];
  int count;
};
// sum_squares_partial on chunk blockIdx.x of the launch: the same chunk of
// the same tensor, the same threads, so the same partial to the bit.
template <class T>
__global__ void sum_squares_partial_multi(const MultiTable tab, double* part) {
  const int64_t c = blockIdx.x;
  int i = 0;
  while (i + 1 < tab.count && tab.first[i + 1] <= c) ++i;  // empty tensors own no chunk
  const int64_t lo = (c - tab.first[i]) * kChunk, hi = lo + kChunk < tab.n[i] ? lo + kChunk : tab.n[i];
  const double s = chunk_sum_squares(static_cast<const T*>(tab.x[i]), lo, hi);
  if (threadIdx.x == 0) part[c] = s;
}
// Thread i: tensor i's partials in order, as sum_in_order.
__global__ void sum_in_order_multi(const MultiTable tab, const double* part, double* out) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < tab.count) out[i] = sum_range(part, tab.first[i], tab.first[i + 1]);
}
// blockIdx.y picks the tensor, the grid-stride loop over x covers it.
template <class T>
__global__ void scale_multi_kernel(const MultiTable tab, double f) {
  T* x = static_cast<T*>(tab.x[blockIdx.y]);
  HKT_CUDA_LOOP(i, tab.n[blockIdx.y]) scale_one(x, i, f);
}
// The table of ts[first, first + 64).
MultiTable multi_table(const std::vector<opt::MultiTensor>& ts, size_t first) {
  MultiTable tab{};
  tab.count = static_cast<int>(std::min<size_t>(kMultiPerLaunch, ts.size() - first));
  for (int i = 0; i < tab.count; ++i) {
    const opt::MultiTensor& t = ts[first + size_t(i)];
    tab.x[i] = t.x;
    tab.n[i] = t.n;
    tab.first[i + 1] = tab.first[i] + (t.n + kChunk - 1) / kChunk;
  }
  return tab;
}

}  // namespace

template <class T>
void sgd_update(void* p, const void* g, void* buf, int64_t n, double lr, double momentum, double dampening, double wd,
                bool nesterov, bool first_step) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, sgd_kernel<T>)(static_cast<T*>(p), static_cast<const T*>(g),
                                                          static_cast<T*>(buf), n, lr, momentum, dampening, wd,
                                                          nesterov, first_step);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void adamw_update(void* p, const void* g, void* m, void* v, int64_t n, double beta1, double beta2, double eps,
                  double decay, double step_size, double bc2_sqrt) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, adamw_kernel<T>)(static_cast<T*>(p), static_cast<const T*>(g),
                                                            static_cast<T*>(m), static_cast<T*>(v), n, beta1, beta2,
                                                            eps, decay, step_size, bc2_sqrt);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void adamw_update_multi(const std::vector<AdamWTensor>& ts, double beta1, double beta2, double eps) {
  int64_t most = 0;
  for (const AdamWTensor& t : ts) most = t.n > most ? t.n : most;
  if (ts.empty() || most == 0) return;
  constexpr size_t kMaxPerLaunch = 65535;  // gridDim.y
  for (size_t first = 0; first < ts.size(); first += kMaxPerLaunch) {
    const size_t count = std::min(kMaxPerLaunch, ts.size() - first);
    Scratch table(count * sizeof(AdamWTensor));
    // Pageable source: the copy is staged before cudaMemcpyAsync returns, so the vector may go.
    CUDA_CHECK(cudaMemcpyAsync(table.as<void>(), ts.data() + first, count * sizeof(AdamWTensor),
                               cudaMemcpyHostToDevice, stream()));
    const dim3 grid(std::min(blocks_for(most), 1024u), static_cast<unsigned>(count));
    HKT_LAUNCH(grid, kThreads, 0, adamw_multi_kernel<T>)(table.as<AdamWTensor>(), beta1, beta2, eps);
    CUDA_CHECK_LAUNCH();
  }
}

template <class T>
double sum_squares(const void* x, int64_t n) {
  if (n == 0) return 0.0;
  const int64_t nc = (n + kChunk - 1) / kChunk;
  HKT_CHECK(nc < (int64_t{1} << 31), "sum_of_squares: tensor too large for the CUDA kernel");
  Scratch part(static_cast<size_t>(nc + 1) * sizeof(double));
  HKT_LAUNCH(static_cast<unsigned>(nc), kThreads, 0, sum_squares_partial<T>)(static_cast<const T*>(x), n,
                                                                               part.as<double>());
  CUDA_CHECK_LAUNCH();
  HKT_LAUNCH(1, 1, 0, sum_in_order)(part.as<double>(), nc, part.as<double>() + nc);
  CUDA_CHECK_LAUNCH();
  double s = 0;
  copy_device_to_host(&s, part.as<double>() + nc, sizeof(double));
  return s;
}

template <class T>
void sum_squares_multi(const std::vector<opt::MultiTensor>& ts, double* out) {
  if (ts.empty()) return;
  Scratch sums(ts.size() * sizeof(double));
  for (size_t first = 0; first < ts.size(); first += kMultiPerLaunch) {
    const MultiTable tab = multi_table(ts, first);
    const int64_t chunks = tab.first[tab.count];
    HKT_CHECK(chunks < (int64_t{1} << 31), "sum_of_squares: tensors too large for the CUDA kernel");
    Scratch part(static_cast<size_t>(std::max<int64_t>(chunks, 1)) * sizeof(double));
    if (chunks > 0) {
      HKT_LAUNCH(static_cast<unsigned>(chunks), kThreads, 0, sum_squares_partial_multi<T>)(tab, part.as<double>());
      CUDA_CHECK_LAUNCH();
    }
    HKT_LAUNCH(1, kMultiPerLaunch, 0, sum_in_order_multi)(tab, part.as<double>(), sums.as<double>() + first);
    CUDA_CHECK_LAUNCH();
  }
  copy_device_to_host(out, sums.as<double>(), ts.size() * sizeof(double));
}

template <class T>
void scale_multi(const std::vector<opt::MultiTensor>& ts, double factor) {
  for (size_t first = 0; first < ts.size(); first += kMultiPerLaunch) {
    const MultiTable tab = multi_table(ts, first);
    int64_t most = 0;
    for (int i = 0; i < tab.count; ++i) most = std::max(most, tab.n[i]);
    if (most == 0) continue;
    const dim3 grid(std::min(blocks_for(most), 1024u), static_cast<unsigned>(tab.count));
    HKT_LAUNCH(grid, kThreads, 0, scale_multi_kernel<T>)(tab, factor);
    CUDA_CHECK_LAUNCH();
  }
}

template <class T>
void scale(void* x, int64_t n, double factor) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, scale_kernel<T>)(static_cast<T*>(x), n, factor);
  CUDA_CHECK_LAUNCH();
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(sgd, sgd_update<T>)
HKT_CUDA_KERNEL_AS(adamw, adamw_update<T>)
HKT_CUDA_KERNEL_AS(adamw_multi, adamw_update_multi<T>)
HKT_CUDA_KERNEL(sum_squares)
HKT_CUDA_KERNEL(scale)
HKT_CUDA_KERNEL(sum_squares_multi)
HKT_CUDA_KERNEL(scale_multi)

}  // namespace hkt::cuda
