// The backward of the fused multi-scale attention; see kernels/cpu/hkt_attention.cpp
// for the scheme (hkt_attention.cpp includes this header).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/attention_plan.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {
namespace attn_detail {

// The query side of one (b, h), packed for every tile: rows and cols forms
// of Q (all levels), dO rows and cols, LSE (+inf on virtual rows) and D.
template <class T>
struct QuerySide {
  std::vector<T> qr, qc, dor, doc, lse, dd;
  void pack(const AttnPlan& pl, const AttnArgs<T>& a, int64_t bh, const T* o, const T* lse_in, const T* dout,
            bool want_k, bool want_v) {
    const int64_t nt = pl.nt, S = pl.S, dhp = pl.dhp, dh = pl.dh;
    qr.resize(static_cast<size_t>(nt * pl.lvl_total));
    if (want_k) qc.resize(static_cast<size_t>(nt * pl.lvl_total));
    dor.resize(static_cast<size_t>(nt * S * dhp));
    if (want_v) doc.resize(static_cast<size_t>(nt * S * dhp));
    lse.assign(static_cast<size_t>(nt * S), std::numeric_limits<T>::infinity());
    dd.assign(static_cast<size_t>(nt * S), T(0));
    const std::vector<const T*> d1{dout};
    for (int64_t t = 0; t < nt; ++t) {
      pack_tile(pl, a.q, bh, t, false, qr.data() + t * pl.lvl_total);
      if (want_k) pack_tile(pl, a.q, bh, t, true, qc.data() + t * pl.lvl_total);
      pack_tile(pl, d1, bh, t, false, dor.data() + t * S * dhp);
      if (want_v) pack_tile(pl, d1, bh, t, true, doc.data() + t * S * dhp);
      for (int64_t p = 0; p < S; ++p) {
        const int64_t i = pl.row(t, 0, p);
        if (i < 0 || i >= pl.T) continue;
        const int64_t r = bh * pl.T + i;
        lse[static_cast<size_t>(t * S + p)] = lse_in[r];
        T s = 0;
        for (int64_t d = 0; d < dh; ++d) s += dout[r * dh + d] * o[r * dh + d];
        dd[static_cast<size_t>(t * S + p)] = s;
      }
    }
  }
};

// Work buffers of one task (every one written before it is read: reused across tasks).
template <class T>
struct PairWork {
  std::vector<T> s0, s, g, c, a, gl, kc, kr, vc, bias, dkc, dvc;
  void size(const AttnPlan& pl) {
    const auto sq = static_cast<size_t>(pl.S * pl.S), grid = static_cast<size_t>(pl.grid_total),
               tile = static_cast<size_t>(pl.lvl_total), sd = static_cast<size_t>(pl.S * pl.dhp);
    s0.resize(sq), s.resize(sq), g.resize(sq), c.resize(grid), a.resize(grid), gl.resize(grid);
    kc.resize(tile), kr.resize(tile), vc.resize(sd), bias.resize(static_cast<size_t>(pl.S));
    dkc.resize(tile), dvc.resize(sd);
  }
};

// out[r][d] = w * acc (rows form [s][dhp], or cols form [dhp][s]) for the
// real rows of tile t at level l; out is [len(l)][dh] of one (b, h).
template <class T>
void write_tile(const AttnPlan& pl, int64_t t, int64_t l, const T* acc, bool cols, T w, T* out) {
  const int64_t s = pl.sl(l), n = pl.len(l);
  for (int64_t p = 0; p < s; ++p) {
    const int64_t r = pl.row(t, l, p);
    if (r < 0 || r >= n) continue;
    for (int64_t d = 0; d < pl.dh; ++d) out[r * pl.dh + d] = w * (cols ? acc[d * s + p] : acc[p * pl.dhp + d]);
  }
}

// The buffers of the backward's tasks, one per thread (per_thread in parallel.hpp).
template <class T>
struct BwdWork {
  QuerySide<T> qs;
  PairWork<T> w;
  std::vector<T> dq_own;
};

}  // namespace attn_detail

// Gradients. o, lse: the forward's outputs; dout [B, H, T, dh]. dq / dk (L
// entries each), dv, dlambda may be null (not wanted); dlambda [H, L].
template <class T>
void attention_grad(const AttnArgs<T>& a, const T* o, const T* lse, const T* dout, const std::vector<T*>& dq,
                        const std::vector<T*>& dk, T* dv, T* dlambda) {
  using namespace attn_detail;
  const int64_t B = a.B, H = a.H, Tn = a.len, L = a.L, BH = B * H;
  const bool want_q = !dq.empty() && dq[0], want_k = !dk.empty() && dk[0], want_lam = dlambda != nullptr;
  for (int64_t l = 0; l < L; ++l) {
    const int64_t n = BH * attn_level_len(Tn, l) * a.dh;
    if (want_q) std::fill_n(dq[static_cast<size_t>(l)], n, T(0));
    if (want_k) std::fill_n(dk[static_cast<size_t>(l)], n, T(0));
  }
  if (dv) std::fill_n(dv, BH * Tn * a.dh, T(0));
  if (dlambda) std::fill_n(dlambda, H * L, T(0));
  if (BH == 0 || Tn == 0 || !(want_q || want_k || dv || want_lam)) return;
  const AttnPlan pl(Tn, a.dh, L, a.causal);
  const int64_t nt = pl.nt, S = pl.S, dhp = pl.dhp, G = attn_groups(BH, nt), qsize = nt * pl.lvl_total;
  // dQ partials of every (b, h, group) when G > 1; with G = 1 a task writes dQ itself.
  std::vector<T> dq_part(want_q && G > 1 ? static_cast<size_t>(BH * G * qsize) : 0);
  std::vector<double> lam_part(static_cast<size_t>(BH * G * L), 0.0);
  const std::vector<const T*> v1{a.v};
  parallel_for(0, BH * G, 1, [&](int64_t lo, int64_t hi) {
    // (kept per thread, as the local and H-Transformer-1D kernels keep theirs: no allocation per task)
    BwdWork<T>& work = per_thread<BwdWork<T>>();
    QuerySide<T>& qs = work.qs;
    PairWork<T>& w = work.w;
    std::vector<T>& dq_own = work.dq_own;
    w.size(pl);
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t bh = task / G, grp = task % G, b = bh / H, h = bh % H;
      const T* lam = a.lambda + h * L;
      auto wl = [&](int64_t l) { return static_cast<T>(static_cast<double>(lam[l]) * a.scale); };
      qs.pack(pl, a, bh, o, lse, dout, want_k, dv != nullptr);
      T* dqa = nullptr;
      if (want_q) {
        if (G > 1) {
          dqa = dq_part.data() + task * qsize;
        } else {
          dq_own.assign(static_cast<size_t>(qsize), T(0));
          dqa = dq_own.data();
        }
      }
      double* dl = lam_part.data() + task * L;
      for (int64_t kt = grp; kt < nt; kt += G) {
        pack_tile(pl, a.k, bh, kt, true, w.kc.data());
        if (want_q) pack_tile(pl, a.k, bh, kt, false, w.kr.data());
        pack_tile(pl, v1, bh, kt, true, w.vc.data());
        const KeyMask masked = key_bias(pl, a.valid, b, kt, w.bias.data());
        std::fill(w.dkc.begin(), w.dkc.end(), T(0));
        std::fill(w.dvc.begin(), w.dvc.end(), T(0));
        // A key tile of padding only gets no probability: its gradients stay 0.
        for (int64_t qt = a.causal ? kt : 0; qt < nt && masked != kAllMasked; ++qt) {
          const T* q = qs.qr.data() + qt * pl.lvl_total;
          tile_scores(pl, lam, a.scale, q, w.kc.data(), w.s0.data(), w.s.data(), w.c.data(), w.a.data(),
                      masked ? w.bias.data() : nullptr, a.causal && kt == qt);
          // P (into s) and dS = P (dP - D) (into g), dP = dO V^T.
          mm(qs.dor.data() + qt * S * dhp, dhp, w.vc.data(), S, w.g.data(), S, S, S, dhp, false);
          double acc0 = 0;
          for (int64_t i = 0; i < S; ++i) {
            T* si = w.s.data() + i * S;
            T* gi = w.g.data() + i * S;
            exp_shift(si, S, qs.lse[static_cast<size_t>(qt * S + i)]);
            dsoftmax(si, gi, S, qs.dd[static_cast<size_t>(qt * S + i)]);
            if (want_lam) acc0 += static_cast<double>(dot(gi, w.s0.data() + i * S, S));
          }
          dl[0] += acc0;
          // Block sums dS_l of dS on the coarse grids, and dlambda_l.
          for (int64_t l = 1; l < L; ++l) {
            const int64_t n = pl.sl(l), fine = pl.sl(l - 1);
            T* gl = w.gl.data() + pl.grid_off[static_cast<size_t>(l)];
            bs2(gl, n, l == 1 ? w.g.data() : w.gl.data() + pl.grid_off[static_cast<size_t>(l - 1)], fine, n, n);
            if (!want_lam) continue;
            double acc = 0;
            const T* cl = w.c.data() + pl.grid_off[static_cast<size_t>(l)];
            for (int64_t r = 0; r < n; ++r) acc += static_cast<double>(dot(gl + r * n, cl + r * n, n));
            dl[l] += acc;
          }
          for (int64_t l = 0; l < L; ++l) {
            const int64_t n = pl.sl(l), lo_l = pl.lvl_off[static_cast<size_t>(l)];
            const T* gl = l == 0 ? w.g.data() : w.gl.data() + pl.grid_off[static_cast<size_t>(l)];
            if (want_q) mm(gl, n, w.kr.data() + lo_l, dhp, dqa + qt * pl.lvl_total + lo_l, dhp, n, dhp, n, true);
            if (want_k) mm(qs.qc.data() + qt * pl.lvl_total + lo_l, n, gl, n, w.dkc.data() + lo_l, n, dhp, n, n, true);
          }
          if (dv) mm(qs.doc.data() + qt * S * dhp, S, w.s.data(), S, w.dvc.data(), S, dhp, S, S, true);
        }
        if (dv) write_tile(pl, kt, 0, w.dvc.data(), true, T(1), dv + bh * Tn * a.dh);
        if (want_k)
          for (int64_t l = 0; l < L; ++l)
            write_tile(pl, kt, l, w.dkc.data() + pl.lvl_off[static_cast<size_t>(l)], true, wl(l),
                       dk[static_cast<size_t>(l)] + bh * pl.len(l) * a.dh);
      }
      if (want_q && G == 1)
        for (int64_t t = 0; t < nt; ++t)
          for (int64_t l = 0; l < L; ++l)
            write_tile(pl, t, l, dqa + t * pl.lvl_total + pl.lvl_off[static_cast<size_t>(l)], false, wl(l),
                       dq[static_cast<size_t>(l)] + bh * pl.len(l) * a.dh);
    }
  });
  if (want_q && G > 1)  // sum the groups' partials in order
    parallel_for(0, BH, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> sum(static_cast<size_t>(qsize));
      for (int64_t bh = lo; bh < hi; ++bh) {
        const T* lam = a.lambda + (bh % H) * L;
        std::copy_n(dq_part.data() + bh * G * qsize, qsize, sum.data());
        for (int64_t g = 1; g < G; ++g) {
          const T* p = dq_part.data() + (bh * G + g) * qsize;
          for (int64_t x = 0; x < qsize; ++x) sum[static_cast<size_t>(x)] += p[x];
        }
        for (int64_t t = 0; t < nt; ++t)
          for (int64_t l = 0; l < L; ++l)
            write_tile(pl, t, l, sum.data() + t * pl.lvl_total + pl.lvl_off[static_cast<size_t>(l)], false,
                       static_cast<T>(static_cast<double>(lam[l]) * a.scale),
                       dq[static_cast<size_t>(l)] + bh * pl.len(l) * a.dh);
      }
    });
  if (want_lam)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        double s = 0;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t g = 0; g < G; ++g) s += lam_part[static_cast<size_t>(((b * H + h) * G + g) * L + l)];
        dlambda[h * L + l] = static_cast<T>(s * a.scale);
      }
}

}  // namespace hkt::cpu
