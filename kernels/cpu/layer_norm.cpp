// CPU layer-norm kernels over the last dim of a contiguous [rows, D] array.
//
// Forward: per row, mean and population variance in double (two passes over
// the row), rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * w + b.
// Backward: dx per row; dweight and dbias reduce over rows in a fixed number
// of chunks (rules::layer_norm_chunks, shared with the CUDA kernel) whose
// double partial sums are added in chunk order, so the bits do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

// w and b may be null (no affine part). mean and rstd receive [rows] values.
template <class T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t D,
                        double eps) {
  if (rows <= 0 || D <= 0) return;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / D);
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* xr = x + r * D;
      T* yr = y + r * D;
      double s = 0;
      for (int64_t j = 0; j < D; ++j) s += static_cast<double>(xr[j]);
      const double mu = s / static_cast<double>(D);
      double v = 0;
      for (int64_t j = 0; j < D; ++j) {
        const double d = static_cast<double>(xr[j]) - mu;
        v += d * d;
      }
      const double rs = 1.0 / std::sqrt(v / static_cast<double>(D) + eps);
      mean[r] = static_cast<T>(mu);
      rstd[r] = static_cast<T>(rs);
      const T mt = static_cast<T>(mu), rt = static_cast<T>(rs);
      if (w && b) {
        for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mt) * rt * w[j] + b[j];
      } else if (w) {
        for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mt) * rt * w[j];
      } else if (b) {
        for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mt) * rt + b[j];
      } else {
        for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mt) * rt;
      }
    }
  });
}

// Given g = dL/dy, with xhat = (x - mean) * rstd and gw = g * w (or g):
//   dx = rstd * (gw - mean_j(gw) - xhat * mean_j(gw * xhat))
//   dw = sum_rows g * xhat,   db = sum_rows g
// Any of dx, dw, db may be null (not wanted); w may be null (no weight).
template <class T>
void layer_norm_grad(const T* x, const T* g, const T* w, const T* mean, const T* rstd, int64_t rows, int64_t D,
                         T* dx, T* dw, T* db) {
  if (D <= 0) return;
  if (rows <= 0) {
    if (dw) std::fill(dw, dw + D, T(0));
    if (db) std::fill(db, db + D, T(0));
    return;
  }
  auto row_dx = [&](int64_t r) {
    const T* xr = x + r * D;
    const T* gr = g + r * D;
    T* dr = dx + r * D;
    const double mu = static_cast<double>(mean[r]), rs = static_cast<double>(rstd[r]);
    double a = 0, c = 0;  // sum gw, sum gw * xhat
    for (int64_t j = 0; j < D; ++j) {
      const double gw = static_cast<double>(gr[j]) * (w ? static_cast<double>(w[j]) : 1.0);
      a += gw;
      c += gw * (static_cast<double>(xr[j]) - mu) * rs;
    }
    const T at = static_cast<T>(a / static_cast<double>(D)), ct = static_cast<T>(c / static_cast<double>(D));
    const T mt = static_cast<T>(mu), rt = static_cast<T>(rs);
    for (int64_t j = 0; j < D; ++j) {
      const T gw = w ? gr[j] * w[j] : gr[j];
      const T xh = (xr[j] - mt) * rt;
      dr[j] = rt * (gw - at - xh * ct);
    }
  };
  if (!dw && !db) {
    if (!dx) return;
    parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / D), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) row_dx(r);
    });
    return;
  }
  const int64_t nc = rules::layer_norm_chunks(rows, D);  // shared with the CUDA kernel
  const int64_t per = (rows + nc - 1) / nc;
  std::vector<double> pw(dw ? static_cast<size_t>(nc * D) : 0), pb(db ? static_cast<size_t>(nc * D) : 0);
  parallel_for(0, nc, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      double* aw = dw ? pw.data() + ch * D : nullptr;
      double* ab = db ? pb.data() + ch * D : nullptr;
      const int64_t r0 = ch * per, r1 = std::min(rows, r0 + per);
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * D;
        const T* gr = g + r * D;
        if (aw) {
          const T mt = mean[r], rt = rstd[r];
          for (int64_t j = 0; j < D; ++j) aw[j] += static_cast<double>(gr[j] * ((xr[j] - mt) * rt));
        }
        if (ab)
          for (int64_t j = 0; j < D; ++j) ab[j] += static_cast<double>(gr[j]);
        if (dx) row_dx(r);
      }
    }
  });
  // Combine the chunks in order, in parallel over columns.
  parallel_for(0, D, std::max<int64_t>(1, kElementwiseGrain / nc), [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      if (dw) {
        double s = 0;
        for (int64_t ch = 0; ch < nc; ++ch) s += pw[static_cast<size_t>(ch * D + j)];
        dw[j] = static_cast<T>(s);
      }
      if (db) {
        double s = 0;
        for (int64_t ch = 0; ch < nc; ++ch) s += pb[static_cast<size_t>(ch * D + j)];
        db[j] = static_cast<T>(s);
      }
    }
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void layer_norm(const void* x, const void* w, const void* b, void* y, void* mean, void* rstd, int64_t rows, int64_t D,
                double eps) {
  layer_norm_forward<T>(buf<T>(x), buf<T>(w), buf<T>(b), buf<T>(y), buf<T>(mean), buf<T>(rstd), rows, D, eps);
}
template <class T>
void layer_norm_backward(const void* x, const void* g, const void* w, const void* mean, const void* rstd,
                         int64_t rows, int64_t D, void* dx, void* dw, void* db) {
  layer_norm_grad<T>(buf<T>(x), buf<T>(g), buf<T>(w), buf<T>(mean), buf<T>(rstd), rows, D, buf<T>(dx), buf<T>(dw),
                     buf<T>(db));
}
HKT_CPU_KERNEL(layer_norm)
HKT_CPU_KERNEL(layer_norm_backward)

}  // namespace hkt::cpu
