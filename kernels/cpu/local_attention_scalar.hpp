// TEMPORARY (development only): the old scalar kernel, for timing against the tiled one.
// Sliding-window (local) attention on the CPU: query i of each (batch, head)
// sees the keys j with |i - j| <= w (causal: i - w <= j <= i) that are valid.
// O(T w dh) time; the only state kept between forward and backward is the
// output and one log-sum-exp per row (O(T)), the backward recomputes the
// scores. One task per (batch, head), each serial inside: the bits do not
// depend on the number of threads. A row without any visible valid key gives
// 0 and lse = -inf (no gradient flows through it).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/local_attention.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {


template <class T>
T local_dot_scalar(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

// q, k, v, o [B, H, T, dh] contiguous; valid [B, T] or null; lse [B, H, T].
template <class T>
void local_attention_forward_scalar(const LocalDims& d, const T* q, const T* k, const T* v, const bool* valid, T* o,
                             T* lse) {
  const int64_t T_ = d.len, dh = d.dh, span = d.causal ? d.w + 1 : 2 * d.w + 1;
  const T scale = static_cast<T>(d.scale);
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo_bh, int64_t hi_bh) {
    std::vector<T> s(static_cast<size_t>(std::min<int64_t>(span, T_)));
    for (int64_t bh = lo_bh; bh < hi_bh; ++bh) {
      const int64_t off = bh * T_ * dh;
      const bool* vb = valid ? valid + (bh / d.H) * T_ : nullptr;
      for (int64_t i = 0; i < T_; ++i) {
        const T* qi = q + off + i * dh;
        T* oi = o + off + i * dh;
        const int64_t j0 = d.lo(i), j1 = d.hi(i);
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t j = j0; j <= j1; ++j) {
          T& sj = s[static_cast<size_t>(j - j0)];
          if (vb && !vb[j]) {
            sj = -std::numeric_limits<T>::infinity();
            continue;
          }
          sj = local_dot_scalar(qi, k + off + j * dh, dh) * scale;
          m = std::max(m, sj);
        }
        std::fill(oi, oi + dh, T(0));
        if (m == -std::numeric_limits<T>::infinity()) {
          lse[bh * T_ + i] = m;
          continue;
        }
        T sum = 0;
        for (int64_t j = j0; j <= j1; ++j) {
          const T sj = s[static_cast<size_t>(j - j0)];
          if (sj == -std::numeric_limits<T>::infinity()) continue;
          const T p = std::exp(sj - m);
          sum += p;
          const T* vj = v + off + j * dh;
          for (int64_t c = 0; c < dh; ++c) oi[c] += p * vj[c];
        }
        for (int64_t c = 0; c < dh; ++c) oi[c] /= sum;
        lse[bh * T_ + i] = m + std::log(sum);
      }
    }
  });
}

// Gradients of the forward above: dq, dk, dv [B, H, T, dh] (all written).
template <class T>
void local_attention_backward_scalar(const LocalDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* o,
                              const T* lse, const T* dout, T* dq, T* dk, T* dv) {
  const int64_t T_ = d.len, dh = d.dh;
  const T scale = static_cast<T>(d.scale);
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo_bh, int64_t hi_bh) {
    for (int64_t bh = lo_bh; bh < hi_bh; ++bh) {
      const int64_t off = bh * T_ * dh;
      const bool* vb = valid ? valid + (bh / d.H) * T_ : nullptr;
      std::fill(dq + off, dq + off + T_ * dh, T(0));
      std::fill(dk + off, dk + off + T_ * dh, T(0));
      std::fill(dv + off, dv + off + T_ * dh, T(0));
      for (int64_t i = 0; i < T_; ++i) {
        const T li = lse[bh * T_ + i];
        if (li == -std::numeric_limits<T>::infinity()) continue;
        const T *qi = q + off + i * dh, *gi = dout + off + i * dh;
        const T Di = local_dot_scalar(gi, o + off + i * dh, dh);
        T* dqi = dq + off + i * dh;
        for (int64_t j = d.lo(i), j1 = d.hi(i); j <= j1; ++j) {
          if (vb && !vb[j]) continue;
          const T *kj = k + off + j * dh, *vj = v + off + j * dh;
          const T p = std::exp(local_dot_scalar(qi, kj, dh) * scale - li);
          const T ds = p * (local_dot_scalar(gi, vj, dh) - Di) * scale;
          T *dkj = dk + off + j * dh, *dvj = dv + off + j * dh;
          for (int64_t c = 0; c < dh; ++c) {
            dqi[c] += ds * kj[c];
            dkj[c] += ds * qi[c];
            dvj[c] += p * gi[c];
          }
        }
      }
    }
  });
}

}  // namespace hkt::cpu
