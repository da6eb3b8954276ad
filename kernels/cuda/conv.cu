// Causal depthwise conv1d on the GPU, as kernels/cpu/conv.cpp:
//   y[b, t, c] = bias[c] + sum_{j<k} w[c, j] x[b, s t + s - 1 - j, c]   (x = 0 outside [0, T))
// forward and dx: one thread per output element (dx is a gather, no atomics);
// dw, db: the CPU's row chunks (rules::conv_grad_chunks) with double partials summed in chunk
// order, so the bits are reproducible.
#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

template <class T>
__global__ void conv_fwd_kernel(const T* x, const T* w, const T* bias, T* y, int64_t len, int64_t len_out,
                                int64_t C, int64_t k, int64_t s, int64_t n) {
  HKT_CUDA_LOOP(e, n) {
    const int64_t c = e % C, r = e / C, b = r / len_out, t = r % len_out;
    T acc = bias ? bias[c] : T(0);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t i = s * t + s - 1 - j;
      if (i < 0) break;
      if (i >= len) continue;
      acc += w[c * k + j] * x[(b * len + i) * C + c];
    }
    y[e] = acc;
  }
}

template <class T>
__global__ void conv_dx_kernel(const T* w, const T* g, T* dx, int64_t len, int64_t len_out, int64_t C, int64_t k,
                               int64_t s, int64_t n) {
  HKT_CUDA_LOOP(e, n) {
    const int64_t c = e % C, r = e / C, b = r / len, i = r % len;
    T acc = T(0);
    // Output t reads input i through tap j when s (t + 1) = i + j + 1.
    for (int64_t j = (s - (i + 1) % s) % s; j < k; j += s) {
      const int64_t t = (i + j + 1) / s - 1;
      if (t >= len_out) break;
      acc += w[c * k + j] * g[(b * len_out + t) * C + c];
    }
    dx[e] = acc;
  }
}

// part[ch, m] for m = j * C + c (j < k: dw taps, j == k: db).
template <class T>
__global__ void conv_dwdb_partial(const T* x, const T* g, int64_t len, int64_t len_out, int64_t C, int64_t k,
                                  int64_t s, int64_t rows, int64_t per, double* part) {
  const int64_t width = (k + 1) * C;
  const int64_t m = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, ch = blockIdx.y;
  if (m >= width) return;
  const int64_t j = m / C, c = m % C;
  const int64_t r0 = ch * per, r1 = r0 + per < rows ? r0 + per : rows;
  double acc = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const double gv = static_cast<double>(g[r * C + c]);
    if (j == k) {
      acc += gv;
    } else {
      const int64_t b = r / len_out, t = r % len_out, i = s * t + s - 1 - j;
      if (i >= 0 && i < len) acc += gv * static_cast<double>(x[(b * len + i) * C + c]);
    }
  }
  part[ch * width + m] = acc;
}
template <class T>
__global__ void conv_dwdb_combine(const double* part, int64_t nc, int64_t C, int64_t k, T* dw, T* db) {
  const int64_t width = (k + 1) * C;
  HKT_CUDA_LOOP(m, width) {
    const int64_t j = m / C, c = m % C;
    if (j < k ? !dw : !db) continue;
    double sum = 0;
    for (int64_t ch = 0; ch < nc; ++ch) sum += part[ch * width + m];
    if (j < k)
      dw[c * k + j] = static_cast<T>(sum);
    else
      db[c] = static_cast<T>(sum);
  }
}

}  // namespace

template <class T>
void conv_forward(const void* x, const void* w, const void* bias, void* y, int64_t B, int64_t len, int64_t C,
                  int64_t k, int64_t s) {
  const int64_t len_out = (len + s - 1) / s, n = B * len_out * C;
  if (n <= 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, conv_fwd_kernel<T>)(static_cast<const T*>(x), static_cast<const T*>(w),
                                                               static_cast<const T*>(bias), static_cast<T*>(y), len,
                                                               len_out, C, k, s, n);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void conv_backward(const void* xv, const void* wv, const void* gv, int64_t B, int64_t len, int64_t C, int64_t k,
                   int64_t s, void* dxv, void* dwv, void* dbv) {
  if (C <= 0) return;
  const T *x = static_cast<const T*>(xv), *w = static_cast<const T*>(wv), *g = static_cast<const T*>(gv);
  T *dx = static_cast<T*>(dxv), *dw = static_cast<T*>(dwv), *db = static_cast<T*>(dbv);
  const int64_t len_out = (len + s - 1) / s;
  if (dx && B * len > 0) {
    const int64_t n = B * len * C;
    HKT_LAUNCH(blocks_for(n), kThreads, 0, conv_dx_kernel<T>)(w, g, dx, len, len_out, C, k, s, n);
    CUDA_CHECK_LAUNCH();
  }
  if (!dw && !db) return;
  const int64_t rows = B * len_out;
  if (rows <= 0) {
    if (dw) CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(C * k) * sizeof(T), stream()));
    if (db) CUDA_CHECK(cudaMemsetAsync(db, 0, static_cast<size_t>(C) * sizeof(T), stream()));
    return;
  }
  const int64_t width = (k + 1) * C;
  const int64_t nc = rules::conv_grad_chunks(rows, C, k), per = (rows + nc - 1) / nc;
  Scratch part(static_cast<size_t>(nc * width) * sizeof(double));
  const dim3 grid(static_cast<unsigned>((width + kThreads - 1) / kThreads), static_cast<unsigned>(nc));
  HKT_LAUNCH(grid, kThreads, 0, conv_dwdb_partial<T>)(x, g, len, len_out, C, k, s, rows, per, part.as<double>());
  CUDA_CHECK_LAUNCH();
  HKT_LAUNCH(blocks_for(width), kThreads, 0, conv_dwdb_combine<T>)(part.as<double>(), nc, C, k, dw, db);
  CUDA_CHECK_LAUNCH();
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(conv, conv_forward<T>)
HKT_CUDA_KERNEL(conv_backward)

}  // namespace hkt::cuda
