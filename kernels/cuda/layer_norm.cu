// layer_norm over the last dim of a contiguous [rows, D] array, as on the CPU
// (kernels/cpu/layer_norm.cpp): per row, mean and variance in double (two
// passes), rstd = 1 / sqrt(var + eps), y = (x - mean) rstd w + b. Backward:
//   dx = rstd (gw - mean_j(gw) - xhat mean_j(gw xhat)),  gw = g w
//   dw = sum_rows g xhat,  db = sum_rows g
// dx: one block per row. dw, db: the CPU's row chunks (rules::layer_norm_chunks),
// each column's chunk partials (double) summed in chunk order, so the bits are reproducible.
#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

constexpr int kRowThreads = 128;

template <class T>
__global__ void __launch_bounds__(kRowThreads)
    ln_fwd_kernel(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t D, double eps) {
  const int64_t r = blockIdx.x;
  const T* xr = x + r * D;
  T* yr = y + r * D;
  double s = 0;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += static_cast<double>(xr[j]);
  const double mu = block_reduce(s, 0.0, SumOp{}) / static_cast<double>(D);
  double v = 0;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const double d = static_cast<double>(xr[j]) - mu;
    v += d * d;
  }
  v = block_reduce(v, 0.0, SumOp{});
  const double rs = 1.0 / sqrt(v / static_cast<double>(D) + eps);
  if (threadIdx.x == 0) {
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(rs);
  }
  const T mt = static_cast<T>(mu), rt = static_cast<T>(rs);
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    T out = (xr[j] - mt) * rt;
    if (w) out = out * w[j];
    if (b) out = out + b[j];
    yr[j] = out;
  }
}

template <class T>
__global__ void __launch_bounds__(kRowThreads)
    ln_dx_kernel(const T* x, const T* g, const T* w, const T* mean, const T* rstd, int64_t D, T* dx) {
  const int64_t r = blockIdx.x;
  const T *xr = x + r * D, *gr = g + r * D;
  T* dr = dx + r * D;
  const double mu = static_cast<double>(mean[r]), rs = static_cast<double>(rstd[r]);
  double a = 0, c = 0;  // sum gw, sum gw * xhat
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const double gw = static_cast<double>(gr[j]) * (w ? static_cast<double>(w[j]) : 1.0);
    a += gw;
    c += gw * (static_cast<double>(xr[j]) - mu) * rs;
  }
  a = block_reduce(a, 0.0, SumOp{});
  c = block_reduce(c, 0.0, SumOp{});
  const T at = static_cast<T>(a / static_cast<double>(D)), ct = static_cast<T>(c / static_cast<double>(D));
  const T mt = static_cast<T>(mu), rt = static_cast<T>(rs);
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const T gw = w ? gr[j] * w[j] : gr[j];
    const T xh = (xr[j] - mt) * rt;
    dr[j] = rt * (gw - at - xh * ct);
  }
}

// Partial sums of chunk blockIdx.y over columns: pw[ch, j] = sum g xhat, pb[ch, j] = sum g.
template <class T>
__global__ void ln_dwdb_partial(const T* x, const T* g, const T* mean, const T* rstd, int64_t rows, int64_t D,
                                int64_t per, double* pw, double* pb) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, ch = blockIdx.y;
  if (j >= D) return;
  const int64_t r0 = ch * per, r1 = r0 + per < rows ? r0 + per : rows;
  double aw = 0, ab = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const T gv = g[r * D + j];
    if (pw) aw += static_cast<double>(gv * ((x[r * D + j] - mean[r]) * rstd[r]));
    ab += static_cast<double>(gv);
  }
  if (pw) pw[ch * D + j] = aw;
  if (pb) pb[ch * D + j] = ab;
}
template <class T>
__global__ void ln_dwdb_combine(const double* pw, const double* pb, int64_t nc, int64_t D, T* dw, T* db) {
  HKT_CUDA_LOOP(j, D) {
    double sw = 0, sb = 0;
    for (int64_t ch = 0; ch < nc; ++ch) {
      if (dw) sw += pw[ch * D + j];
      if (db) sb += pb[ch * D + j];
    }
    if (dw) dw[j] = static_cast<T>(sw);
    if (db) db[j] = static_cast<T>(sb);
  }
}

}  // namespace

template <class T>
void layer_norm_forward(const void* x, const void* w, const void* b, void* y, void* mean, void* rstd, int64_t rows,
                        int64_t D, double eps) {
  if (rows <= 0 || D <= 0) return;
  HKT_CHECK(rows < (int64_t{1} << 31), "layer_norm: too many rows (", rows, ") for the CUDA kernel");
  HKT_LAUNCH(static_cast<unsigned>(rows), kRowThreads, 0, ln_fwd_kernel<T>)(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b), static_cast<T*>(y),
      static_cast<T*>(mean), static_cast<T*>(rstd), D, eps);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void layer_norm_backward(const void* xv, const void* gv, const void* wv, const void* meanv, const void* rstdv,
                         int64_t rows, int64_t D, void* dxv, void* dwv, void* dbv) {
  if (D <= 0) return;
  const T *x = static_cast<const T*>(xv), *g = static_cast<const T*>(gv), *w = static_cast<const T*>(wv);
  const T *mean = static_cast<const T*>(meanv), *rstd = static_cast<const T*>(rstdv);
  T *dx = static_cast<T*>(dxv), *dw = static_cast<T*>(dwv), *db = static_cast<T*>(dbv);
  if (rows <= 0) {
    if (dw) CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(D) * sizeof(T), stream()));
    if (db) CUDA_CHECK(cudaMemsetAsync(db, 0, static_cast<size_t>(D) * sizeof(T), stream()));
    return;
  }
  HKT_CHECK(rows < (int64_t{1} << 31), "layer_norm_backward: too many rows (", rows, ") for the CUDA kernel");
  if (dx) {
    HKT_LAUNCH(static_cast<unsigned>(rows), kRowThreads, 0, ln_dx_kernel<T>)(x, g, w, mean, rstd, D, dx);
    CUDA_CHECK_LAUNCH();
  }
  if (!dw && !db) return;
  const int64_t nc = rules::layer_norm_chunks(rows, D), per = (rows + nc - 1) / nc;
  Scratch pw(static_cast<size_t>(nc * D) * sizeof(double)), pb(static_cast<size_t>(nc * D) * sizeof(double));
  const dim3 grid(static_cast<unsigned>((D + kThreads - 1) / kThreads), static_cast<unsigned>(nc));
  HKT_LAUNCH(grid, kThreads, 0, ln_dwdb_partial<T>)(x, g, mean, rstd, rows, D, per,
                                                      dw ? pw.as<double>() : nullptr, db ? pb.as<double>() : nullptr);
  CUDA_CHECK_LAUNCH();
  HKT_LAUNCH(blocks_for(D), kThreads, 0, ln_dwdb_combine<T>)(pw.as<double>(), pb.as<double>(), nc, D, dw, db);
  CUDA_CHECK_LAUNCH();
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(layer_norm, layer_norm_forward<T>)
HKT_CUDA_KERNEL(layer_norm_backward)

}  // namespace hkt::cuda
