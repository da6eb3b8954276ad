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

// Rows are taken kRows at a time: each row's sums run in column order, as
// for one row alone, but the rows' chains of dependent adds are independent
// and overlap (one row alone waits on every add). The same bits.
inline constexpr int64_t kRows = 4;

// Mean and 1 / sqrt(var + eps) of the N rows at x (row stride D), in double.
template <int N, class T>
void row_stats(const T* x, int64_t D, double eps, double* mu, double* rs) {
  double s[N] = {}, v[N] = {};
  for (int64_t j = 0; j < D; ++j)
    for (int i = 0; i < N; ++i) s[i] += static_cast<double>(x[i * D + j]);
  for (int i = 0; i < N; ++i) mu[i] = s[i] / static_cast<double>(D);
  for (int64_t j = 0; j < D; ++j)
    for (int i = 0; i < N; ++i) {
      const double d = static_cast<double>(x[i * D + j]) - mu[i];
      v[i] += d * d;
    }
  for (int i = 0; i < N; ++i) rs[i] = 1.0 / std::sqrt(v[i] / static_cast<double>(D) + eps);
}

// w and b may be null (no affine part). mean and rstd receive [rows] values.
template <class T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t D,
                        double eps) {
  if (rows <= 0 || D <= 0) return;
  const int64_t grain = std::max<int64_t>(kRows, kElementwiseGrain / D);
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    double mus[kRows], rss[kRows];
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t k = (r - lo) % kRows;
      if (k == 0) {
        if (hi - r >= kRows) row_stats<kRows>(x + r * D, D, eps, mus, rss);
        else
          for (int64_t i = 0; i < hi - r; ++i) row_stats<1>(x + (r + i) * D, D, eps, mus + i, rss + i);
      }
      const T* xr = x + r * D;
      T* yr = y + r * D;
      const double mu = mus[k], rs = rss[k];
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
  // dx of the N rows from r (N <= kRows): their sums side by side, as in row_stats.
  auto rows_dx = [&]<int N>(int64_t r) {
    double mu[N], rs[N], a[N] = {}, c[N] = {};  // a: sum gw, c: sum gw * xhat
    for (int i = 0; i < N; ++i) mu[i] = static_cast<double>(mean[r + i]), rs[i] = static_cast<double>(rstd[r + i]);
    for (int64_t j = 0; j < D; ++j)
      for (int i = 0; i < N; ++i) {
        const double gw = static_cast<double>(g[(r + i) * D + j]) * (w ? static_cast<double>(w[j]) : 1.0);
        a[i] += gw;
        c[i] += gw * (static_cast<double>(x[(r + i) * D + j]) - mu[i]) * rs[i];
      }
    for (int i = 0; i < N; ++i) {
      const T* xr = x + (r + i) * D;
      const T* gr = g + (r + i) * D;
      T* dr = dx + (r + i) * D;
      const T at = static_cast<T>(a[i] / static_cast<double>(D)), ct = static_cast<T>(c[i] / static_cast<double>(D));
      const T mt = static_cast<T>(mu[i]), rt = static_cast<T>(rs[i]);
      for (int64_t j = 0; j < D; ++j) {
        const T gw = w ? gr[j] * w[j] : gr[j];
        const T xh = (xr[j] - mt) * rt;
        dr[j] = rt * (gw - at - xh * ct);
      }
    }
  };
  // dx of rows [r0, r1), kRows at a time.
  auto range_dx = [&](int64_t r0, int64_t r1) {
    int64_t r = r0;
    for (; r + kRows <= r1; r += kRows) rows_dx.template operator()<kRows>(r);
    for (; r < r1; ++r) rows_dx.template operator()<1>(r);
  };
  if (!dw && !db) {
    if (!dx) return;
    parallel_for(0, rows, std::max<int64_t>(kRows, kElementwiseGrain / D), range_dx);
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
      }
      if (dx && r1 > r0) range_dx(r0, r1);
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
