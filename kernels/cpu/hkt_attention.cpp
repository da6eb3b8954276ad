// CPU kernels of the fused multi-scale attention (the op: ops/src/attention.cpp;
// registered at the end of this file).
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
// Forward: (b, h) in chunks whose packed keys and values fit in about 1 MiB
// (whole tiles, keys transposed, zero padded to dh rounded up to 8): a
// chunk's tiles are packed, then its (b, h, query tile) tasks run in
// parallel, an online softmax streaming over key tiles (causal: only key
// tiles up to the diagonal) and accumulating P V. Saves O and LSE = max +
// log(sum) per row. (Packing every (b, h) first sent the packed tiles through
// memory: 16 MiB at B = 32, T = 512.)
//
// Backward (P recomputed from LSE, D_i = rowsum(dO * O), dS = P (dP - D_i)):
// one pass over (b, h, key-tile group), key tiles dealt round-robin into G
// groups (G depends only on B * H and the tile count, never on threads):
//   dV += P^T dO, dK_l += dS_l^T Q_l (per key tile, written when its query
//   tiles are done), dQ_l += dS_l K_l (per group, groups summed in order),
//   dlambda_l = scale * sum dS_l * C_l (per group, summed in order).
// Every reduction has a fixed order, so the bits do not depend on the number
// of threads. float32 inputs accumulate in float32 (dlambda in double).
//
// attention_plan.hpp holds the problem (AttnArgs), its tiling (AttnPlan) and the
// tile steps both passes share; this file the forward, attention_backward.hpp
// the backward, and the op list's entry points of both.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_backward.hpp"
#include "kernels/cpu/attention_plan.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

// Bytes of packed keys and values a chunk of (b, h) aims at (so they are still in cache when its
// query tiles read them), and the fewest query tiles a chunk gives the threads.
inline constexpr int64_t kFwdChunkBytes = 1 << 20;
inline constexpr int64_t kFwdChunkTasks = 16;

// The forward's buffers of one query task, kept per thread.
template <class T>
struct FwdWork {
  std::vector<T> q, s, c, acc, mx, sum;
};

// Query tile qt of (b, h) = bh: an online softmax over its key tiles (kc, vr: this (b, h)'s packed
// tiles), O and LSE of its rows.
template <class T>
void forward_query_tile(const AttnPlan& pl, const AttnArgs<T>& a, int64_t bh, int64_t qt, const T* kc,
                        const T* vr, const T* bias, const uint8_t* masked, FwdWork<T>& w, T* o, T* lse) {
  using namespace attn_detail;
  const int64_t nt = pl.nt, S = pl.S, dhp = pl.dhp, dh = a.dh, b = bh / a.H, h = bh % a.H;
  std::vector<T>&q = w.q, &s = w.s, &c = w.c, &acc = w.acc, &mx = w.mx, &sum = w.sum;
  pack_tile(pl, a.q, bh, qt, false, q.data());
  acc.assign(static_cast<size_t>(S * dhp), T(0));
  mx.assign(static_cast<size_t>(S), -std::numeric_limits<T>::infinity());
  sum.assign(static_cast<size_t>(S), T(0));
  const int64_t nk = a.causal ? qt + 1 : nt;
  for (int64_t kt = 0; kt < nk; ++kt) {
    const int64_t bk = b * nt + kt;
    if (masked[bk] == kAllMasked) continue;  // padding only: adds nothing
    tile_scores(pl, a.lambda + h * a.L, a.scale, q.data(), kc + kt * pl.lvl_total, s.data(), s.data(), c.data(),
                c.data(), masked[bk] ? bias + bk * S : nullptr, a.causal && kt == qt);
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
    mm(s.data(), S, vr + kt * S * dhp, dhp, acc.data(), dhp, S, dhp, S, true);
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

// o [B, H, T, dh], lse [B, H, T].
template <class T>
void attention_forward(const AttnArgs<T>& a, T* o, T* lse) {
  using namespace attn_detail;
  if (a.B * a.H == 0 || a.len == 0) return;
  const AttnPlan pl(a.len, a.dh, a.L, a.causal);
  const int64_t BH = a.B * a.H, nt = pl.nt, S = pl.S, dhp = pl.dhp;
  // (b, h) are taken in chunks of G: a chunk's keys (cols form, all levels) and values (rows form)
  // are packed, then its query tiles run. G depends only on the shapes, and chunking changes no
  // arithmetic: the bits are those of one chunk.
  const int64_t per_bh = nt * (pl.lvl_total + S * dhp) * static_cast<int64_t>(sizeof(T));
  const int64_t G = std::min(BH, std::max({int64_t(1), kFwdChunkBytes / per_bh, (kFwdChunkTasks + nt - 1) / nt}));
  std::vector<T> kc(static_cast<size_t>(G * nt * pl.lvl_total)), vr(static_cast<size_t>(G * nt * S * dhp));
  std::vector<T> bias(static_cast<size_t>(a.B * nt * S));
  std::vector<uint8_t> masked(static_cast<size_t>(a.B * nt));
  const std::vector<const T*> v1{a.v};
  parallel_for(0, a.B * nt, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t bt = lo; bt < hi; ++bt)
      masked[static_cast<size_t>(bt)] = key_bias(pl, a.valid, bt / nt, bt % nt, bias.data() + bt * S);
  });
  for (int64_t c0 = 0; c0 < BH; c0 += G) {
    const int64_t c1 = std::min(BH, c0 + G);
    parallel_for(c0 * nt, c1 * nt, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t task = lo; task < hi; ++task) {
        const int64_t bh = task / nt, t = task % nt, i = task - c0 * nt;
        pack_tile(pl, a.k, bh, t, true, kc.data() + i * pl.lvl_total);
        pack_tile(pl, v1, bh, t, false, vr.data() + i * S * dhp);
      }
    });
    parallel_for(c0 * nt, c1 * nt, 1, [&](int64_t lo, int64_t hi) {
      FwdWork<T>& w = per_thread<FwdWork<T>>();
      w.q.resize(static_cast<size_t>(pl.lvl_total)), w.s.resize(static_cast<size_t>(S * S));
      w.c.resize(static_cast<size_t>(pl.grid_total));
      for (int64_t task = lo; task < hi; ++task)
        forward_query_tile(pl, a, task / nt, task % nt, kc.data() + (task / nt - c0) * nt * pl.lvl_total,
                           vr.data() + (task / nt - c0) * nt * S * dhp, bias.data(), masked.data(), w, o, lse);
    });
  }
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
AttnArgs<T> attn_args(const sig::AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                      const void* v, const void* lambda, const bool* valid) {
  AttnArgs<T> a;
  a.B = s.B, a.H = s.H, a.len = s.T, a.dh = s.dh, a.L = s.L;
  for (const void* p : q) a.q.push_back(buf<T>(p));
  for (const void* p : k) a.k.push_back(buf<T>(p));
  a.v = buf<T>(v), a.lambda = buf<T>(lambda), a.valid = valid;
  a.causal = s.causal, a.scale = s.scale;
  return a;
}
template <class T>
void attention(const sig::AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
               const void* v, const void* lambda, const bool* valid, void* o, void* lse) {
  attention_forward<T>(attn_args<T>(s, q, k, v, lambda, valid), buf<T>(o), buf<T>(lse));
}
template <class T>
void attention_backward(const sig::AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                        const void* v, const void* lambda, const bool* valid, const void* o, const void* lse,
                        const void* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, void* dv,
                        void* dlambda) {
  std::vector<T*> dqt, dkt;
  for (void* p : dq) dqt.push_back(buf<T>(p));
  for (void* p : dk) dkt.push_back(buf<T>(p));
  attention_grad<T>(attn_args<T>(s, q, k, v, lambda, valid), buf<T>(o), buf<T>(lse), buf<T>(dout), dqt, dkt,
                    buf<T>(dv), buf<T>(dlambda));
}
HKT_CPU_KERNEL(attention)
HKT_CPU_KERNEL(attention_backward)

}  // namespace hkt::cpu
