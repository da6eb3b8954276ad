// CPU kernels for the causal depthwise 1-D convolution (see
// <hkt/ops/conv.hpp> for the semantics):
//
//   y[b, t, c] = bias[c] + sum_{j<k} w[c, j] * x[b, s*t + s - 1 - j, c],
//   x[b, i, c] = 0 outside 0 <= i < T,  T_out = ceil(T / s).
//
// All buffers are contiguous: x [B, T, C], w [C, k], bias [C], y [B, T_out, C].
// The weight is first transposed to [k, C] so that every inner loop runs over
// channels with unit stride (C is the fastest dim) and vectorises.
//
// Parallelism and determinism:
//   forward, dx  parallel over rows (b, t) / (b, i) with a fixed grain; every
//                output element is written by exactly one task (dx is a
//                gather, not a scatter), so there are no races and the result
//                does not depend on the schedule.
//   dw, db       the B * T_out rows of g are cut into a fixed number of chunks
//                (a function of the shapes only); each chunk sums into its own
//                double partial buffer and the partials are added in chunk
//                order, so the bits do not depend on the thread count.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

inline int64_t conv1d_out_len(int64_t len, int64_t stride) { return (len + stride - 1) / stride; }

// [C, k] -> [k, C]
template <class T>
std::vector<T> conv1d_weight_kc(const T* w, int64_t C, int64_t k) {
  std::vector<T> wt(static_cast<size_t>(C * k));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t j = 0; j < k; ++j) wt[static_cast<size_t>(j * C + c)] = w[c * k + j];
  return wt;
}

// bias may be null.
template <class T>
void causal_dwconv1d_forward(const T* x, const T* w, const T* bias, T* y, int64_t B, int64_t len, int64_t C,
                             int64_t k, int64_t s) {
  const int64_t len_out = conv1d_out_len(len, s);
  const int64_t rows = B * len_out;
  if (rows <= 0 || C <= 0) return;
  const std::vector<T> wt = conv1d_weight_kc(w, C, k);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (C * std::max<int64_t>(1, k)));
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t b = r / len_out, t = r % len_out;
      T* __restrict yr = y + r * C;
      if (bias) {
        for (int64_t c = 0; c < C; ++c) yr[c] = bias[c];
      } else {
        for (int64_t c = 0; c < C; ++c) yr[c] = T(0);
      }
      for (int64_t j = 0; j < k; ++j) {
        const int64_t i = s * t + s - 1 - j;
        if (i < 0) break;  // i decreases with j
        if (i >= len) continue;
        const T* __restrict xr = x + (b * len + i) * C;
        const T* __restrict wj = wt.data() + j * C;
        for (int64_t c = 0; c < C; ++c) yr[c] += wj[c] * xr[c];
      }
    }
  });
}

// g = dL/dy [B, T_out, C]. Any of dx [B, T, C], dw [C, k], db [C] may be null
// (not wanted).
//   dx[b, i, c] = sum_{j, t : s*t + s - 1 - j = i} w[c, j] * g[b, t, c]
//   dw[c, j]    = sum_{b, t} g[b, t, c] * x[b, s*t + s - 1 - j, c]
//   db[c]       = sum_{b, t} g[b, t, c]
template <class T>
void causal_dwconv1d_backward(const T* x, const T* w, const T* g, int64_t B, int64_t len, int64_t C, int64_t k,
                              int64_t s, T* dx, T* dw, T* db) {
  if (C <= 0) return;
  const int64_t len_out = conv1d_out_len(len, s);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (C * std::max<int64_t>(1, k)));

  if (dx && B * len > 0) {
    const std::vector<T> wt = conv1d_weight_kc(w, C, k);
    parallel_for(0, B * len, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t b = r / len, i = r % len;
        T* __restrict dr = dx + r * C;
        for (int64_t c = 0; c < C; ++c) dr[c] = T(0);
        // Output t reads input i through tap j when s*(t+1) = i + j + 1.
        for (int64_t j = (s - (i + 1) % s) % s; j < k; j += s) {
          const int64_t t = (i + j + 1) / s - 1;
          if (t >= len_out) break;  // t grows with j
          const T* __restrict gr = g + (b * len_out + t) * C;
          const T* __restrict wj = wt.data() + j * C;
          for (int64_t c = 0; c < C; ++c) dr[c] += wj[c] * gr[c];
        }
      }
    });
  }

  if (!dw && !db) return;
  const int64_t rows = B * len_out;
  if (rows <= 0) {
    if (dw) std::fill(dw, dw + C * k, T(0));
    if (db) std::fill(db, db + C, T(0));
    return;
  }
  // Partial sums per chunk: [k + 1, C] doubles (k rows for dw, one for db).
  const int64_t width = (k + 1) * C;
  const int64_t nc = rules::conv_grad_chunks(rows, C, k);
  const int64_t per = (rows + nc - 1) / nc;
  std::vector<double> part(static_cast<size_t>(nc * width), 0.0);
  parallel_for(0, nc, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      double* acc = part.data() + ch * width;
      const int64_t r0 = ch * per, r1 = std::min(rows, r0 + per);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / len_out, t = r % len_out;
        const T* __restrict gr = g + r * C;
        if (dw) {
          for (int64_t j = 0; j < k; ++j) {
            const int64_t i = s * t + s - 1 - j;
            if (i < 0) break;
            if (i >= len) continue;
            const T* __restrict xr = x + (b * len + i) * C;
            double* __restrict aj = acc + j * C;
            for (int64_t c = 0; c < C; ++c) aj[c] += static_cast<double>(gr[c]) * static_cast<double>(xr[c]);
          }
        }
        if (db) {
          double* __restrict ab = acc + k * C;
          for (int64_t c = 0; c < C; ++c) ab[c] += static_cast<double>(gr[c]);
        }
      }
    }
  });
  // Combine the chunks in order, in parallel over the (k + 1) * C columns.
  parallel_for(0, width, std::max<int64_t>(1, kElementwiseGrain / nc), [&](int64_t lo, int64_t hi) {
    for (int64_t m = lo; m < hi; ++m) {
      const int64_t j = m / C, c = m % C;
      if (j < k ? !dw : !db) continue;
      double sum = 0;
      for (int64_t ch = 0; ch < nc; ++ch) sum += part[static_cast<size_t>(ch * width + m)];
      if (j < k) {
        dw[c * k + j] = static_cast<T>(sum);
      } else {
        db[c] = static_cast<T>(sum);
      }
    }
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void conv(const void* x, const void* w, const void* bias, void* y, int64_t B, int64_t len, int64_t C, int64_t k,
          int64_t s) {
  causal_dwconv1d_forward<T>(buf<T>(x), buf<T>(w), buf<T>(bias), buf<T>(y), B, len, C, k, s);
}
template <class T>
void conv_backward(const void* x, const void* w, const void* g, int64_t B, int64_t len, int64_t C, int64_t k,
                   int64_t s, void* dx, void* dw, void* db) {
  causal_dwconv1d_backward<T>(buf<T>(x), buf<T>(w), buf<T>(g), B, len, C, k, s, buf<T>(dx), buf<T>(dw), buf<T>(db));
}
HKT_CPU_KERNEL(conv)
HKT_CPU_KERNEL(conv_backward)

}  // namespace hkt::cpu
