// The problem, its tiling and the tile steps shared by the forward
// (hkt_attention.cpp) and the backward (attention_backward.hpp) of the fused
// multi-scale attention; kernels/cpu/hkt_attention.cpp describes the scheme.
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

}  // namespace hkt::cpu
