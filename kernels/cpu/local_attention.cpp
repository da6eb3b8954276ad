// Sliding-window (local) attention on the CPU: query i of each (batch, head)
// sees the keys j with |i - j| <= w (causal: i - w <= j <= i) that are valid.
// A row without any visible valid key gives 0 and lse = -inf (no gradient
// flows through it).
//
// Tiled: the rows are cut into tiles of kLocalTile; a query tile's scores
// against the band of keys its rows see (at most tile + 2w columns) form one
// small matrix product, as do P V, dO V^T, dS K, dS^T Q and P^T dO, all by the
// register-blocked tile product of the fused attention (attention_tile.hpp:
// AVX2 + FMA for float32 when the CPU has them, portable otherwise). Operands
// are packed per tile, zero padded (head dim to a multiple of 8, rows to even,
// band columns to a multiple of 8); the band and padding masks are applied per
// element. Forward: parallel over (b, h, query tile), an exact softmax over the
// band; saves O and one log-sum-exp per row (O(T)). Backward, scores
// recomputed: dQ by (b, h, query tile), dK and dV by (b, h, key tile) against
// the band of queries that see the tile. Every output row is written by one
// task with a fixed order of sums, so the bits do not depend on the number of
// threads. O(T w dh) time; O(T) memory besides each thread's tiles (tile x band),
// kept per thread across calls.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_tile.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

struct LocalDims {
  int64_t B, H, len, dh, w;
  bool causal;
  double scale;
  int64_t lo(int64_t i) const { return std::max<int64_t>(0, i - w); }
  int64_t hi(int64_t i) const { return causal ? i : std::min<int64_t>(len - 1, i + std::min(w, len)); }  // inclusive
  // The queries that see key j: [qlo(j), qhi(j)].
  int64_t qlo(int64_t j) const { return causal ? j : std::max<int64_t>(0, j - w); }
  int64_t qhi(int64_t j) const { return std::min<int64_t>(len - 1, j + std::min(w, len)); }
};

namespace local_detail {

inline constexpr int64_t kLocalTile = 64;
inline int64_t up8(int64_t n) { return (n + 7) / 8 * 8; }
inline int64_t up2(int64_t n) { return (n + 1) / 2 * 2; }

// dst[r][c] (row stride ld) = src row r0 + r, columns [0, dh), r < n; zeros elsewhere up to rows x ld.
template <class T>
void pack_rows(const T* src, int64_t dh, int64_t r0, int64_t n, int64_t rows, int64_t ld, std::vector<T>& dst) {
  dst.assign(static_cast<size_t>(rows * ld), T(0));
  for (int64_t r = 0; r < n; ++r) std::copy_n(src + (r0 + r) * dh, dh, dst.data() + r * ld);
}
// dst[c][r] (row stride ld) = src[r0 + r][c]: the transpose, zero padded to dhp x ld.
template <class T>
void pack_cols(const T* src, int64_t dh, int64_t r0, int64_t n, int64_t dhp, int64_t ld, std::vector<T>& dst) {
  dst.assign(static_cast<size_t>(dhp * ld), T(0));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < dh; ++c) dst[static_cast<size_t>(c * ld + r)] = src[(r0 + r) * dh + c];
}

// x[c] = s[c] * scale + bias[c] for c in [a, b], -inf elsewhere in [0, n).
template <class T>
void band_row(T* x, int64_t n, int64_t a, int64_t b, T scale, const T* bias) {
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  a = std::max<int64_t>(a, 0), b = std::min<int64_t>(b, n - 1);
  if (a > b) {
    std::fill_n(x, n, ninf);
    return;
  }
  std::fill_n(x, a, ninf);
  for (int64_t c = a; c <= b; ++c) x[c] = x[c] * scale + bias[c];
  std::fill(x + b + 1, x + n, ninf);
}

// bias[c] = 0 where key j0 + c is valid (c < n), -inf elsewhere in [0, np).
template <class T>
void key_bias(const bool* vb, int64_t j0, int64_t n, int64_t np, std::vector<T>& bias) {
  bias.assign(static_cast<size_t>(np), -std::numeric_limits<T>::infinity());
  for (int64_t c = 0; c < n; ++c)
    if (!vb || vb[j0 + c]) bias[static_cast<size_t>(c)] = T(0);
}

// The query tile qt's rows [i0, i0 + m) and the band of keys [j0, j0 + n) they see.
struct QueryTile {
  int64_t i0, m, mp, j0, n, np;
  QueryTile(const LocalDims& d, int64_t qt) {
    i0 = qt * kLocalTile, m = std::min(kLocalTile, d.len - i0), mp = up2(m);
    j0 = d.lo(i0), n = d.hi(i0 + m - 1) - j0 + 1, np = up8(n);
  }
};

// Packed operands and scores of one query tile: s = scale Q K^T + masks
// (kept per thread, per_thread in parallel.hpp).
template <class T>
struct TileWork {
  std::vector<T> q, kc, kr, vr, vc, dor, s, g, acc, bias, sum, mx;
  void scores(const LocalDims& d, const QueryTile& t, int64_t off, const T* qg, const T* kg, const bool* vb) {
    using attn_detail::mm;
    const int64_t dh = d.dh, dhp = up8(dh);
    pack_rows(qg + off, dh, t.i0, t.m, t.mp, dhp, q);
    pack_cols(kg + off, dh, t.j0, t.n, dhp, t.np, kc);
    key_bias(vb, t.j0, t.n, t.np, bias);
    s.resize(static_cast<size_t>(t.mp * t.np));
    mm(q.data(), dhp, kc.data(), t.np, s.data(), t.np, t.mp, t.np, dhp, false);
    for (int64_t r = 0; r < t.m; ++r) {
      const int64_t i = t.i0 + r;
      band_row(s.data() + r * t.np, t.np, d.lo(i) - t.j0, d.hi(i) - t.j0, static_cast<T>(d.scale), bias.data());
    }
    std::fill(s.begin() + t.m * t.np, s.end(), T(0));
  }
};

// The key-tile pass's buffers (dK, dV).
template <class T>
struct KeyWork {
  std::vector<T> kp, vp, qc, qr, doc, dor, st, gt, lcol, dcol, acc;
};

}  // namespace local_detail

// q, k, v, o [B, H, T, dh] contiguous; valid [B, T] or null; lse [B, H, T].
template <class T>
void local_attention_forward(const LocalDims& d, const T* q, const T* k, const T* v, const bool* valid, T* o,
                             T* lse) {
  using namespace local_detail;
  using namespace attn_detail;
  const int64_t T_ = d.len, dh = d.dh, dhp = up8(dh), nt = (T_ + kLocalTile - 1) / kLocalTile;
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  parallel_for(0, d.B * d.H * nt, 1, [&](int64_t lo_task, int64_t hi_task) {
    TileWork<T>& w = per_thread<TileWork<T>>();
    std::vector<T>&sum = w.sum, &mx = w.mx;
    sum.resize(static_cast<size_t>(kLocalTile)), mx.resize(static_cast<size_t>(kLocalTile));
    for (int64_t task = lo_task; task < hi_task; ++task) {
      const int64_t bh = task / nt, off = bh * T_ * dh;
      const QueryTile t(d, task % nt);
      w.scores(d, t, off, q, k, valid ? valid + (bh / d.H) * T_ : nullptr);
      for (int64_t r = 0; r < t.m; ++r) {
        T* sr = w.s.data() + r * t.np;
        const T m = row_max(sr, t.np);
        mx[static_cast<size_t>(r)] = m;
        if (m == ninf) {
          std::fill_n(sr, t.np, T(0));
          continue;
        }
        sum[static_cast<size_t>(r)] = exp_shift(sr, t.np, m);
      }
      pack_rows(v + off, dh, t.j0, t.n, t.np, dhp, w.vr);
      w.acc.resize(static_cast<size_t>(t.mp * dhp));
      mm(w.s.data(), t.np, w.vr.data(), dhp, w.acc.data(), dhp, t.mp, dhp, t.np, false);
      for (int64_t r = 0; r < t.m; ++r) {
        const int64_t i = t.i0 + r;
        T* oi = o + off + i * dh;
        const T m = mx[static_cast<size_t>(r)], sm = sum[static_cast<size_t>(r)];
        if (m == ninf) {
          std::fill_n(oi, dh, T(0));
          lse[bh * T_ + i] = ninf;
          continue;
        }
        for (int64_t c = 0; c < dh; ++c) oi[c] = w.acc[static_cast<size_t>(r * dhp + c)] / sm;
        lse[bh * T_ + i] = m + std::log(sm);
      }
    }
  });
}

// Gradients of the forward above: dq, dk, dv [B, H, T, dh] (all written).
template <class T>
void local_attention_grad(const LocalDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* o,
                              const T* lse, const T* dout, T* dq, T* dk, T* dv) {
  using namespace local_detail;
  using namespace attn_detail;
  const int64_t T_ = d.len, dh = d.dh, dhp = up8(dh), BH = d.B * d.H, nt = (T_ + kLocalTile - 1) / kLocalTile;
  const T scale = static_cast<T>(d.scale);
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  // D_i = dO_i . O_i per row.
  std::vector<T> D(static_cast<size_t>(BH * T_));
  parallel_for(0, BH * T_, kElementwiseGrain / std::max<int64_t>(1, dh), [&](int64_t lo_r, int64_t hi_r) {
    for (int64_t r = lo_r; r < hi_r; ++r) {
      T s = 0;
      for (int64_t c = 0; c < dh; ++c) s += dout[r * dh + c] * o[r * dh + c];
      D[static_cast<size_t>(r)] = s;
    }
  });
  // dQ by query tile: P = exp(S - lse), dS = P (dO V^T - D), dQ = scale dS K.
  parallel_for(0, BH * nt, 1, [&](int64_t lo_task, int64_t hi_task) {
    TileWork<T>& w = per_thread<TileWork<T>>();
    for (int64_t task = lo_task; task < hi_task; ++task) {
      const int64_t bh = task / nt, off = bh * T_ * dh;
      const QueryTile t(d, task % nt);
      w.scores(d, t, off, q, k, valid ? valid + (bh / d.H) * T_ : nullptr);
      pack_rows(dout + off, dh, t.i0, t.m, t.mp, dhp, w.dor);
      pack_cols(v + off, dh, t.j0, t.n, dhp, t.np, w.vc);
      w.g.resize(static_cast<size_t>(t.mp * t.np));
      mm(w.dor.data(), dhp, w.vc.data(), t.np, w.g.data(), t.np, t.mp, t.np, dhp, false);
      for (int64_t r = 0; r < t.mp; ++r) {
        T *sr = w.s.data() + r * t.np, *gr = w.g.data() + r * t.np;
        const int64_t i = t.i0 + r;
        if (r >= t.m || lse[bh * T_ + i] == ninf) {
          std::fill_n(gr, t.np, T(0));
          continue;
        }
        exp_shift(sr, t.np, lse[bh * T_ + i]);
        dsoftmax(sr, gr, t.np, D[static_cast<size_t>(bh * T_ + i)]);
      }
      pack_rows(k + off, dh, t.j0, t.n, t.np, dhp, w.kr);
      w.acc.resize(static_cast<size_t>(t.mp * dhp));
      mm(w.g.data(), t.np, w.kr.data(), dhp, w.acc.data(), dhp, t.mp, dhp, t.np, false);
      for (int64_t r = 0; r < t.m; ++r)
        for (int64_t c = 0; c < dh; ++c) dq[off + (t.i0 + r) * dh + c] = scale * w.acc[static_cast<size_t>(r * dhp + c)];
    }
  });
  // dK, dV by key tile, against the band of queries [i0, i0 + m) that see it:
  // S^T = K Q^T, P^T = exp(S^T - lse), dS^T = P^T (V dO^T - D), dV = P^T dO, dK = scale dS^T Q.
  parallel_for(0, BH * nt, 1, [&](int64_t lo_task, int64_t hi_task) {
    KeyWork<T>& kw = per_thread<KeyWork<T>>();
    auto &kp = kw.kp, &vp = kw.vp, &qc = kw.qc, &qr = kw.qr, &doc = kw.doc, &dor = kw.dor, &st = kw.st, &gt = kw.gt;
    auto &lcol = kw.lcol, &dcol = kw.dcol, &acc = kw.acc;
    for (int64_t task = lo_task; task < hi_task; ++task) {
      const int64_t bh = task / nt, off = bh * T_ * dh, j0 = (task % nt) * kLocalTile;
      const int64_t n = std::min(kLocalTile, T_ - j0), npr = up2(n);
      const int64_t i0 = d.qlo(j0), m = d.qhi(j0 + n - 1) - i0 + 1, mp = up8(m);
      const bool* vb = valid ? valid + (bh / d.H) * T_ : nullptr;
      pack_rows(k + off, dh, j0, n, npr, dhp, kp);
      pack_rows(v + off, dh, j0, n, npr, dhp, vp);
      pack_cols(q + off, dh, i0, m, dhp, mp, qc);
      pack_cols(dout + off, dh, i0, m, dhp, mp, doc);
      // Columns: -lse (-inf where the row is empty or virtual, so P = 0 there) and D.
      lcol.assign(static_cast<size_t>(mp), ninf), dcol.assign(static_cast<size_t>(mp), T(0));
      for (int64_t c = 0; c < m; ++c) {
        const T l = lse[bh * T_ + i0 + c];
        lcol[static_cast<size_t>(c)] = l == ninf ? ninf : -l;
        dcol[static_cast<size_t>(c)] = D[static_cast<size_t>(bh * T_ + i0 + c)];
      }
      st.resize(static_cast<size_t>(npr * mp)), gt.resize(static_cast<size_t>(npr * mp));
      mm(kp.data(), dhp, qc.data(), mp, st.data(), mp, npr, mp, dhp, false);
      mm(vp.data(), dhp, doc.data(), mp, gt.data(), mp, npr, mp, dhp, false);
      for (int64_t r = 0; r < npr; ++r) {
        T *sr = st.data() + r * mp, *gr = gt.data() + r * mp;
        const int64_t j = j0 + r;
        if (r >= n || (vb && !vb[j])) {
          std::fill_n(sr, mp, T(0)), std::fill_n(gr, mp, T(0));
          continue;
        }
        band_row(sr, mp, d.qlo(j) - i0, d.qhi(j) - i0, scale, lcol.data());
        exp_shift(sr, mp, T(0));
        for (int64_t c = 0; c < mp; ++c) gr[c] = sr[c] * (gr[c] - dcol[static_cast<size_t>(c)]);
      }
      pack_rows(dout + off, dh, i0, m, mp, dhp, dor);
      pack_rows(q + off, dh, i0, m, mp, dhp, qr);
      acc.resize(static_cast<size_t>(npr * dhp));
      mm(st.data(), mp, dor.data(), dhp, acc.data(), dhp, npr, dhp, mp, false);
      for (int64_t r = 0; r < n; ++r) std::copy_n(acc.data() + r * dhp, dh, dv + off + (j0 + r) * dh);
      mm(gt.data(), mp, qr.data(), dhp, acc.data(), dhp, npr, dhp, mp, false);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < dh; ++c) dk[off + (j0 + r) * dh + c] = scale * acc[static_cast<size_t>(r * dhp + c)];
    }
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void local_attention(const void* q, const void* k, const void* v, const bool* valid, void* o, void* lse, int64_t B,
                     int64_t H, int64_t len, int64_t dh, int64_t w, bool causal, double scale) {
  local_attention_forward<T>({B, H, len, dh, w, causal, scale}, buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(o),
                             buf<T>(lse));
}
template <class T>
void local_attention_backward(const void* q, const void* k, const void* v, const bool* valid, const void* o,
                              const void* lse, const void* g, int64_t B, int64_t H, int64_t len, int64_t dh,
                              int64_t w, bool causal, double scale, void* dq, void* dk, void* dv) {
  local_attention_grad<T>({B, H, len, dh, w, causal, scale}, buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(o),
                          buf<T>(lse), buf<T>(g), buf<T>(dq), buf<T>(dk), buf<T>(dv));
}
HKT_CPU_KERNEL(local_attention)
HKT_CPU_KERNEL(local_attention_backward)

}  // namespace hkt::cpu
