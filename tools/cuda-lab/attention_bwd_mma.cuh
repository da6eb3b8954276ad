// Shared by the register-resident backward kernels (attention_bwd_mma.cu: the
// two-kernel backward; attention_bwd_fused.cu: the single-pass one): their
// shared-memory buffers, the per-query LSE and D, the key side's work on one
// tile pair, and the dlambda partials of a tile from its rows and their
// gradient accumulators.
#pragma once
#include <cstdint>
#include <limits>

#include "tools/cuda-lab/async_copy.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "tools/cuda-lab/attention_mma.hpp"
#include "kernels/cuda/mma_tf32.cuh"

namespace hkt::cuda {
namespace {

// Shared buffers of a backward block (floats).
struct MmaBwdTiles {
  float *Qs, *Ks, *Vs, *dOs, *lse, *Dr;  // 64-row tiles at mma_ld(dhp); per-query LSE and D
  float *dSs;                             // dS [query][key] at lay.lds: L > 1, or single pass
  float *Ql, *Kl, *Cg, *dSg, *Acc;        // L > 1 only (null otherwise), at the Layout's geometry (dSg: dsg_*)
  float *AccQ;                            // single pass with L > 1: one tile pair's coarse dQ_l rows
  float *Qlo, *dOlo;                      // split_qo: Q_0 and dO as split tiles (Qs, dOs the hi parts)
  float *Klo, *Vlo;                       // split_kv: K_0 and V as split tiles (Ks, Vs the hi parts)
  float *Qn, *dOn;                        // stage_qo: the next query tile's Q_0 and dO as loaded (cp.async)
  bool ds_over_qo;                        // dSs lies over the split Q and dO (single pass with split_qo)
  // single_pass: dS always (the dQ product reads it by query rows), and Ql,
  // Kl and AccQ hold every level's rows at once (lay.acc_row(l)), not one
  // level's at a time. split_qo, split_kv: split tiles (pair_tile.cuh), 64 x
  // dhp each, hi and lo; in a single pass dS then takes the place of Q and dO
  // once every warp is done with them (key_side_pair), which keeps MHA at two
  // blocks per SM.
  // dSg_l (G = lay.BT >> l) row major at G + 4, not G: the tile products read
  // 16 x 8 fragments of it, row major (the dQ product) and column major (dK),
  // and at G = 32 a row-major fragment put 8 lanes on one bank (4 at G = 16),
  // a column-major one 4 (2); at G + 4, none and 2.
  __host__ __device__ static int dsg_ld(const Layout& lay, int l) { return (lay.BT >> l) + 4; }
  __host__ __device__ static int dsg_off(const Layout& lay, int l) {  // level l's grid; l = lay.L: the total
    int o = 0;
    for (int m = 1; m < l; ++m) o += Layout::up8((lay.BT >> m) * dsg_ld(lay, m));
    return o;
  }
  __host__ __device__ static int plain(int dhp) { return Layout::up8(kMmaTile * mma_ld(dhp)); }
  __host__ __device__ static constexpr int split(int dhp) { return kMmaTile * dhp; }  // one of a split tile's two
  static size_t elems(const Layout& lay, int dhp, bool single_pass = false, bool split_qo = false,
                      bool split_kv = false, bool stage_qo = false) {
    size_t n = 2 * static_cast<size_t>(split_qo ? 2 * split(dhp) : plain(dhp)) +
               2 * static_cast<size_t>(split_kv ? 2 * split(dhp) : plain(dhp)) + 2 * Layout::up8(kMmaTile) +
               (stage_qo ? 2 * static_cast<size_t>(plain(dhp)) : 0);
    if (lay.L > 1 || single_pass) n += single_pass && split_qo ? 0 : static_cast<size_t>(lay.scores());
    const size_t all_levels = Layout::up8(lay.acc_row(lay.L) * lay.ld);
    if (lay.L > 1)
      n += (single_pass ? 3 * all_levels : 2 * static_cast<size_t>(lay.level_rows())) + lay.grid_off(lay.L) +
           dsg_off(lay, lay.L) + all_levels;
    return n;
  }
  __device__ MmaBwdTiles(float* sm, const Layout& lay, int dhp, bool single_pass = false, bool split_qo = false,
                         bool split_kv = false, bool stage_qo = false) {
    Carver<float> cv{sm};
    const int qo = split_qo ? split(dhp) : plain(dhp), kv = split_kv ? split(dhp) : plain(dhp);
    Qs = cv.take(qo);
    Qlo = split_qo ? cv.take(qo) : nullptr;
    dOs = cv.take(qo);
    dOlo = split_qo ? cv.take(qo) : nullptr;
    Ks = cv.take(kv);
    Klo = split_kv ? cv.take(kv) : nullptr;
    Vs = cv.take(kv);
    Vlo = split_kv ? cv.take(kv) : nullptr;
    lse = cv.take(Layout::up8(kMmaTile));
    Dr = cv.take(Layout::up8(kMmaTile));
    Qn = stage_qo ? cv.take(plain(dhp)) : nullptr;
    dOn = stage_qo ? cv.take(plain(dhp)) : nullptr;
    dSs = Ql = Kl = Cg = dSg = Acc = AccQ = nullptr;
    ds_over_qo = single_pass && split_qo;  // 4 split tiles >= 64 x lay.lds
    if (ds_over_qo)
      dSs = Qs;
    else if (lay.L > 1 || single_pass)
      dSs = cv.take(lay.scores());
    if (lay.L > 1) {
      const int all_levels = Layout::up8(lay.acc_row(lay.L) * lay.ld);
      Ql = cv.take(single_pass ? all_levels : lay.level_rows());
      Kl = cv.take(single_pass ? all_levels : lay.level_rows());
      Cg = cv.take(lay.grid_off(lay.L));
      dSg = cv.take(dsg_off(lay, lay.L));
      Acc = cv.take(all_levels);
      if (single_pass) AccQ = cv.take(all_levels);
    }
  }
};

// Single pass: every level's coarse rows of query tile tq staged at once
// (s.Ql at lay.acc_row(l); stage_key_tile staged key tile tk's in s.Kl) and
// the grids Cg_l = Q_l K_l^T; ends with a barrier (none at the start: the
// caller's barrier frees Ql and Cg). L = 1: just the barrier.
__device__ void stage_levels(const Params& P, const MmaBwdTiles& s, const Layout& lay, int64_t bh, int tq) {
  if (P.L > 1) {
    stage_level_rows(P, lay, P.q, bh, tq, s.Ql);
    __syncthreads();
    level_grids_staged(P, lay, s.Ql, s.Kl, s.Cg);
  }
  __syncthreads();
}

// LSE log2(e) (exp_minus's m2) and D of the query tile from i0 on, into lse
// and Dr (kMmaTile each; +inf and 0 on virtual rows).
__device__ void load_lse_d(const Params& P, float* lse, float* Dr, int64_t bh, int64_t i0, const float* LSE,
                           const float* D) {
  for (int p = threadIdx.x; p < kMmaTile; p += blockDim.x) {
    const int64_t i = i0 + p;
    const bool in = i >= 0 && i < P.T;
    lse[p] = in ? LSE[bh * P.T + i] * kLog2e : std::numeric_limits<float>::infinity();  // for exp_minus
    Dr[p] = in ? D[bh * P.T + i] : 0.0f;
  }
}

// The two-kernel backwards' level gradients for the tile pair whose dS
// ([query][key] at lay.lds) is in dSs: for l = 1 .. L-1 the block sums dSg_l
// (into dSg, MmaBwdTiles::dsg_*), then Acc_l += dSg_l^T rows (key side,
// KeySide) or Acc_l += dSg_l rows (query side), rows = the level-l rows of
// the other side's tile `other`, staged one level at a time in `stage`
// (lay.level_rows()). Starts with a barrier.
template <bool KeySide>
__device__ void level_grads(const Params& P, const Layout& lay, const float* dSs, float* dSg, float* stage,
                            float* Acc, int64_t bh, int other) {
  const int dh = int(P.dh);
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l;
    __syncthreads();  // dSs complete; stage free
    float* dsg = dSg + MmaBwdTiles::dsg_off(lay, l);
    const int ldg = MmaBwdTiles::dsg_ld(lay, l);
    block_sums<float>(dSs, dsg, ldg, lay, l);
    load_rows_aligned(stage, lay.ld, level_rows<float>(P, KeySide ? P.q : P.k, l, bh),
                      coarse_first(P, other, l, lay.BT), G, level_len(P.T, l), dh, lay.dhp);
    __syncthreads();
    tile_mma<!KeySide, true>(Acc + lay.acc_row(l) * lay.ld, lay.ld, dsg, ldg, stage, lay.ld, G, lay.dhp, G, true);
  }
}

// Key tile tk of (b, h) staged for the key side: K and V (keys from j0 =
// tk BT - off on) in shared memory (SinglePass: and every level's coarse K
// rows, in s.Kl), the coarse accumulators (L > 1) and the fragments dk, dv
// zeroed. No barrier.
template <int DHP, bool SinglePass = false, int QS = 1>
__device__ __forceinline__ void stage_key_tile(const Params& P, const MmaBwdTiles& s, const Layout& lay, int64_t bh,
                                               int tk, int64_t j0, float (&dk)[DHP / 8][4],
                                               float (&dv)[DHP / 8][4]) {
  const RowCopy<float> kv[2] = {{s.Ks, level_rows<float>(P, P.k, 0, bh), j0},
                                {s.Vs, static_cast<const float*>(P.v) + bh * P.T * P.dh, j0}};
  load_tile_pair<DHP, kMmaTile, kMmaThreads * QS>(kv, mma_ld(DHP), P.T, int(P.dh));
  if constexpr (SinglePass) stage_level_rows(P, lay, P.k, bh, tk, s.Kl);
  if (P.L > 1) zero(s.Acc, lay.acc_row(P.L) * lay.ld);
#pragma unroll
  for (int n = 0; n < DHP / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.0f;
}

// Async (single pass, split Q and dO, MmaBwdTiles with stage_qo): query tile
// tq's Q_0 and dO with cp.async into s.Qn, s.dOn, one commit.
template <int DHP>
__device__ __forceinline__ void fetch_query_tile(const Params& P, const MmaBwdTiles& s, int64_t bh, int tq,
                                                 const float* dO) {
  const int64_t i0 = int64_t(tq) * kMmaTile - P.off;
  const RowCopy<float> qo[2] = {{s.Qn, level_rows<float>(P, P.q, 0, bh), i0}, {s.dOn, dO + bh * P.T * P.dh, i0}};
  load_rows_async(qo, mma_ld(DHP), kMmaTile, P.T, int(P.dh), DHP);
}

// P and dS of a warp's score fragments on the tile pair (i0, j0), in place:
// sf holds the level-0 scores (unweighted), dpf dO . V; afterwards sf holds P
// = exp(the combined score - LSE) (0 when LSE = +inf) and dpf dS = P (dP - D),
// both 0 at masked keys. KeySide: element e of [j] is key r0 + 8 (e >> 1) and
// query c0 + 8j + 2t + (e & 1) of the tiles (S^T); else query r0 + 8 (e >> 1)
// and key c0 + 8j + 2t + (e & 1) (S).
template <bool KeySide, int NT>
__device__ __forceinline__ void pair_p_ds(const Params& P, const Layout& lay, float w0, const float* Cg,
                                          const float* lse, const float* Dr, int64_t b, int64_t i0, int64_t j0,
                                          int r0, int t, int c0, float (&sf)[NT][4], float (&dpf)[NT][4]) {
  with_mask_test(!pair_unmasked(P, i0, j0, lay.BT), [&](auto masked) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = r0 + 8 * (e >> 1), col = c0 + 8 * j + 2 * t + (e & 1);
        const int q = KeySide ? col : row, k = KeySide ? row : col;
        float pv = 0.0f, ds = 0.0f;
        if (!(decltype(masked)::value && key_masked(P, b, i0 + q, j0 + k))) {
          pv = exp_minus(combine_folded(P, lay, w0, Cg, q, k, sf[j][e]), lse[q]);  // 0 when lse = +inf
          ds = pv * (dpf[j][e] - Dr[q]);
        }
        sf[j][e] = pv;
        dpf[j][e] = ds;
      }
  });
}

// A warp's dS fragments (pair_p_ds's layout) into dS [query][key] at lds.
template <bool KeySide, int NT>
__device__ __forceinline__ void store_ds(float* dSs, int lds, int r0, int t, int c0, const float (&f)[NT][4]) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = r0 + 8 * (e >> 1), col = c0 + 8 * j + 2 * t + (e & 1);
      dSs[(KeySide ? col : row) * lds + (KeySide ? row : col)] = f[j][e];
    }
}

// The key side's work on the tile pair (tq, tk), K and V of tile tk staged
// (keys from j0 on): Q, dO, LSE and D of tile tq and the levels' grids are
// loaded (starting with a barrier; SinglePass: stage_levels, the key
// tile's coarse rows staged by stage_key_tile); S^T = K Q^T and dP^T = V dO^T for this
// warp's 16 keys, then P^T and dS^T; dV += P^T dO and dK_0 / w_0 += dS^T Q_0 in
// the fragments dv, dk (element e of [n]: key r0 + 8 (e >> 1), column
// 8n + 2t + (e & 1)). With to_smem, dS^T goes to s.dSs as dS [query][key].
// QS = 2 (blocks of 8 warps): warp w takes the queries 32 (w / 4) .. + 31 of
// its keys, so dk and dv hold that half's share (the caller sums the halves).
// Split: Q and dO are split once as they are loaded, into split tiles (s.Qs /
// s.Qlo and s.dOs / s.dOlo: MmaBwdTiles built with split_qo), where each warp
// would split every element it reads as a B operand, 4 times per element per
// block; with s.ds_over_qo, dS^T goes over them after a barrier. That trades
// two instructions per value read for twice the shared-memory traffic (hi
// and lo, where a plain tile is read once and split in registers): fused
// keeps Q and dO plain, fused8 and the two-kernel key side split them.
// Async (fused8-async; SinglePass and Split): Q and dO come from the copies
// that fetch_query_tile started a tile pair earlier (into s.Qn, s.dOn), split
// from there (tile_from_staged); this pair then starts the next query tile's (after the
// barrier that ends stage_levels: every thread is done with s.Qn, s.dOn).
template <int DHP, bool SinglePass = false, int QS = 1, bool Split = true, bool Async = false>
__device__ __forceinline__ void key_side_pair(const Params& P, const MmaBwdTiles& s, const Layout& lay,
                                              const float (&w)[kMaxLevels], int64_t bh, int tq, int tk, int64_t j0,
                                              const float* dO, const float* LSE, const float* D,
                                              float (&dk)[DHP / 8][4], float (&dv)[DHP / 8][4], bool to_smem) {
  static_assert(QS == 1 || QS == 2, "one or two query halves");
  static_assert(!Async || (SinglePass && Split), "the staged copies are the single pass's, split");
  constexpr int BT = kMmaTile, ld = mma_ld(DHP), NT = BT / 8 / QS;
  const auto [warp, g, t, r0] = frag_lane();
  const int qc = (warp >> 2) * (BT / QS);  // this warp's first query column (QS = 2: warps 4..7 the second half)
  const int kw = warp & 3;                  // this warp's 16 keys
  const int64_t b = bh / P.H, i0 = int64_t(tq) * BT - P.off;
  if constexpr (Async) cp_async_wait_all();  // this thread's copies of Q and dO landed (the barrier: everyone's)
  __syncthreads();  // the previous query tile's readers are done
  if constexpr (Async) {
    tile_from_staged<DHP, BT, kMmaThreads * QS, TileLayout::split>(s.Qn, ld, s.Qs, s.Qlo);
    tile_from_staged<DHP, BT, kMmaThreads * QS, TileLayout::split>(s.dOn, ld, s.dOs, s.dOlo);
  } else {
    constexpr TileLayout qo_layout = Split ? TileLayout::split : TileLayout::plain;
    const RowCopy<float> qo[2] = {{s.Qs, level_rows<float>(P, P.q, 0, bh), i0, s.Qlo, qo_layout},
                                  {s.dOs, dO + bh * P.T * P.dh, i0, s.dOlo, qo_layout}};
    load_tile_pair<DHP, BT, kMmaThreads * QS>(qo, ld, P.T, int(P.dh));
    if (P.prefetch && tq + 1 < P.nt) {  // the next query tile's Q and dO (the callers' next pair), into L2 meanwhile
      prefetch_tile_l2(qo[0].rows, i0 + BT, BT, P.T, int(P.dh));
      prefetch_tile_l2(qo[1].rows, i0 + BT, BT, P.T, int(P.dh));
    }
  }
  load_lse_d(P, s.lse, s.Dr, bh, i0, LSE, D);
  if constexpr (SinglePass)
    stage_levels(P, s, lay, bh, tq);  // ends with a barrier
  else
    level_grids<float, true>(P, bh, tq, tk, lay, s.Ql, s.Kl, s.Cg);  // ends with a barrier
  if constexpr (Async)
    if (tq + 1 < P.nt) fetch_query_tile<DHP>(P, s, bh, tq + 1, dO);  // lands while this pair's products run
  // This warp's coarse terms: its 8 level-1 key columns, for its queries' level-1 rows.
  if (P.L > 1) fold_levels(P, lay, w, s.Cg, qc / 2, BT / 2 / QS, 8 * kw, 8);
  // Element e of st[j]: key r0 + 8 (e >> 1), query qc + 8j + 2t + (e & 1).
  float st[NT][4], dpt[NT][4];
  const SplitLane<DHP> sl(threadIdx.x & 31);
  // This warp's query rows (from qc, a multiple of 8: split tiles keep their swizzle).
  const int qo_ld = Split ? DHP : ld;
  const float *Qs = s.Qs + qc * qo_ld, *dOs = s.dOs + qc * qo_ld;
  const float *Qlo = Split ? s.Qlo + qc * DHP : nullptr, *dOlo = Split ? s.dOlo + qc * DHP : nullptr;
  if constexpr (Split) {
    warp_abt_split<DHP, NT>(st, s.Ks + kw * 16 * ld, ld, Qs, Qlo, sl);    // S^T = K Q^T (level 0, unweighted)
    warp_abt_split<DHP, NT>(dpt, s.Vs + kw * 16 * ld, ld, dOs, dOlo, sl);  // dP^T = V dO^T
  } else {
    warp_abt<DHP, NT>(st, s.Ks + kw * 16 * ld, Qs, ld);
    warp_abt<DHP, NT>(dpt, s.Vs + kw * 16 * ld, dOs, ld);
  }
  pair_p_ds<true>(P, lay, w[0], s.Cg, s.lse, s.Dr, b, i0, j0, r0, t, qc, st, dpt);  // P^T, dS^T
  if constexpr (Split) {
    warp_fb_split<DHP, NT>(dv, st, dOs, dOlo, sl);  // dV += P^T dO
    warp_fb_split<DHP, NT>(dk, dpt, Qs, Qlo, sl);   // dK_0 / w_0 += dS^T Q_0
  } else {
    warp_fb<DHP, NT>(dv, st, dOs, ld);
    warp_fb<DHP, NT>(dk, dpt, Qs, ld);
  }
  if (to_smem) {
    if (s.ds_over_qo) __syncthreads();  // every warp is done with Q and dO
    store_ds<true>(s.dSs, lay.lds, r0, t, qc, dpt);
  }
}

// out[i] = w * the fragment rows f (Add: out[i] += ...; this warp's 16 rows
// of a tile whose first row is position `first`: element e of f[n] is row
// r0 + 8 (e >> 1), column col0 + 8n + 2t + (e & 1), n < NF), for positions in
// [0, T) and columns < dh; out is (b, h)'s first row, null: not wanted. Returns this
// thread's share of X . f, X the tile's staged rows at mma_ld(DHP) (zero on
// virtual rows and pad columns; null: 0): the dlambda_0 term of dQ_0
// (X = Q_0) or dK_0 (X = K_0).
template <int DHP, bool Add = false, int NF = DHP / 8>
__device__ __forceinline__ double store_frag_rows(const Params& P, const float* X, float w, int64_t first,
                                                  const float (&f)[NF][4], float* out, int col0 = 0) {
  constexpr int ld = mma_ld(DHP);
  const auto [warp, g, t, r0] = frag_lane();
  const int dh = int(P.dh);
  if (out) expect_rows_aligned(out, dh);
  double dot = 0;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int p = r0 + 8 * r;
    const int64_t i = first + p;
    // Columns c, c + 1 (c even) as one float2: out's rows are aligned (expect_rows_aligned).
    float* row = out && i >= 0 && i < P.T ? out + i * dh : nullptr;
#pragma unroll
    for (int n = 0; n < NF; ++n) {
      const int c = col0 + 8 * n + 2 * t;
      const float a = w * f[n][2 * r], b = w * f[n][2 * r + 1];
      if (X) dot += double(X[p * ld + c]) * double(f[n][2 * r]) + double(X[p * ld + c + 1]) * double(f[n][2 * r + 1]);
      if (!row || c >= dh) continue;
      float2* q = reinterpret_cast<float2*>(row + c);
      if constexpr (Add) {
        const float2 o = *q;
        *q = float2{o.x + a, o.y + b};
      } else {
        *q = float2{a, b};
      }
    }
  }
  return dot;
}

// The dlambda partials of one tile, part[l] for l < L, from the identity
//   sum_ij dS_ij (X_l Y_l^T)_ij = sum_a X_l[a] . (dSg_l Y_l)[a]
// over this tile's rows a of side X (queries or keys): d0 is this thread's
// share of level 0 (X_0 . its accumulator, from the fragments), Acc the coarse
// accumulators of levels 1 .. L-1 (lay.acc_row(l)), X the level rows of the
// side (P.q or P.k), staged through `stage` (free, Acc complete, on entry);
// X null: `stage` holds every level's rows already (stage_level_rows).
// Every thread calls it; part null: nothing to do.
__device__ void tile_dlambda(const Params& P, const Layout& lay, double d0, const float* Acc, const void* const* X,
                             float* stage, int64_t bh, int tile, double* part) {
  if (!part) return;
  const int dh = int(P.dh);
  const double s0 = block_reduce(d0, 0.0, SumOp{});
  if (threadIdx.x == 0) part[0] = s0 * P.scale;
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l;
    const float* rows = stage;  // X is null: every level's rows are staged already, at lay.acc_row(l)
    if (X) {
      __syncthreads();  // stage free; Acc complete
      load_rows_aligned(stage, lay.ld, level_rows<float>(P, X, l, bh), coarse_first(P, tile, l, lay.BT), G,
                        level_len(P.T, l), dh, lay.dhp);
      __syncthreads();
    } else {
      rows += lay.acc_row(l) * lay.ld;
    }
    const float* acc = Acc + lay.acc_row(l) * lay.ld;
    double sl = 0;
    for (int e = threadIdx.x; e < G * dh; e += blockDim.x) {
      const int a = e / dh, d = e - a * dh;
      sl += double(rows[a * lay.ld + d]) * double(acc[a * lay.ld + d]);
    }
    sl = block_reduce(sl, 0.0, SumOp{});
    if (threadIdx.x == 0) part[l] = sl * P.scale;
  }
}

}  // namespace
}  // namespace hkt::cuda
