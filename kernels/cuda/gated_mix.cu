// Per-channel gated mix on the GPU, as kernels/cpu/gated_mix.cpp:
//   y[r, c] = w[c] a[r, c] + (1 - w[c]) b[r, c]
// forward, da, db: one thread per element; dw: a fixed number of row chunks
// with double partials summed in chunk order, so the bits are reproducible.
#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

template <class T>
__global__ void mix_fwd_kernel(const T* a, const T* b, const T* w, T* y, int64_t C, int64_t n) {
  HKT_CUDA_LOOP(e, n) {
    const T wc = w[e % C];
    y[e] = wc * a[e] + (T(1) - wc) * b[e];
  }
}

template <class T>
__global__ void mix_dadb_kernel(const T* w, const T* g, T* da, T* db, int64_t C, int64_t n) {
  HKT_CUDA_LOOP(e, n) {
    const T wc = w[e % C];
    if (da) da[e] = wc * g[e];
    if (db) db[e] = (T(1) - wc) * g[e];
  }
}

// part[ch, c] = sum over the rows of chunk ch of g (a - b).
template <class T>
__global__ void mix_dw_partial(const T* a, const T* b, const T* g, int64_t rows, int64_t C, int64_t per,
                               double* part) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, ch = blockIdx.y;
  if (c >= C) return;
  const int64_t r0 = ch * per, r1 = r0 + per < rows ? r0 + per : rows;
  double acc = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t e = r * C + c;
    acc += static_cast<double>(g[e]) * (static_cast<double>(a[e]) - static_cast<double>(b[e]));
  }
  part[ch * C + c] = acc;
}
template <class T>
__global__ void mix_dw_combine(const double* part, int64_t nc, int64_t C, T* dw) {
  HKT_CUDA_LOOP(c, C) {
    double sum = 0;
    for (int64_t ch = 0; ch < nc; ++ch) sum += part[ch * C + c];
    dw[c] = static_cast<T>(sum);
  }
}

}  // namespace

template <class T>
void gated_mix_forward(const void* a, const void* b, const void* w, void* y, int64_t rows, int64_t C) {
  const int64_t n = rows * C;
  if (n <= 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, mix_fwd_kernel<T>)(static_cast<const T*>(a), static_cast<const T*>(b),
                                                              static_cast<const T*>(w), static_cast<T*>(y), C, n);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void gated_mix_backward(const void* av, const void* bv, const void* wv, const void* gv, int64_t rows, int64_t C,
                        void* dav, void* dbv, void* dwv) {
  if (C <= 0) return;
  const T *a = static_cast<const T*>(av), *b = static_cast<const T*>(bv), *w = static_cast<const T*>(wv),
          *g = static_cast<const T*>(gv);
  T *da = static_cast<T*>(dav), *db = static_cast<T*>(dbv), *dw = static_cast<T*>(dwv);
  const int64_t n = rows * C;
  if ((da || db) && n > 0) {
    HKT_LAUNCH(blocks_for(n), kThreads, 0, mix_dadb_kernel<T>)(w, g, da, db, C, n);
    CUDA_CHECK_LAUNCH();
  }
  if (!dw) return;
  if (rows <= 0) {
    CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(C) * sizeof(T), stream()));
    return;
  }
  const int64_t nc = rules::gated_mix_chunks(rows, C), per = (rows + nc - 1) / nc;
  Scratch part(static_cast<size_t>(nc * C) * sizeof(double));
  const dim3 grid(static_cast<unsigned>((C + kThreads - 1) / kThreads), static_cast<unsigned>(nc));
  HKT_LAUNCH(grid, kThreads, 0, mix_dw_partial<T>)(a, b, g, rows, C, per, part.as<double>());
  CUDA_CHECK_LAUNCH();
  HKT_LAUNCH(blocks_for(C), kThreads, 0, mix_dw_combine<T>)(part.as<double>(), nc, C, dw);
  CUDA_CHECK_LAUNCH();
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(gated_mix, gated_mix_forward<T>)
HKT_CUDA_KERNEL(gated_mix_backward)

}  // namespace hkt::cuda
