// CPU kernels for the per-channel gated mix (see <hkt/ops/nn.hpp>):
//
//   y[r, c] = w[c] * a[r, c] + (1 - w[c]) * b[r, c]
//
// All buffers are contiguous: a, b, y, g, da, db [rows, C], w, dw [C].
// (1 - w) is rounded to T once per channel, as the composite
// `w * a + (1.0 - w) * b` does, so the forward has the composite's bits.
//
// Parallelism and determinism: the forward and da, db are parallel over rows
// (each element written by one task). dw[c] = sum_r g (a - b) is reduced over
// a fixed number of row chunks (a function of the shapes only) into double
// partials that are added in chunk order: the bits do not depend on the
// thread count.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

template <class T>
std::vector<T> one_minus(const T* w, int64_t C) {
  std::vector<T> v(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) v[static_cast<size_t>(c)] = T(1) - w[c];
  return v;
}

template <class T>
void gated_mix_forward(const T* a, const T* b, const T* w, T* y, int64_t rows, int64_t C) {
  if (rows <= 0 || C <= 0) return;
  const std::vector<T> v = one_minus(w, C);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / C);
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* __restrict ar = a + r * C;
      const T* __restrict br = b + r * C;
      const T* __restrict vr = v.data();
      T* __restrict yr = y + r * C;
      for (int64_t c = 0; c < C; ++c) yr[c] = w[c] * ar[c] + vr[c] * br[c];
    }
  });
}

// g = dL/dy. Any of da, db, dw may be null (not wanted).
//   da = w g,   db = (1 - w) g,   dw[c] = sum_r g[r, c] (a[r, c] - b[r, c])
template <class T>
void gated_mix_grad(const T* a, const T* b, const T* w, const T* g, int64_t rows, int64_t C, T* da, T* db,
                        T* dw) {
  if (C <= 0) return;
  if (rows <= 0) {
    if (dw) std::fill(dw, dw + C, T(0));
    return;
  }
  const std::vector<T> v = one_minus(w, C);
  const int64_t nc = rules::gated_mix_chunks(rows, C);
  const int64_t per = (rows + nc - 1) / nc;
  std::vector<double> part(dw ? static_cast<size_t>(nc * C) : 0, 0.0);
  // One pass over g per chunk: da, db and the chunk's dw partial together.
  parallel_for(0, nc, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      double* __restrict acc = dw ? part.data() + ch * C : nullptr;
      const int64_t r0 = ch * per, r1 = std::min(rows, r0 + per);
      for (int64_t r = r0; r < r1; ++r) {
        const T* __restrict gr = g + r * C;
        if (da) {
          T* __restrict o = da + r * C;
          for (int64_t c = 0; c < C; ++c) o[c] = w[c] * gr[c];
        }
        if (db) {
          T* __restrict o = db + r * C;
          const T* __restrict vr = v.data();
          for (int64_t c = 0; c < C; ++c) o[c] = vr[c] * gr[c];
        }
        if (acc) {
          const T* __restrict ar = a + r * C;
          const T* __restrict br = b + r * C;
          for (int64_t c = 0; c < C; ++c)
            acc[c] += static_cast<double>(gr[c]) * (static_cast<double>(ar[c]) - static_cast<double>(br[c]));
        }
      }
    }
  });
  if (!dw) return;
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0;
    for (int64_t ch = 0; ch < nc; ++ch) sum += part[static_cast<size_t>(ch * C + c)];
    dw[c] = static_cast<T>(sum);
  }
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void gated_mix(const void* a, const void* b, const void* w, void* y, int64_t rows, int64_t C) {
  gated_mix_forward<T>(buf<T>(a), buf<T>(b), buf<T>(w), buf<T>(y), rows, C);
}
template <class T>
void gated_mix_backward(const void* a, const void* b, const void* w, const void* g, int64_t rows, int64_t C,
                        void* da, void* db, void* dw) {
  gated_mix_grad<T>(buf<T>(a), buf<T>(b), buf<T>(w), buf<T>(g), rows, C, buf<T>(da), buf<T>(db), buf<T>(dw));
}
HKT_CPU_KERNEL(gated_mix)
HKT_CPU_KERNEL(gated_mix_backward)

}  // namespace hkt::cpu
