// H-Transformer-1D attention on the CPU, the published layout (Zhu and Soricut
// 2021; hkt/ops/htransformer.hpp has the math, docs/htransformer.md the
// picture): one task per (batch, head), O(T (dh + dv)) workspace per task (kept
// per thread and reused across calls), no T x T matrix, O(T Nr (dh + dv)) time. Arithmetic in the tensor's dtype
// (float32 or float64); the bits do not depend on the thread count (each
// (b, h) is one task with a fixed order of sums, and the bias gradient is
// reduced over the batch in order after the tasks).
//
// Per task the sequence (padded with masked tokens to Tp = Nr 2^L) is
// coarsened into L levels (htransformer_tile.hpp's build): level l has Tp >> l
// tokens, q~ and k~ the masked mean of means of pairs (causal q~: the first
// token of each pair), vsum the pair sums of v and c the number of valid fine
// keys of each group. At every level each block b of Nr coarse queries sees
// the keys of blocks b - 1 (LEFT) and b + 1 (RIGHT, not causal) and, at level
// 0, its own block b (ANCHOR, lower-triangular when causal); at levels >= 1
// the correction mask drops the quarter of LEFT/RIGHT the level below covers;
// keys with c = 0 are dropped. Score s = scale q~_p . k~_r + bias[r - p + 2 Nr - 1].
//
// Tiled (htransformer_tile.hpp's Tile): a block's scores against its (up to
// three) key blocks are one Nr x 3 Nr tile, each key block a column segment,
// computed by the register-blocked tile product of attention_tile.hpp
// (AVX2 + FMA for float32 when the CPU has them, portable otherwise) from
// q~ and k~ transposed; the masks (correction, causal, c = 0) and the bias
// are one addend per tile layout (built once per head), added in the pass
// that scales the scores. Segments adjacent both in the tile and in the
// level (Nr a multiple of 8: the level-0 band) form one run, one product.
// The pyramid is stored zero padded for the product (row strides and segments
// rounded up to 8, rows to even, spare rows and columns), so no operand is
// packed per block; the backward's products with P^T and dS^T read P and dS
// in place (attention_tile.hpp's mm_at). The elementwise work per tile is
// one fused pass each (htransformer_simd.hpp, AVX2 + FMA for float32).
//
// Forward: per level and block the tile's row max m, P = exp(s - m),
// y = P vsum (a product per run, into the level's rows) and z = P c; the levels are merged
// top-down (row p of level l takes row p >> 1 of level l + 1), O(Tp dv),
// giving per fine query Y, Z and its offset M: out = Y / Z, lse = M + log Z
// (+inf for padding or no key).
// Backward, scores recomputed: with P = exp(s - lse_i) for fine query i of the
// row's group, d vsum = P^T G and dS = P (G vsum^T - c D), where G = sum_i
// exp(-lse_i) g_i and D = sum_i exp(-lse_i) g_i . out_i over each group are
// a pyramid of offset sums built bottom-up (O(Tp dv); the offset E, the
// group's max of -lse, keeps P <= 1); d bias from dS (summed per segment
// kind, row and column over the blocks, in the dtype over runs of 16 blocks
// and in double over the runs, then per offset); then d q~ += (scale dS) k~,
// d k~ += (scale dS)^T q~ and d vsum += P^T G (products per run, accumulated
// in place by the product), the levels top-down, each level's gradients
// started by the coarsening transposed of the level above: d x_{l-1}[2p + j]
// = d x_l[p] / n_l[p] (n_l = the number of non-empty children, at least 1)
// for the means, the first child only for causal q, both children for vsum
// (0 at the top level), block by block just before the products add to them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/htransformer_tile.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

// y [B, H, T, dv]; lse [B, H, T] (+inf where a query is padding or has no key).
// bias [H, 4 block - 1] or null.
template <class T>
void htransformer_forward(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* bias,
                          T* y, T* lse) {
  using namespace htr;
  using namespace attn_detail;
  const int64_t nq = d.T * d.dh, nv = d.T * d.dv, nbias = 4 * d.block - 1, dv = d.dv, dvp = up8(dv), nr = d.nr;
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo, int64_t hi) {
    Tile<T> w(d);
    Workspace<T>& ws = per_thread<Workspace<T>>();
    const std::vector<Level<T>>& P = ws.P;
    std::vector<T>&M = ws.M, &Y = ws.Y, &Z = ws.Z, &Mu = ws.Mu, &Yu = ws.Yu, &Zu = ws.Zu;
    for (int64_t bh = lo; bh < hi; ++bh) {
      w.set_bias(bias ? bias + (bh % d.H) * nbias : nullptr, nbias);
      build(d, q + bh * nq, k + bh * nq, v + bh * nv, valid ? valid + (bh / d.H) * d.T : nullptr, false, ws.P);
      for (int64_t l = d.L - 1; l >= 0; --l) {
        const Level<T>& x = P[static_cast<size_t>(l)];
        const int64_t n = x.n;
        // (Y: the rows of a block are written by its product, or zeroed if it sees no key)
        M.assign(n, kNinf<T>), Y.resize((n + 2) * dvp), Z.assign(n, T(0));
        std::fill(Y.begin() + n * dvp, Y.end(), T(0));
        for (int64_t blk = 0; blk < n / nr; ++blk) {
          if (w.scores(d, x, l, blk) == 0) {
            std::fill_n(Y.data() + blk * nr * dvp, nr * dvp, T(0));
            continue;
          }
          softmax_rows(w.s.data(), w.ld, nr, w.mask, w.cp.data(), M.data() + blk * nr, Z.data() + blk * nr);
          // (written in place: a spare row past nr, if any, is the next block's and it overwrites it;
          // above level 0 with Nr/2 a multiple of 8 the quarters of P the correction mask zeroes are
          // skipped, as in the backward)
          const int64_t h = w.half;
          const bool trim = l > 0 && h % 8 == 0 && w.nrp == nr;
          for (int64_t i = 0; i < w.nrun; ++i) {
            const auto& r = w.run[i];
            const T* si = w.s.data() + r.col;
            T* yb = Y.data() + blk * nr * dvp;
            if (!trim) {
              htr::mm(si, w.ld, x.vd + r.start * dvp, dvp, yb, dvp, w.mr, dvp, r.keys, i > 0);
              continue;
            }
            const int64_t o = w.kind[i] == Tile<T>::kLeft ? 0 : h;  // the second half's first key
            htr::mm(si, w.ld, x.vd + r.start * dvp, dvp, yb, dvp, h, dvp, o ? nr : h, i > 0);
            htr::mm(si + h * w.ld + o, w.ld, x.vd + (r.start + o) * dvp, dvp, yb + h * dvp, dvp, h, dvp, o ? h : nr,
                    i > 0);
          }
        }
        if (l + 1 < d.L) {  // merge the coarser levels' state (already merged into row p >> 1 of level l + 1)
          std::vector<T>&mx = ws.mx, &wa = ws.wa, &wb = ws.wb;
          mx.resize(n), wa.resize(n), wb.resize(n);
          for (int64_t p = 0; p < n; ++p)  // (NaN weights where mx = -inf: not used)
            mx[p] = std::max(M[p], Mu[p >> 1]), wa[p] = M[p] - mx[p], wb[p] = Mu[p >> 1] - mx[p];
          exp_batch(wa.data(), n), exp_batch(wb.data(), n);
          combine_rows(Y.data(), Y.data(), Yu.data(), n, dvp, wa.data(), wb.data(), mx.data(), false);
          for (int64_t p = 0; p < n; ++p)
            if (mx[p] != kNinf<T>) Z[p] = wa[p] * Z[p] + wb[p] * Zu[p >> 1], M[p] = mx[p];
        }
        std::swap(M, Mu), std::swap(Y, Yu), std::swap(Z, Zu);
      }
      const std::vector<T>& c0 = P[0].c;
      for (int64_t i = 0; i < d.T; ++i) {
        T* yi = y + bh * nv + i * dv;
        if (!(c0[i] > 0 && Zu[i] > 0)) {
          std::fill_n(yi, dv, T(0));
          lse[bh * d.T + i] = std::numeric_limits<T>::infinity();
          continue;
        }
        const T z = Zu[i], *yr = Yu.data() + i * dvp;
        for (int64_t e = 0; e < dv; ++e) yi[e] = yr[e] / z;
        lse[bh * d.T + i] = Mu[i] + std::log(z);
      }
    }
  });
}

// d bias is summed per (segment kind, row, column) in the dtype over runs of this many blocks,
// then in double.
inline constexpr int64_t kBiasRun = 16;

// dq, dk [B, H, T, dh], dv [B, H, T, dv], dbias [H, 4 block - 1] (each may be
// null) from the forward's y and lse and the output gradient g.
template <class T>
void htransformer_grad(const HtrDims& d, const T* q, const T* k, const T* v, const bool* valid, const T* bias,
                       const T* y, const T* lse, const T* g, T* dq, T* dk, T* dv, T* dbias) {
  using namespace htr;
  using namespace attn_detail;
  const int64_t nq = d.T * d.dh, nv = d.T * d.dv, nbias = 4 * d.block - 1, dh = d.dh, dvd = d.dv;
  const int64_t dhp = up8(dh), dvp = up8(dvd), nr = d.nr;
  const T scale = static_cast<T>(d.scale);
  std::vector<double> dtab(dbias ? d.B * d.H * nbias : 0, 0.0);  // per (b, h), reduced over b below
  parallel_for(0, d.B * d.H, 1, [&](int64_t lo, int64_t hi) {
    Tile<T> w(d);
    Workspace<T>& ws = per_thread<Workspace<T>>();
    const std::vector<Level<T>>& P = ws.P;
    std::vector<double>& dacc = ws.dacc;
    std::vector<T>& dpart = ws.dpart;
    std::vector<T*> dQ(static_cast<size_t>(d.L)), dK(dQ), dV(dQ);
    std::vector<const T*> Gp(static_cast<size_t>(d.L));
    std::vector<char> touched;
    std::vector<std::vector<T>>&E = ws.E, &G = ws.G, &D = ws.D, &dqc = ws.dqc, &dkc = ws.dkc, &dvs = ws.dvs;
    if (static_cast<int64_t>(E.size()) < d.L)
      for (auto* x : {&E, &G, &D, &dqc, &dkc, &dvs}) x->resize(static_cast<size_t>(d.L));
    for (int64_t bh = lo; bh < hi; ++bh) {
      w.set_bias(bias ? bias + (bh % d.H) * nbias : nullptr, nbias);
      build(d, q + bh * nq, k + bh * nq, v + bh * nv, valid ? valid + (bh / d.H) * d.T : nullptr, true, ws.P);
      // The pyramid of sum_i exp(-lse_i - E) g_i and sum_i exp(-lse_i - E) g_i . y_i over each
      // group, with E the group's max of -lse (-inf: no live query in the group).
      // (G: every row written, zeros where no live query, and the 2 spare rows zeroed)
      // (G: every row written, zeros where no live query, and the 2 spare rows zeroed; level 0
      // is g itself where every row is live and dv a multiple of 8)
      E[0].assign(d.Tp, kNinf<T>), D[0].assign(d.Tp, T(0));
      bool live = d.T == d.Tp && dvd == dvp && up2(nr) == nr;
      for (int64_t i = 0; i < d.T; ++i) {
        const T li = lse[bh * d.T + i];
        if (P[0].c[i] == 0 || std::isinf(li)) {
          live = false;
          continue;
        }
        const T *gi = g + bh * nv + i * dvd, *yi = y + bh * nv + i * dvd;
        E[0][i] = -li;
        if (dvd % 8 == 0) {
          D[0][i] = dot(gi, yi, dvd);
        } else {
          T acc = 0;
          for (int64_t e = 0; e < dvd; ++e) acc += gi[e] * yi[e];
          D[0][i] = acc;
        }
      }
      if (live) {
        Gp[0] = g + bh * nv;
      } else {
        G[0].resize((d.Tp + 2) * dvp);
        std::fill(G[0].begin() + d.T * dvp, G[0].end(), T(0));
        for (int64_t i = 0; i < d.T; ++i) {
          T* gi = G[0].data() + i * dvp;
          std::fill_n(gi, dvp, T(0));
          if (E[0][i] != kNinf<T>) std::copy_n(g + bh * nv + i * dvd, dvd, gi);
        }
        Gp[0] = G[0].data();
      }
      for (int64_t l = 1; l < d.L; ++l) {
        const int64_t n = d.Tp >> l;
        E[l].assign(n, kNinf<T>), G[l].resize((n + 2) * dvp), D[l].assign(n, T(0));
        std::fill(G[l].begin() + n * dvp, G[l].end(), T(0));
        Gp[l] = G[l].data();
        std::vector<T>&mx = ws.mx, &wa = ws.wa, &wb = ws.wb;
        mx.resize(n), wa.resize(n), wb.resize(n);
        const T* Ef = E[l - 1].data();
        for (int64_t p = 0; p < n; ++p)  // (NaN weights where mx = -inf: not used)
          mx[p] = std::max(Ef[2 * p], Ef[2 * p + 1]), wa[p] = Ef[2 * p] - mx[p], wb[p] = Ef[2 * p + 1] - mx[p];
        exp_batch(wa.data(), n), exp_batch(wb.data(), n);
        combine_rows(G[l].data(), Gp[l - 1], static_cast<const T*>(nullptr), n, dvp, wa.data(), wb.data(), mx.data(),
                     true);
        for (int64_t p = 0; p < n; ++p)
          if (mx[p] != kNinf<T>) E[l][p] = mx[p], D[l][p] = wa[p] * D[l - 1][2 * p] + wb[p] * D[l - 1][2 * p + 1];
      }
      // d q~, d k~, d vsum per level; level 0's are the outputs themselves where direct() and no
      // padding column (nr a multiple of 8: the products write no row past T).
      const bool out0 = direct(d, valid) && up8(nr) == nr;
      for (int64_t l = 0; l < d.L; ++l) {
        const int64_t n = d.Tp >> l;
        T* oq = out0 && l == 0 && dq ? dq + bh * nq : nullptr;
        T* ok = out0 && l == 0 && dk ? dk + bh * nq : nullptr;
        T* ov = out0 && l == 0 && dv ? dv + bh * nv : nullptr;
        // (not zero filled: see below)
        if (oq) dQ[l] = oq;
        else dqc[l].resize((n + 2) * dhp), dQ[l] = dqc[l].data();
        if (ok) dK[l] = ok;
        else dkc[l].resize((n + 8) * dhp), dK[l] = dkc[l].data();
        if (ov) dV[l] = ov;
        else dvs[l].resize((n + 8) * dvp), dV[l] = dvs[l].data();
      }
      double* db = dbias ? dtab.data() + bh * nbias : nullptr;
      if (db) dacc.assign(3 * nr * w.nrp, 0.0), dpart.assign(dacc.size(), T(0));
      // (the partial sums into dacc after every kBiasRun blocks of a level, and at its end)
      auto flush = [&] {
        for (size_t i = 0; i < dacc.size(); ++i) dacc[i] += static_cast<double>(dpart[i]), dpart[i] = T(0);
      };
      // Levels top-down: a level's d q~, d k~, d vsum start as the coarsening transposed of the
      // level above (d x_l[2p + j] = d x_{l+1}[p] / n_{l+1}[p] for the means, the first child only
      // for causal q, both children for vsum), 0 at the top, set block by block just before the
      // block's products add to them (while hot).
      auto start_keys = [&](int64_t l, int64_t kb) {  // d k~, d vsum of key block kb
        if (l + 1 == d.L) {
          std::fill_n(dK[l] + kb * nr * dhp, nr * dhp, T(0)), std::fill_n(dV[l] + kb * nr * dvp, nr * dvp, T(0));
          return;
        }
        const int64_t c0 = kb * nr / 2;
        const T* inv = P[static_cast<size_t>(l + 1)].inv.data() + c0;
        spread_rows(dK[l] + kb * nr * dhp, dK[l + 1] + c0 * dhp, nr / 2, dhp, inv, false);
        spread_rows(dV[l] + kb * nr * dvp, dV[l + 1] + c0 * dvp, nr / 2, dvp, static_cast<const T*>(nullptr), false);
      };
      auto start_queries = [&](int64_t l, int64_t blk) {  // d q~ of query block blk
        if (l + 1 == d.L) {
          std::fill_n(dQ[l] + blk * nr * dhp, nr * dhp, T(0));
          return;
        }
        const int64_t c0 = blk * nr / 2;
        spread_rows(dQ[l] + blk * nr * dhp, dQ[l + 1] + c0 * dhp, nr / 2, dhp,
                    d.causal ? nullptr : P[static_cast<size_t>(l + 1)].inv.data() + c0, d.causal);
      };
      for (int64_t l = d.L - 1; l >= 0; --l) {
        const Level<T>& x = P[static_cast<size_t>(l)];
        const std::vector<T>&El = E[l], &Dl = D[l];
        const T* Gl = Gp[l];
        // At the top level d q~'s rows are written by their block's product and each key block's
        // d k~, d vsum rows by the first block that sees it (no padding column) or zeroed then;
        // below, all are started (start_*) and the products add. (A padding column, nr % 8 != 0,
        // adds 0 to a row of the next key block or a spare row before that block's start, which
        // then overwrites it.) Key blocks no block sees are started at the end.
        const bool top = l + 1 == d.L;
        const int64_t nb = x.n / nr;
        touched.assign(nb, 0);
        for (int64_t blk = 0; blk < nb; ++blk) {
          if (w.scores(d, x, l, blk) == 0) {
            start_queries(l, blk);
            continue;
          }
          const int64_t ld = w.ld, p0 = blk * nr, mr = w.mr, nrp = w.nrp;
          if (!top) start_queries(l, blk);
          for (int64_t i = 0; i < w.ns && (nrp != nr || !top); ++i) {
            const int64_t kb = w.seg[i].start / nr;
            if (touched[kb]) continue;
            touched[kb] = 1;
            start_keys(l, kb);
          }
          // P = exp(s - lse_i + E) (<= 1: lse_i >= s for each fine query i of the row's group),
          // dS = P (G vsum^T - c D), its sums per (segment kind, row, column) for d bias, then scale dS.
          for (int64_t i = 0; i < w.nrun; ++i)
            htr::mm(Gl + p0 * dvp, dvp, x.vt.data() + w.run[i].start, x.ldt, w.g.data() + w.run[i].col, ld, mr,
               w.run[i].cols, dvd, false);
          dsoftmax_rows(w.s.data(), w.g.data(), ld, nr, nrp, w.kind, w.mask, w.cp.data(), El.data() + p0, Dl.data() + p0,
                        scale, db ? dpart.data() : nullptr);
          if (db && (blk + 1) % kBiasRun == 0) flush();
          std::fill(w.g.begin() + nr * ld, w.g.begin() + mr * ld, T(0));
          // d q~ = (scale dS) k~ (the block's rows are written by this block only: spare rows
          // past nr get 0), d k~ += (scale dS)^T q~, d vsum += P^T G: products per run, the last
          // two accumulated in place (the zero rows of padding columns add 0; spare rows at the end).
          // Above level 0 (each run one segment) the correction mask zeroes P and dS where a LEFT
          // row a < Nr/2 meets a key >= Nr/2 and a RIGHT row a >= Nr/2 a key < Nr/2: with Nr/2 a
          // multiple of 8 the products skip those quarters (zero terms).
          const int64_t h = w.half;
          const bool trim = l > 0 && h % 8 == 0 && nrp == nr;
          for (int64_t i = 0; i < w.nrun; ++i) {
            const auto& r = w.run[i];
            const T* gi = w.g.data() + r.col;
            const bool acc = i > 0 || !top;
            if (!trim) {
              htr::mm(gi, ld, x.kd + r.start * dhp, dhp, dQ[l] + p0 * dhp, dhp, mr, dhp, r.keys, acc);
              continue;
            }
            const int64_t o = w.kind[i] == Tile<T>::kLeft ? 0 : h;  // the second half's first key
            htr::mm(gi, ld, x.kd + r.start * dhp, dhp, dQ[l] + p0 * dhp, dhp, h, dhp, o ? nr : h, acc);
            htr::mm(gi + h * ld + o, ld, x.kd + (r.start + o) * dhp, dhp, dQ[l] + (p0 + h) * dhp, dhp, h, dhp,
                    o ? h : nr, acc);
          }
          auto products = [&](int64_t col, int64_t start, int64_t cols, bool acc) {
            if (!trim) {
              mm_at(w.g.data() + col, ld, x.qd + p0 * dhp, dhp, dK[l] + start * dhp, dhp, cols, dhp, nr, acc);
              mm_at(w.s.data() + col, ld, Gl + p0 * dvp, dvp, dV[l] + start * dvp, dvp, cols, dvp, nr, acc);
              return;
            }
            // LEFT: keys < h from all rows, keys >= h from rows >= h; RIGHT: keys < h from rows < h,
            // keys >= h from all rows.
            const bool left = w.kind[col / nrp] == Tile<T>::kLeft;
            for (int64_t e : {int64_t(0), h}) {  // the keys [e, e + h)
              const int64_t r0 = left && e ? h : 0, K = left ? (e ? h : nr) : (e ? nr : h);
              mm_at(w.g.data() + r0 * ld + col + e, ld, x.qd + (p0 + r0) * dhp, dhp, dK[l] + (start + e) * dhp, dhp, h,
                    dhp, K, acc);
              mm_at(w.s.data() + r0 * ld + col + e, ld, Gl + (p0 + r0) * dvp, dvp, dV[l] + (start + e) * dvp, dvp, h,
                    dvp, K, acc);
            }
          };
          for (int64_t i = 0; i < w.nrun; ++i) {
            const auto& r = w.run[i];
            if (nrp != nr || !top) {  // (rows started above)
              products(r.col, r.start, r.cols, true);
              continue;
            }
            // No padding column: the run's key blocks seen before accumulate, the others are
            // written (one product per stretch of either).
            for (int64_t j = 0; j < r.keys;) {
              const bool acc = touched[(r.start + j) / nr];
              int64_t e = j;
              for (; e < r.keys && bool(touched[(r.start + e) / nr]) == acc; e += nr) touched[(r.start + e) / nr] = 1;
              products(r.col + j, r.start + j, e - j, acc);
              j = e;
            }
          }
        }
        if (db) flush();
        for (int64_t kb = 0; kb < nb; ++kb)
          if (!touched[kb]) start_keys(l, kb);
      }
      if (db)  // d bias[r - p + 2 Nr - 1] from the sums (entries outside a segment's mask hold 0)
        for (int64_t kd = 0; kd < 3; ++kd)
          for (int64_t a = 0; a < nr; ++a) {
            double* dbr = db + ((kd - 1) * nr - a + 2 * d.block - 1);
            const double* s = dacc.data() + (kd * nr + a) * w.nrp;
            for (int64_t j = 0; j < nr; ++j) dbr[j] += s[j];
          }
      const bool dense = std::all_of(P[0].c.begin(), P[0].c.begin() + d.T, [](T c) { return c > 0; });
      auto put = [&](T* out, const T* src, int64_t n, int64_t ld) {  // padding rows 0
        if (!out || out == src) return;
        if (dense && n == ld) return void(std::copy_n(src, d.T * n, out));
        for (int64_t i = 0; i < d.T; ++i) {
          if (P[0].c[i] > 0) std::copy_n(src + i * ld, n, out + i * n);
          else std::fill_n(out + i * n, n, T(0));
        }
      };
      put(dq ? dq + bh * nq : nullptr, dQ[0], dh, dhp), put(dk ? dk + bh * nq : nullptr, dK[0], dh, dhp);
      put(dv ? dv + bh * nv : nullptr, dV[0], dvd, dvp);
    }
  });
  if (dbias)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t j = 0; j < nbias; ++j) {
        double acc = 0;
        for (int64_t b = 0; b < d.B; ++b) acc += dtab[(b * d.H + h) * nbias + j];
        dbias[h * nbias + j] = static_cast<T>(acc);
      }
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
inline HtrDims htr_dims(const sig::HtrShape& d) {
  return {d.B, d.H, d.T, d.dh, d.dv, d.block, d.Tp, d.nr, d.L, d.causal, d.scale};
}
template <class T>
void htransformer(const sig::HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                  const void* bias, void* y, void* lse) {
  htransformer_forward<T>(htr_dims(d), buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(bias), buf<T>(y), buf<T>(lse));
}
template <class T>
void htransformer_backward(const sig::HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                           const void* bias, const void* y, const void* lse, const void* g, void* dq, void* dk,
                           void* dv, void* dbias) {
  htransformer_grad<T>(htr_dims(d), buf<T>(q), buf<T>(k), buf<T>(v), valid, buf<T>(bias), buf<T>(y), buf<T>(lse),
                       buf<T>(g), buf<T>(dq), buf<T>(dk), buf<T>(dv), buf<T>(dbias));
}
HKT_CPU_KERNEL(htransformer)
HKT_CPU_KERNEL(htransformer_backward)

}  // namespace hkt::cpu
