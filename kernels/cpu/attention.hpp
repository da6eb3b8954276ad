// CPU kernels of the fused multi-scale attention (ops/src/attention.cpp).
//
// Per batch b and head h, with L levels, T_l = ceil(T / 2^l):
//   S[i, j] = sum_l lambda[h, l] * scale * (Q_l[r_l(i)] . K_l[r_l(j)])
//   r_l(i)  = i >> l                      (bidirectional)
//           = floor((i + 1) / 2^l) - 1    (causal; the term is 0 where r_l(i) < 0 or r_l(j) < 0)
//   O       = softmax(S + mask) V         (mask: padded keys, and j > i when causal)
// A row whose keys are all masked gives O = 0 and LSE = +inf.
//
// Tiling: rows and columns are cut into tiles of `size` positions (64, or
// 2^(L-1) when larger) whose boundaries are aligned to the coarsest level's
// blocks (multiples of size, shifted by -1 in causal mode), so a coarse row or
// column never straddles two tiles. For a (query tile, key tile) pair the
// level-0 block is a small product Q0[tile] K0[tile]^T and level l >= 1 adds
// the coarse block Q_l[rows] K_l[cols]^T (about (size >> l)^2 entries) read at
// (r_l(i), r_l(j)). Nothing of size T x T is ever stored.
//
// Forward: parallel over (b, h, query tile); an online softmax streams over the
// key tiles (causal: key tiles entirely above the diagonal are skipped) and
// accumulates P V. Saves O and LSE = max + log(sum) per row.
//
// Backward (P recomputed from LSE, D_i = rowsum(dO * O), dS = P (dP - D_i),
// G = scale * dS):
//   pass 1, parallel over (b, h, query tile): dQ_0 = lambda_0 G K_0 and
//     dQ_l[c] = lambda_l sum_{(i, j) -> (c, c')} G[i, j] K_l[c'] (each tile owns
//     its fine rows and, by the alignment, its coarse rows); per-tile partials of
//     dlambda_l = sum_{i, j} G[i, j] (Q_l[r_l(i)] . K_l[r_l(j)]), merged in a
//     fixed order afterwards;
//   pass 2, parallel over (b, h, key tile): dV = P^T dO, dK_0 = lambda_0 G^T Q_0,
//     dK_l likewise from the block sums of G.
// Every reduction has a fixed order, so the bits do not depend on the number
// of threads. float32 inputs accumulate in float32 (dlambda in double).
//
// The small products are plain register-blocked loops (no BLAS inside TBB
// tasks); operands are copied into zero-padded tiles (rows to a multiple of
// 8, dh to a multiple of 8) so the blocked loops need no edge cases.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {

// The problem: every pointer is to a contiguous buffer.
template <class T>
struct AttnArgs {
  int64_t B = 0, H = 0, len = 0, dh = 0, L = 1;  // len = T, the sequence length
  std::vector<const T*> q, k;  // L entries, level l: [B, H, T_l, dh]
  const T* v = nullptr;        // [B, H, T, dh]
  const T* lambda = nullptr;   // [H, L]
  const bool* valid = nullptr; // [B, T] or null (every key valid)
  bool causal = false;
  double scale = 1;
};

inline int64_t attn_level_len(int64_t T, int64_t l) { return (T + (int64_t{1} << l) - 1) >> l; }
// The coarse row of level l read by fine position i (< 0: no term).
inline int64_t attn_level_row(int64_t i, int64_t l, bool causal) { return causal ? ((i + 1) >> l) - 1 : i >> l; }

// Tile t covers [begin(t), end(t)); boundaries at t * size - off.
struct AttnTiling {
  int64_t T, size, off, count;
  AttnTiling(int64_t T_, int64_t L, bool causal) : T(T_) {
    size = std::max<int64_t>(64, int64_t{1} << (L - 1));
    off = (causal && L > 1) ? 1 : 0;
    count = (T + off + size - 1) / size;
  }
  int64_t begin(int64_t t) const { return std::max<int64_t>(0, t * size - off); }
  int64_t end(int64_t t) const { return std::min(T, (t + 1) * size - off); }
};

namespace attn_detail {

inline constexpr int64_t kPad = 8;
inline int64_t pad(int64_t n) { return (n + kPad - 1) / kPad * kPad; }

// c[m][n] (= or +=) a[m][K] (row stride lda) * b[K][n] (row stride ldb);
// m % 4 == 0, n % 8 == 0. Register-blocked 4 x 8.
template <class T>
void mm_generic(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n,
                int64_t K, bool acc) {
  for (int64_t i = 0; i < m; i += 4) {
    for (int64_t j = 0; j < n; j += 8) {
      T x[4][8];
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < 8; ++cc) x[r][cc] = acc ? c[(i + r) * ldc + j + cc] : T(0);
      for (int64_t k = 0; k < K; ++k) {
        const T* bk = b + k * ldb + j;
        for (int r = 0; r < 4; ++r) {
          const T av = a[(i + r) * lda + k];
          for (int cc = 0; cc < 8; ++cc) x[r][cc] += av * bk[cc];
        }
      }
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < 8; ++cc) c[(i + r) * ldc + j + cc] = x[r][cc];
    }
  }
}

// x[j] = exp(x[j] - sub) for j < n (n % 8 == 0); returns the sum.
template <class T>
T exp_shift_generic(T* x, int64_t n, T sub) {
  T s = 0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - sub);
    s += x[j];
  }
  return s;
}

// float32 versions with AVX2 + FMA when the CPU has them (attention.cpp).
void mm_f32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
            int64_t K, bool acc);
float exp_shift_f32(float* x, int64_t n, float sub);

template <class T>
void mm(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
        bool acc) {
  if constexpr (std::is_same_v<T, float>)
    mm_f32(a, lda, b, ldb, c, ldc, m, n, K, acc);
  else
    mm_generic(a, lda, b, ldb, c, ldc, m, n, K, acc);
}
template <class T>
T exp_shift(T* x, int64_t n, T sub) {
  if constexpr (std::is_same_v<T, float>)
    return exp_shift_f32(x, n, sub);
  else
    return exp_shift_generic(x, n, sub);
}

// c[m][n] = a[m][kd] * bt[kd][n]
template <class T>
void mm_abt(const T* a, const T* bt, T* c, int64_t m, int64_t n, int64_t kd) {
  mm(a, kd, bt, n, c, n, m, n, kd, false);
}
// c[m][kd] += a[m][kn] (row stride lda) * b[kn][kd]
template <class T>
void mm_ab_acc(const T* a, int64_t lda, const T* b, T* c, int64_t m, int64_t kn, int64_t kd) {
  mm(a, lda, b, kd, c, kd, m, kd, kn, true);
}

// dst[n][m] = src[m][n] (both padded sizes).
template <class T>
void transpose(const T* src, T* dst, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) dst[j * m + i] = src[i * n + j];
}

// Rows r0..r0+n-1 of a [*, dh] matrix into rows[np][dhp] (zero padded) and/or
// its transpose tr[dhp][np].
template <class T>
void load_rows(const T* src, int64_t r0, int64_t n, int64_t dh, int64_t np, int64_t dhp, std::vector<T>* rows,
               std::vector<T>* tr) {
  if (rows) {
    rows->assign(static_cast<size_t>(np * dhp), T(0));
    for (int64_t r = 0; r < n; ++r) std::copy_n(src + (r0 + r) * dh, dh, rows->data() + r * dhp);
  }
  if (tr) {
    tr->assign(static_cast<size_t>(np * dhp), T(0));
    for (int64_t r = 0; r < n; ++r)
      for (int64_t d = 0; d < dh; ++d) (*tr)[static_cast<size_t>(d * np + r)] = src[(r0 + r) * dh + d];
  }
}

// The coarse positions of level l used by the fine positions p0..p0+n-1.
template <class T>
struct LevelSpan {
  int64_t lo = 0, cnt = 0, np = 0;  // coarse rows lo..lo+cnt-1 (cnt = 0: none), padded count
  std::vector<int32_t> idx;         // per fine position: coarse row - lo, or -1 (no term)
  std::vector<T> rows, tr;          // [np][dhp] and [dhp][np]
};

// One tile (queries or keys) of one (b, h).
template <class T>
struct Side {
  int64_t p0 = 0, n = 0, np = 0;     // fine positions p0..p0+n-1, padded count
  std::vector<T> x, xt;              // level-0 rows [np][dhp], transposed [dhp][np]
  std::vector<T> y, yt;              // queries: dO rows; keys: V rows / V transposed
  std::vector<LevelSpan<T>> lv;      // index l = 1..L-1
  std::vector<uint8_t> ok;           // keys: not padding
  bool all_ok = true;                // keys: no padding in the tile
  std::vector<T> lse, di;            // queries (backward): padded rows get +inf and 0
};

struct Want {
  bool x = false, xt = false, y = false, yt = false, lv_rows = false, lv_tr = false;
};

// Loads tile [p0, p1) of (b, h): level-0 rows from x0 (+ levels), second
// operand from y0 ([B, H, T, dh]).
template <class T>
void load_side(const AttnArgs<T>& a, int64_t b, int64_t h, int64_t p0, int64_t p1, const std::vector<const T*>& lev,
               const T* y0, const Want& w, Side<T>& s) {
  const int64_t dh = a.dh, dhp = pad(dh), bh = b * a.H + h;
  s.p0 = p0;
  s.n = p1 - p0;
  s.np = pad(s.n);
  const T* x0 = lev[0] + bh * a.len * dh;
  load_rows(x0, p0, s.n, dh, s.np, dhp, w.x ? &s.x : nullptr, w.xt ? &s.xt : nullptr);
  if (y0) load_rows(y0 + bh * a.len * dh, p0, s.n, dh, s.np, dhp, w.y ? &s.y : nullptr, w.yt ? &s.yt : nullptr);
  s.lv.resize(static_cast<size_t>(a.L));
  for (int64_t l = 1; l < a.L; ++l) {
    LevelSpan<T>& sp = s.lv[static_cast<size_t>(l)];
    const int64_t first = attn_level_row(p0, l, a.causal), last = attn_level_row(p1 - 1, l, a.causal);
    sp.lo = std::max<int64_t>(0, first);
    sp.cnt = last < 0 ? 0 : last - sp.lo + 1;
    sp.np = pad(sp.cnt);
    sp.idx.resize(static_cast<size_t>(s.n));
    for (int64_t i = 0; i < s.n; ++i) {
      const int64_t r = attn_level_row(p0 + i, l, a.causal);
      sp.idx[static_cast<size_t>(i)] = r < 0 ? -1 : static_cast<int32_t>(r - sp.lo);
    }
    if (sp.cnt == 0) continue;
    const T* xl = lev[static_cast<size_t>(l)] + bh * attn_level_len(a.len, l) * dh;
    load_rows(xl, sp.lo, sp.cnt, dh, sp.np, dhp, w.lv_rows ? &sp.rows : nullptr, w.lv_tr ? &sp.tr : nullptr);
  }
}

// Key-validity of a key tile.
template <class T>
void load_valid(const AttnArgs<T>& a, int64_t b, Side<T>& k) {
  k.ok.assign(static_cast<size_t>(k.np), 0);
  k.all_ok = true;
  for (int64_t j = 0; j < k.n; ++j) {
    k.ok[static_cast<size_t>(j)] = a.valid ? a.valid[b * a.len + k.p0 + j] : 1;
    k.all_ok = k.all_ok && k.ok[static_cast<size_t>(j)];
  }
}

// Work buffers of one tile pair.
template <class T>
struct PairBuf {
  std::vector<T> s0, s, p, g, gt, e;
  std::vector<std::vector<T>> c, gl, glt;  // per level: coarse scores, block sums of G, transposed
};

// The combined scores of a tile pair: s0 = Q0 K0^T (raw, unless s0 == s),
// c[l] = Q_l K_l^T on the coarse spans (raw), s = the masked combination
// (-inf at masked and padded entries).
template <class T>
void pair_scores(const AttnArgs<T>& a, int64_t h, const Side<T>& q, const Side<T>& k, T* s0, T* s,
                 std::vector<std::vector<T>>& c, std::vector<T>& e) {
  const int64_t dhp = pad(a.dh), mp = q.np, np = k.np, L = a.L;
  const T* lam = a.lambda + h * L;
  mm_abt(q.x.data(), k.xt.data(), s0, mp, np, dhp);
  const T w0 = static_cast<T>(static_cast<double>(lam[0]) * a.scale);
  for (int64_t x = 0; x < mp * np; ++x) s[x] = w0 * s0[x];
  c.resize(static_cast<size_t>(L));
  for (int64_t l = 1; l < L; ++l) {
    const LevelSpan<T>& qs = q.lv[static_cast<size_t>(l)];
    const LevelSpan<T>& ks = k.lv[static_cast<size_t>(l)];
    if (qs.cnt == 0 || ks.cnt == 0) continue;
    std::vector<T>& cl = c[static_cast<size_t>(l)];
    cl.resize(static_cast<size_t>(qs.np * ks.np));
    mm_abt(qs.rows.data(), ks.tr.data(), cl.data(), qs.np, ks.np, dhp);
    const T wl = static_cast<T>(static_cast<double>(lam[l]) * a.scale);
    // Expand the coarse columns to fine ones: e[r][j] = wl * c[r][cj(j)] (0 where no term).
    e.resize(static_cast<size_t>(qs.cnt * np));
    for (int64_t r = 0; r < qs.cnt; ++r) {
      const T* crow = cl.data() + r * ks.np;
      T* erow = e.data() + r * np;
      for (int64_t j = 0; j < np; ++j) {
        const int32_t cj = j < k.n ? ks.idx[static_cast<size_t>(j)] : -1;
        erow[j] = cj >= 0 ? wl * crow[cj] : T(0);
      }
    }
    for (int64_t i = 0; i < q.n; ++i) {
      const int32_t ri = qs.idx[static_cast<size_t>(i)];
      if (ri < 0) continue;
      const T* erow = e.data() + ri * np;
      T* srow = s + i * np;
      for (int64_t j = 0; j < np; ++j) srow[j] += erow[j];
    }
  }
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < mp; ++i) {
    T* srow = s + i * np;
    if (i >= q.n) {
      std::fill_n(srow, np, kNegInf);
      continue;
    }
    // Causal: key j is masked when k.p0 + j > q.p0 + i; padded columns j >= k.n are masked.
    const int64_t jmax = std::max<int64_t>(0, std::min(a.causal ? q.p0 + i - k.p0 + 1 : np, k.n));
    if (!k.all_ok)
      for (int64_t j = 0; j < jmax; ++j)
        if (!k.ok[static_cast<size_t>(j)]) srow[j] = kNegInf;
    for (int64_t j = jmax; j < np; ++j) srow[j] = kNegInf;
  }
}

// P = exp(S - lse) and G = scale * P * (dP - D) for a tile pair; with
// `levels`, also the block sums gl[l] of G on the coarse spans. Returns
// nothing; dlambda partials are added to dlam (when non-null).
template <class T>
void pair_grad(const AttnArgs<T>& a, int64_t h, const Side<T>& q, const Side<T>& k, PairBuf<T>& w, double* dlam,
               bool levels) {
  const int64_t dhp = pad(a.dh), mp = q.np, np = k.np, L = a.L;
  const size_t sz = static_cast<size_t>(mp * np);
  w.s0.resize(sz);
  w.s.resize(sz);
  w.p.resize(sz);
  w.g.resize(sz);
  pair_scores(a, h, q, k, w.s0.data(), w.s.data(), w.c, w.e);
  // dP = dO V^T (into g)
  mm_abt(q.y.data(), k.yt.data(), w.g.data(), mp, np, dhp);
  const T sc = static_cast<T>(a.scale);
  for (int64_t i = 0; i < mp; ++i) {
    const T li = q.lse[static_cast<size_t>(i)], di = q.di[static_cast<size_t>(i)];
    const T* srow = w.s.data() + i * np;
    T* prow = w.p.data() + i * np;
    T* grow = w.g.data() + i * np;
    std::copy_n(srow, np, prow);
    exp_shift(prow, np, li);
    for (int64_t j = 0; j < np; ++j) grow[j] = sc * prow[j] * (grow[j] - di);
  }
  if (dlam) {
    double acc = 0;
    for (int64_t i = 0; i < q.n; ++i) {
      const T* grow = w.g.data() + i * np;
      const T* s0row = w.s0.data() + i * np;
      T r = 0;
      for (int64_t j = 0; j < k.n; ++j) r += grow[j] * s0row[j];
      acc += static_cast<double>(r);
    }
    dlam[0] += acc;
  }
  if (!levels) return;
  w.gl.resize(static_cast<size_t>(L));
  for (int64_t l = 1; l < L; ++l) {
    const LevelSpan<T>& qs = q.lv[static_cast<size_t>(l)];
    const LevelSpan<T>& ks = k.lv[static_cast<size_t>(l)];
    if (qs.cnt == 0 || ks.cnt == 0) continue;
    std::vector<T>& gl = w.gl[static_cast<size_t>(l)];
    gl.assign(static_cast<size_t>(qs.np * ks.np), T(0));
    // Block sums in two steps: fine rows into coarse rows (e), then columns.
    w.e.assign(static_cast<size_t>(qs.cnt * np), T(0));
    for (int64_t i = 0; i < q.n; ++i) {
      const int32_t ri = qs.idx[static_cast<size_t>(i)];
      if (ri < 0) continue;
      T* erow = w.e.data() + ri * np;
      const T* grow = w.g.data() + i * np;
      for (int64_t j = 0; j < np; ++j) erow[j] += grow[j];
    }
    for (int64_t r = 0; r < qs.cnt; ++r) {
      T* glrow = gl.data() + r * ks.np;
      const T* erow = w.e.data() + r * np;
      for (int64_t j = 0; j < k.n; ++j) {
        const int32_t cj = ks.idx[static_cast<size_t>(j)];
        if (cj >= 0) glrow[cj] += erow[j];
      }
    }
    if (dlam) {
      const std::vector<T>& cl = w.c[static_cast<size_t>(l)];
      double acc = 0;
      for (int64_t r = 0; r < qs.cnt; ++r) {
        T t = 0;
        for (int64_t cc = 0; cc < ks.cnt; ++cc) t += gl[static_cast<size_t>(r * ks.np + cc)] * cl[static_cast<size_t>(r * ks.np + cc)];
        acc += static_cast<double>(t);
      }
      dlam[l] += acc;
    }
  }
}

// The key tiles a query tile [i0, i1) visits: all, or (causal) those starting at or before i1 - 1.
inline int64_t key_tiles_for(const AttnTiling& tl, int64_t i1, bool causal) {
  if (!causal) return tl.count;
  int64_t n = 0;
  while (n < tl.count && tl.begin(n) <= i1 - 1) ++n;
  return n;
}

}  // namespace attn_detail

// o [B, H, T, dh], lse [B, H, T].
template <class T>
void attention_forward(const AttnArgs<T>& a, T* o, T* lse) {
  using namespace attn_detail;
  if (a.B * a.H == 0 || a.len == 0) return;
  const AttnTiling tl(a.len, a.L, a.causal);
  const int64_t dh = a.dh, dhp = pad(dh), nt = tl.count;
  Want wq;
  wq.x = wq.lv_rows = true;
  Want wk;
  wk.xt = wk.y = wk.lv_tr = true;
  parallel_for(0, a.B * a.H * nt, 1, [&](int64_t lo, int64_t hi) {
    Side<T> q, k;
    PairBuf<T> w;
    std::vector<T> acc, mx, sum;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t bh = task / nt, qt = task % nt, b = bh / a.H, h = bh % a.H;
      const int64_t i0 = tl.begin(qt), i1 = tl.end(qt);
      load_side(a, b, h, i0, i1, a.q, static_cast<const T*>(nullptr), wq, q);
      const int64_t mp = q.np;
      acc.assign(static_cast<size_t>(mp * dhp), T(0));
      mx.assign(static_cast<size_t>(mp), -std::numeric_limits<T>::infinity());
      sum.assign(static_cast<size_t>(mp), T(0));
      const int64_t nk = key_tiles_for(tl, i1, a.causal);
      for (int64_t kt = 0; kt < nk; ++kt) {
        load_side(a, b, h, tl.begin(kt), tl.end(kt), a.k, a.v, wk, k);
        load_valid(a, b, k);
        const int64_t np = k.np;
        w.s.resize(static_cast<size_t>(mp * np));
        pair_scores(a, h, q, k, w.s.data(), w.s.data(), w.c, w.e);
        // Online softmax: rescale the running sums to the new row maximum.
        for (int64_t i = 0; i < mp; ++i) {
          T* srow = w.s.data() + i * np;
          T m = mx[static_cast<size_t>(i)];
          for (int64_t j = 0; j < np; ++j) m = std::max(m, srow[j]);
          if (m == -std::numeric_limits<T>::infinity()) {
            std::fill_n(srow, np, T(0));
            continue;
          }
          const T alpha = std::exp(mx[static_cast<size_t>(i)] - m);
          mx[static_cast<size_t>(i)] = m;
          const T rs = exp_shift(srow, np, m);
          sum[static_cast<size_t>(i)] = sum[static_cast<size_t>(i)] * alpha + rs;
          if (alpha != T(1)) {
            T* arow = acc.data() + i * dhp;
            for (int64_t d = 0; d < dhp; ++d) arow[d] *= alpha;
          }
        }
        mm_ab_acc(w.s.data(), np, k.y.data(), acc.data(), mp, np, dhp);
      }
      const int64_t base = (b * a.H + h) * a.len;
      for (int64_t i = 0; i < q.n; ++i) {
        T* orow = o + (base + i0 + i) * dh;
        const T s = sum[static_cast<size_t>(i)];
        if (s > T(0)) {
          const T inv = T(1) / s;
          for (int64_t d = 0; d < dh; ++d) orow[d] = acc[static_cast<size_t>(i * dhp + d)] * inv;
          lse[base + i0 + i] = mx[static_cast<size_t>(i)] + std::log(s);
        } else {
          std::fill_n(orow, dh, T(0));
          lse[base + i0 + i] = std::numeric_limits<T>::infinity();
        }
      }
    }
  });
}

// Gradients. o, lse: the forward's outputs; dout [B, H, T, dh]. dq / dk (L
// entries each), dv, dlambda may be null (not wanted); dlambda [H, L].
template <class T>
void attention_backward(const AttnArgs<T>& a, const T* o, const T* lse, const T* dout, const std::vector<T*>& dq,
                        const std::vector<T*>& dk, T* dv, T* dlambda) {
  using namespace attn_detail;
  const int64_t B = a.B, H = a.H, Tn = a.len, dh = a.dh, dhp = pad(dh), L = a.L;
  const bool want_q = !dq.empty() && dq[0], want_k = !dk.empty() && dk[0];
  for (int64_t l = 0; l < L; ++l) {
    const int64_t n = B * H * attn_level_len(Tn, l) * dh;
    if (want_q) std::fill_n(dq[static_cast<size_t>(l)], n, T(0));
    if (want_k) std::fill_n(dk[static_cast<size_t>(l)], n, T(0));
  }
  if (dv) std::fill_n(dv, B * H * Tn * dh, T(0));
  if (dlambda) std::fill_n(dlambda, H * L, T(0));
  if (B * H == 0 || Tn == 0) return;
  // D_i = rowsum(dO * O)
  std::vector<T> dvec(static_cast<size_t>(B * H * Tn));
  parallel_for(0, B * H * Tn, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, dh)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   T s = 0;
                   for (int64_t d = 0; d < dh; ++d) s += dout[r * dh + d] * o[r * dh + d];
                   dvec[static_cast<size_t>(r)] = s;
                 }
               });
  const AttnTiling tl(Tn, L, a.causal);
  const int64_t nt = tl.count;
  Want wq;
  wq.x = wq.y = wq.lv_rows = true;
  Want wk;
  wk.xt = wk.yt = wk.lv_tr = true;
  auto load_q = [&](int64_t b, int64_t h, int64_t qt, Side<T>& q) {
    load_side(a, b, h, tl.begin(qt), tl.end(qt), a.q, dout, wq, q);
    const int64_t base = (b * H + h) * Tn + q.p0;
    q.lse.assign(static_cast<size_t>(q.np), std::numeric_limits<T>::infinity());
    q.di.assign(static_cast<size_t>(q.np), T(0));
    std::copy_n(lse + base, q.n, q.lse.data());
    std::copy_n(dvec.data() + base, q.n, q.di.data());
  };

  // Pass 1: dQ_l and dlambda, parallel over (b, h, query tile).
  const bool want_lam = dlambda != nullptr;
  std::vector<double> lam_part(want_lam ? static_cast<size_t>(B * H * nt * L) : 0, 0.0);
  if (want_q || want_lam) {
    Want wk1 = wk;
    wk1.x = wk1.lv_rows = want_q;
    parallel_for(0, B * H * nt, 1, [&](int64_t lo, int64_t hi) {
      Side<T> q, k;
      PairBuf<T> w;
      std::vector<T> acc0;
      std::vector<std::vector<T>> accl(static_cast<size_t>(L));
      for (int64_t task = lo; task < hi; ++task) {
        const int64_t bh = task / nt, qt = task % nt, b = bh / H, h = bh % H;
        load_q(b, h, qt, q);
        const int64_t mp = q.np;
        acc0.assign(static_cast<size_t>(mp * dhp), T(0));
        for (int64_t l = 1; l < L; ++l)
          accl[static_cast<size_t>(l)].assign(static_cast<size_t>(q.lv[static_cast<size_t>(l)].np * dhp), T(0));
        double* dl = want_lam ? lam_part.data() + task * L : nullptr;
        const int64_t nk = key_tiles_for(tl, tl.end(qt), a.causal);
        for (int64_t kt = 0; kt < nk; ++kt) {
          load_side(a, b, h, tl.begin(kt), tl.end(kt), a.k, a.v, wk1, k);
          load_valid(a, b, k);
          pair_grad(a, h, q, k, w, dl, true);
          if (!want_q) continue;
          mm_ab_acc(w.g.data(), k.np, k.x.data(), acc0.data(), mp, k.np, dhp);
          for (int64_t l = 1; l < L; ++l) {
            const LevelSpan<T>& qs = q.lv[static_cast<size_t>(l)];
            const LevelSpan<T>& ks = k.lv[static_cast<size_t>(l)];
            if (qs.cnt == 0 || ks.cnt == 0) continue;
            mm_ab_acc(w.gl[static_cast<size_t>(l)].data(), ks.np, ks.rows.data(),
                      accl[static_cast<size_t>(l)].data(), qs.np, ks.np, dhp);
          }
        }
        if (!want_q) continue;
        const T* lam = a.lambda + h * L;
        T* d0 = dq[0] + ((b * H + h) * Tn + q.p0) * dh;
        for (int64_t i = 0; i < q.n; ++i)
          for (int64_t d = 0; d < dh; ++d) d0[i * dh + d] = lam[0] * acc0[static_cast<size_t>(i * dhp + d)];
        for (int64_t l = 1; l < L; ++l) {
          const LevelSpan<T>& qs = q.lv[static_cast<size_t>(l)];
          T* dl_out = dq[static_cast<size_t>(l)] + ((b * H + h) * attn_level_len(Tn, l) + qs.lo) * dh;
          const std::vector<T>& al = accl[static_cast<size_t>(l)];
          for (int64_t r = 0; r < qs.cnt; ++r)
            for (int64_t d = 0; d < dh; ++d) dl_out[r * dh + d] = lam[l] * al[static_cast<size_t>(r * dhp + d)];
        }
      }
    });
  }
  if (want_lam) {
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        double s = 0;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t qt = 0; qt < nt; ++qt) s += lam_part[static_cast<size_t>(((b * H + h) * nt + qt) * L + l)];
        dlambda[h * L + l] = static_cast<T>(s);
      }
  }

  // Pass 2: dK_l and dV, parallel over (b, h, key tile).
  if (!want_k && !dv) return;
  parallel_for(0, B * H * nt, 1, [&](int64_t lo, int64_t hi) {
    Side<T> q, k;
    PairBuf<T> w;
    std::vector<T> acc0, accv, tmp;
    std::vector<std::vector<T>> accl(static_cast<size_t>(L));
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t bh = task / nt, kt = task % nt, b = bh / H, h = bh % H;
      load_side(a, b, h, tl.begin(kt), tl.end(kt), a.k, a.v, wk, k);
      load_valid(a, b, k);
      const int64_t np = k.np;
      acc0.assign(static_cast<size_t>(np * dhp), T(0));
      accv.assign(static_cast<size_t>(np * dhp), T(0));
      for (int64_t l = 1; l < L; ++l)
        accl[static_cast<size_t>(l)].assign(static_cast<size_t>(k.lv[static_cast<size_t>(l)].np * dhp), T(0));
      // Causal: query tiles whose last row is before this key tile see none of it.
      for (int64_t qt = 0; qt < nt; ++qt) {
        if (a.causal && tl.end(qt) - 1 < k.p0) continue;
        load_q(b, h, qt, q);
        const int64_t mp = q.np;
        pair_grad(a, h, q, k, w, nullptr, want_k);
        tmp.resize(static_cast<size_t>(mp * np));
        if (dv) {
          transpose(w.p.data(), tmp.data(), mp, np);
          mm_ab_acc(tmp.data(), mp, q.y.data(), accv.data(), np, mp, dhp);
        }
        if (!want_k) continue;
        transpose(w.g.data(), tmp.data(), mp, np);
        mm_ab_acc(tmp.data(), mp, q.x.data(), acc0.data(), np, mp, dhp);
        for (int64_t l = 1; l < L; ++l) {
          const LevelSpan<T>& qs = q.lv[static_cast<size_t>(l)];
          const LevelSpan<T>& ks = k.lv[static_cast<size_t>(l)];
          if (qs.cnt == 0 || ks.cnt == 0) continue;
          std::vector<T>& glt = w.gt;
          glt.resize(static_cast<size_t>(qs.np * ks.np));
          transpose(w.gl[static_cast<size_t>(l)].data(), glt.data(), qs.np, ks.np);
          mm_ab_acc(glt.data(), qs.np, qs.rows.data(), accl[static_cast<size_t>(l)].data(), ks.np, qs.np, dhp);
        }
      }
      const int64_t base = ((b * H + h) * Tn + k.p0) * dh;
      if (dv)
        for (int64_t j = 0; j < k.n; ++j)
          for (int64_t d = 0; d < dh; ++d) dv[base + j * dh + d] = accv[static_cast<size_t>(j * dhp + d)];
      if (!want_k) continue;
      const T* lam = a.lambda + h * L;
      for (int64_t j = 0; j < k.n; ++j)
        for (int64_t d = 0; d < dh; ++d) dk[0][base + j * dh + d] = lam[0] * acc0[static_cast<size_t>(j * dhp + d)];
      for (int64_t l = 1; l < L; ++l) {
        const LevelSpan<T>& ks = k.lv[static_cast<size_t>(l)];
        T* out = dk[static_cast<size_t>(l)] + ((b * H + h) * attn_level_len(Tn, l) + ks.lo) * dh;
        const std::vector<T>& al = accl[static_cast<size_t>(l)];
        for (int64_t r = 0; r < ks.cnt; ++r)
          for (int64_t d = 0; d < dh; ++d) out[r * dh + d] = lam[l] * al[static_cast<size_t>(r * dhp + d)];
      }
    }
  });
}

}  // namespace hkt::cpu
