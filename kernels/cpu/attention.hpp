// CPU kernels of the fused multi-scale attention (the op: ops/src/attention.cpp;
// registered in kernels/cpu/register.cpp).
//
// Per batch b and head h, with L levels, T_l = ceil(T / 2^l):
//   S[i, j] = sum_l lambda[h, l] * scale * (Q_l[r_l(i)] . K_l[r_l(j)])
//   r_l(i)  = i >> l                      (bidirectional)
//           = floor((i + 1) / 2^l) - 1    (causal; the term is 0 where r_l(i) < 0 or r_l(j) < 0)
//   O       = softmax(S + mask) V         (mask: padded keys, and j > i when causal)
// A row whose keys are all masked gives O = 0 and LSE = +inf.
//
// Tiling (AttnPlan): positions are cut into tiles of S = max(64, 2^(L+2))
// starting at t * S - off (off = 1 when causal, else 0); a sequence shorter
// than one such tile (T + off < 64) gets one tile of the least power of two
// >= max(T + off, 2^(L+2)), not 64 (T = 7: 8 x 8 scores, not 64 x 64; the
// padding only adds exact zeros, so the bits are those of S = 64); positions outside
// [0, T) are virtual: zero rows, masked as keys, never written. With this
// alignment local position p of tile t reads coarse row t * (S >> l) - off +
// (p >> l) at every level, so the level-l scores of a tile pair form an
// (S >> l) x (S >> l) grid, and the combined scores are built coarse to fine:
//   A_{L-1} = w_{L-1} C_{L-1},  A_l = w_l C_l + up2(A_{l+1}),  S = w_0 C_0 + up2(A_1)
// with C_l = Q_l[tile] K_l[tile]^T, w_l = lambda[h, l] * scale and up2 the
// 2x block-constant upsampling. The backward runs the same chain in reverse:
// the level-l gradient grid is the 2 x 2 block sum of the level-(l-1) grid.
// Nothing of size T x T is ever stored.
//
// Forward: operands are packed per tile once (keys transposed, zero padded to
// dh rounded up to 8); parallel over (b, h, query tile), an online softmax
// streams over key tiles (causal: only key tiles up to the diagonal) and
// accumulates P V. Saves O and LSE = max + log(sum) per row.
//
// Backward (P recomputed from LSE, D_i = rowsum(dO * O), dS = P (dP - D_i)):
// one pass over (b, h, key-tile group), key tiles dealt round-robin into G
// groups (G depends only on B * H and the tile count, never on threads):
//   dV += P^T dO, dK_l += dS_l^T Q_l (per key tile, written when its query
//   tiles are done), dQ_l += dS_l K_l (per group, groups summed in order),
//   dlambda_l = scale * sum dS_l * C_l (per group, summed in order).
// Every reduction has a fixed order, so the bits do not depend on the number
// of threads. float32 inputs accumulate in float32 (dlambda in double).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cpu/attention_tile.hpp"
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

using rules::attn_level_len;  // T_l = ceil(T / 2^l)

// Tiles and packed sizes of one problem.
struct AttnPlan {
  int64_t T, dh, dhp, L, S, off, nt;
  std::vector<int64_t> lvl_off;  // offset of level l in a packed tile (all levels), in elements
  std::vector<int64_t> grid_off; // offset of level l's (S >> l)^2 grid, l >= 1
  int64_t lvl_total = 0, grid_total = 0;
  AttnPlan(int64_t T_, int64_t dh_, int64_t L_, bool causal) : T(T_), dh(dh_), L(L_) {
    dhp = (dh + 7) / 8 * 8;
    off = causal ? 1 : 0;
    const auto fit = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(T + off)));
    S = std::max<int64_t>(std::min<int64_t>(64, fit), int64_t{1} << (L + 2));
    nt = (T + off + S - 1) / S;
    for (int64_t l = 0; l < L; ++l) {
      lvl_off.push_back(lvl_total);
      lvl_total += sl(l) * dhp;
      grid_off.push_back(grid_total);
      if (l > 0) grid_total += sl(l) * sl(l);
    }
  }
  int64_t sl(int64_t l) const { return S >> l; }
  int64_t len(int64_t l) const { return attn_level_len(T, l); }
  // Global row of local position p of tile t at level l (may be outside [0, len(l))).
  int64_t row(int64_t t, int64_t l, int64_t p) const { return t * sl(l) - off + p; }
};

namespace attn_detail {

// Tile t of every level of one (b, h): src[l] + bh_off[l] is [len(l)][dh];
// rows form dst[l]: [sl][dhp], or transposed (cols) form: [dhp][sl]; zeros
// outside the sequence and the padding.
template <class T>
void pack_tile(const AttnPlan& pl, const std::vector<const T*>& src, int64_t bh, int64_t t, bool cols, T* dst) {
  for (int64_t l = 0; l < static_cast<int64_t>(src.size()); ++l) {
    const int64_t s = pl.sl(l), n = pl.len(l);
    const T* x = src[static_cast<size_t>(l)] + bh * n * pl.dh;
    T* out = dst + pl.lvl_off[static_cast<size_t>(l)];
    std::fill_n(out, s * pl.dhp, T(0));
    for (int64_t p = 0; p < s; ++p) {
      const int64_t r = pl.row(t, l, p);
      if (r < 0 || r >= n) continue;
      const T* xr = x + r * pl.dh;
      if (cols)
        for (int64_t d = 0; d < pl.dh; ++d) out[d * s + p] = xr[d];
      else
        std::copy_n(xr, pl.dh, out + p * pl.dhp);
    }
  }
}

// Additive key mask of tile t of batch b: 0 or -inf per position. Returns
// kNoMask, kSomeMasked or kAllMasked (the tile pair can be skipped).
enum KeyMask : uint8_t { kNoMask = 0, kSomeMasked = 1, kAllMasked = 2 };
template <class T>
KeyMask key_bias(const AttnPlan& pl, const bool* valid, int64_t b, int64_t t, T* bias) {
  int64_t n_ok = 0;
  for (int64_t p = 0; p < pl.S; ++p) {
    const int64_t j = pl.row(t, 0, p);
    const bool ok = j >= 0 && j < pl.T && (!valid || valid[b * pl.T + j]);
    bias[p] = ok ? T(0) : -std::numeric_limits<T>::infinity();
    n_ok += ok;
  }
  return n_ok == pl.S ? kNoMask : n_ok == 0 ? kAllMasked : kSomeMasked;
}

// Combined, masked scores of one tile pair into s [S][S]. q: rows form of the
// query tile (all levels), kc: cols form of the key tile. Raw C_0 goes to s0
// (may be s), raw C_l (l >= 1) to c + grid_off[l], the combined coarse grids
// A_l to a + grid_off[l] (may be c, destroying the raw grids).
template <class T>
void tile_scores(const AttnPlan& pl, const T* lam, double scale, const T* q, const T* kc, T* s0, T* s, T* c, T* a,
                 const T* bias, bool diag) {
  const int64_t S = pl.S, L = pl.L, dhp = pl.dhp;
  auto w = [&](int64_t l) { return static_cast<T>(static_cast<double>(lam[l]) * scale); };
  mm(q, dhp, kc, S, s0, S, S, S, dhp, false);
  for (int64_t l = 1; l < L; ++l) {
    const int64_t n = pl.sl(l);
    T* cl = c + pl.grid_off[static_cast<size_t>(l)];
    mm(q + pl.lvl_off[static_cast<size_t>(l)], dhp, kc + pl.lvl_off[static_cast<size_t>(l)], n, cl, n, n, n, dhp,
       false);
  }
  if (L == 1) {
    const T w0 = w(0);
    for (int64_t x = 0; x < S * S; ++x) s[x] = w0 * s0[x];
  } else {
    const int64_t top = L - 1, nt = pl.sl(top);
    const T* ct = c + pl.grid_off[static_cast<size_t>(top)];
    T* at = a + pl.grid_off[static_cast<size_t>(top)];
    const T wt = w(top);
    for (int64_t x = 0; x < nt * nt; ++x) at[x] = wt * ct[x];
    for (int64_t l = top - 1; l >= 1; --l) {
      const int64_t n = pl.sl(l), m = pl.sl(l + 1);
      up2(a + pl.grid_off[static_cast<size_t>(l)], n, c + pl.grid_off[static_cast<size_t>(l)], n,
          a + pl.grid_off[static_cast<size_t>(l + 1)], m, m, m, w(l));
    }
    up2(s, S, s0, S, a + pl.grid_off[1], pl.sl(1), pl.sl(1), pl.sl(1), w(0));
  }
  if (bias)
    for (int64_t i = 0; i < S; ++i) {
      T* si = s + i * S;
      for (int64_t j = 0; j < S; ++j) si[j] += bias[j];
    }
  if (diag)  // the same tile for queries and keys: key p > query i is in the future
    for (int64_t i = 0; i + 1 < S; ++i) std::fill(s + i * S + i + 1, s + (i + 1) * S, -std::numeric_limits<T>::infinity());
}

// Tasks of the backward per (b, h): key tiles are dealt into this many groups.
inline int64_t attn_groups(int64_t bh, int64_t nt) {
  constexpr int64_t kTasks = 16;
  return std::clamp<int64_t>((kTasks + bh - 1) / std::max<int64_t>(1, bh), 1, std::max<int64_t>(1, nt));
}

}  // namespace attn_detail

// o [B, H, T, dh], lse [B, H, T].
template <class T>
void attention_forward(const AttnArgs<T>& a, T* o, T* lse) {
  using namespace attn_detail;
  if (a.B * a.H == 0 || a.len == 0) return;
  const AttnPlan pl(a.len, a.dh, a.L, a.causal);
  const int64_t BH = a.B * a.H, nt = pl.nt, S = pl.S, dhp = pl.dhp, dh = a.dh;
  // Keys (cols form, all levels), values (rows form) and key masks, packed once.
  std::vector<T> kc(static_cast<size_t>(BH * nt * pl.lvl_total)), vr(static_cast<size_t>(BH * nt * S * dhp));
  std::vector<T> bias(static_cast<size_t>(a.B * nt * S));
  std::vector<uint8_t> masked(static_cast<size_t>(a.B * nt));
  const std::vector<const T*> v1{a.v};
  parallel_for(0, BH * nt, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t bh = task / nt, t = task % nt;
      pack_tile(pl, a.k, bh, t, true, kc.data() + task * pl.lvl_total);
      pack_tile(pl, v1, bh, t, false, vr.data() + task * S * dhp);
      if (bh % a.H == 0) {
        const int64_t b = bh / a.H;
        masked[static_cast<size_t>(b * nt + t)] = key_bias(pl, a.valid, b, t, bias.data() + (b * nt + t) * S);
      }
    }
  });
  parallel_for(0, BH * nt, 1, [&](int64_t lo, int64_t hi) {
    std::vector<T> q(static_cast<size_t>(pl.lvl_total)), s(static_cast<size_t>(S * S)),
        c(static_cast<size_t>(pl.grid_total)), acc, mx, sum;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t bh = task / nt, qt = task % nt, b = bh / a.H, h = bh % a.H;
      pack_tile(pl, a.q, bh, qt, false, q.data());
      acc.assign(static_cast<size_t>(S * dhp), T(0));
      mx.assign(static_cast<size_t>(S), -std::numeric_limits<T>::infinity());
      sum.assign(static_cast<size_t>(S), T(0));
      const int64_t nk = a.causal ? qt + 1 : nt;
      for (int64_t kt = 0; kt < nk; ++kt) {
        const int64_t bk = b * nt + kt;
        if (masked[static_cast<size_t>(bk)] == kAllMasked) continue;  // padding only: adds nothing
        tile_scores(pl, a.lambda + h * a.L, a.scale, q.data(), kc.data() + (bh * nt + kt) * pl.lvl_total, s.data(),
                    s.data(), c.data(), c.data(), masked[static_cast<size_t>(bk)] ? bias.data() + bk * S : nullptr,
                    a.causal && kt == qt);
        // Online softmax: rescale the running sums to the new row maximum.
        for (int64_t i = 0; i < S; ++i) {
          T* si = s.data() + i * S;
          const T m = std::max(mx[static_cast<size_t>(i)], row_max(si, S));
          if (m == -std::numeric_limits<T>::infinity()) {
            std::fill_n(si, S, T(0));
            continue;
          }
          const T alpha = std::exp(mx[static_cast<size_t>(i)] - m);
          mx[static_cast<size_t>(i)] = m;
          sum[static_cast<size_t>(i)] = sum[static_cast<size_t>(i)] * alpha + exp_shift(si, S, m);
          if (alpha != T(1))
            for (int64_t d = 0; d < dhp; ++d) acc[static_cast<size_t>(i * dhp + d)] *= alpha;
        }
        mm(s.data(), S, vr.data() + (bh * nt + kt) * S * dhp, dhp, acc.data(), dhp, S, dhp, S, true);
      }
      for (int64_t p = 0; p < S; ++p) {
        const int64_t i = pl.row(qt, 0, p);
        if (i < 0 || i >= a.len) continue;
        T* orow = o + (bh * a.len + i) * dh;
        const T sm = sum[static_cast<size_t>(p)];
        if (sm > T(0)) {
          const T inv = T(1) / sm;
          for (int64_t d = 0; d < dh; ++d) orow[d] = acc[static_cast<size_t>(p * dhp + d)] * inv;
          lse[bh * a.len + i] = mx[static_cast<size_t>(p)] + std::log(sm);
        } else {
          std::fill_n(orow, dh, T(0));
          lse[bh * a.len + i] = std::numeric_limits<T>::infinity();
        }
      }
    }
  });
}

}  // namespace hkt::cpu

#include "kernels/cpu/attention_backward.hpp"
