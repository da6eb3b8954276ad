// The fused attention backward on Hopper's warpgroup products (wgmma,
// kernels/cuda/wgmma.cuh), float32 in 3xTF32, head dims up to 64: the two
// kernels of attention_bwd_mma.cu (key side: dK_l, dV; query side: dQ_l and
// the dlambda partials; no atomics, reproducible bits), with every tile
// product one instruction per warp per k step. HKT_CUDA_ATTN_BWD=wgmma.
// Built for sm_90a only (this folder), called on compute capability 9.0 only.
//
// A block is one warpgroup (4 warps) and takes one 64-row tile, 16 rows per
// warp, and walks the other side's tiles. TF32 operands must be K-major, so a
// tile that one product contracts over its head dim and another over its rows
// is stored twice, split into hi and lo: as it is (64 rows of DHP) and
// transposed (DHP rows of 64 row slots, in key_slot order: 0, 2, 4, 6, 1, 3,
// 5, 7 in each group of 8, the order the score fragments give as A
// fragments). Per tile pair:
//   key side (block per key tile; Q and dO stored both ways per query tile):
//     S^T = K Q^T, dP^T = V dO^T: three m64n64k8 products per k step each,
//     operands from shared memory; while they run the block stores Q^T, dO^T;
//     P^T and dS^T in the warps' fragments, as key_side_pair computes them;
//     dV += P^T dO, dK_0 += dS^T Q_0 from P^T, dS^T in registers, three
//     m64nDHPk8 products per 8 queries each.
//   query side (block per query tile; K stored both ways per key tile):
//     S = Q K^T, dP = dO V^T; meanwhile K^T stored; dS in the fragments;
//     dQ_0 += dS K_0 from dS in registers.
//   The levels (L > 1) as in attention_bwd_mma.cu: dS to shared memory, block
//   sums, Acc_l += dSg_l^T Q_l or dSg_l K_l (level_grads).
// Shared memory (dh = 64): 12 tiles of 64 x 64 on the key side (192 KB),
// 10 on the query side (160 KB): one block per SM. The levels' buffers lie
// over tiles while those are free (the coarse rows of the other side's tile
// over the transposed tiles before they are stored; dS, its block sums and
// level_grads' rows over the plain tiles of the other side once their
// products are done), so that every L fits.
#include <algorithm>
#include <initializer_list>
#include <cstdint>
#include <vector>

#include "tools/cuda-lab/attention_bwd_mma.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "tools/cuda-lab/attention_mma.hpp"
#include "kernels/cuda/mma_tf32.cuh"
#include "tools/cuda-lab/sm90a/gmma_split.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace hkt::cuda {
namespace {

// Shared memory of the key side, in floats (see above).
struct WgBwdKvTiles {
  float *Kh, *Kl, *Vh, *Vl;           // the key tile's K and V as they are
  float *Qh, *Ql, *dOh, *dOl;         // the query tile's Q and dO as they are (the plain region)
  float *QTh, *QTl, *dOTh, *dOTl;     // and transposed (the transposed region)
  float *lse, *Dr;                    // per query
  float *Cg, *Acc;                    // L > 1: the grids, the coarse dK_l accumulators
  float *Qlev, *Klev;                 // L > 1, over the transposed region: both tiles' coarse rows
  float *dSs, *dSg, *stage;           // L > 1, over the plain region: dS [query][key], block sums, level rows
  static size_t elems(const Layout& lay, int dhp) {
    const size_t tile = static_cast<size_t>(kWgBT * dhp);
    size_t n = 12 * tile + 2 * Layout::up8(kWgBT);
    if (lay.L > 1) n += static_cast<size_t>(lay.grid_off(lay.L)) + all_levels(lay);
    // What lies over the query tiles fits there (every L up to kMaxLevels, dh <= 64).
    HKT_CHECK(2 * static_cast<size_t>(all_levels(lay)) <= 4 * tile &&
                  static_cast<size_t>(lay.scores() + MmaBwdTiles::dsg_off(lay, lay.L) + lay.level_rows()) <= 4 * tile,
              "attn_bwd_kv_wgmma: the levels' buffers do not fit over the query tiles (L = ", lay.L, ", dhp = ", dhp,
              ")");
    return n;
  }
  __host__ __device__ static int all_levels(const Layout& lay) { return Layout::up8(lay.acc_row(lay.L) * lay.ld); }
  __device__ WgBwdKvTiles(float* sm, const Layout& lay, int dhp) {
    const int tile = kWgBT * dhp;
    Carver<float> cv{sm};
    for (float** p : {&Kh, &Kl, &Vh, &Vl, &Qh, &Ql, &dOh, &dOl, &QTh, &QTl, &dOTh, &dOTl}) *p = cv.take(tile);
    lse = cv.take(Layout::up8(kWgBT));
    Dr = cv.take(Layout::up8(kWgBT));
    Cg = Acc = Qlev = Klev = dSs = dSg = stage = nullptr;
    if (lay.L > 1) {
      Cg = cv.take(lay.grid_off(lay.L));
      Acc = cv.take(all_levels(lay));
      Qlev = QTh;  // 2 all_levels <= 4 tiles (63 rows of dhp + 4 at most, each)
      Klev = QTh + all_levels(lay);
      dSs = Qh;  // scores + dsg_off + level_rows <= 4 tiles
      dSg = Qh + lay.scores();
      stage = dSg + MmaBwdTiles::dsg_off(lay, lay.L);
    }
  }
};

template <int DHP>
__global__ void __launch_bounds__(kMmaThreads, 1)
    attn_bwd_kv_wgmma(const Params P, const float* dO, const float* LSE, const float* D, const LevelPtrs<float> dK,
                      float* dV) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kWgBT, KS = DHP / 8, NT = BT / 8, ND = DHP / 8;
  const Layout lay = mma_layout<DHP>(BT, P.L);
  const WgBwdKvTiles s(reinterpret_cast<float*>(smem_raw), lay, DHP);
  const int tk = blockIdx.x, dh = int(P.dh), tid = int(threadIdx.x);
  const int64_t bh = blockIdx.y, b = bh / P.H;
  const auto [warp, g, t, r0] = frag_lane();  // this lane's keys: r0 and r0 + 8
  (void)g;
  float w[kMaxLevels];
  level_weights(P, bh % P.H, w);
  const int64_t j0 = int64_t(tk) * BT - P.off;
  const float* q0 = level_rows<float>(P, P.q, 0, bh);
  const float* dOb = dO + bh * P.T * P.dh;

  load_gmma_split<DHP, false, kMmaThreads>(tid, level_rows<float>(P, P.k, 0, bh), j0, P.T, dh, s.Kh, s.Kl);
  load_gmma_split<DHP, false, kMmaThreads>(tid, static_cast<const float*>(P.v) + bh * P.T * P.dh, j0, P.T, dh, s.Vh,
                                           s.Vl);
  if (P.L > 1) zero(s.Acc, lay.acc_row(P.L) * lay.ld);
  const uint64_t dKh = gmma_desc(s.Kh), dKl = gmma_desc(s.Kl), dVh = gmma_desc(s.Vh), dVl = gmma_desc(s.Vl);
  const uint64_t dQh = gmma_desc(s.Qh), dQl = gmma_desc(s.Ql), dOh = gmma_desc(s.dOh), dOl = gmma_desc(s.dOl);
  const uint64_t dQTh = gmma_desc(s.QTh), dQTl = gmma_desc(s.QTl), dOTh = gmma_desc(s.dOTh),
                 dOTl = gmma_desc(s.dOTl);
  // Element e of [n]: key r0 + 8 (e >> 1), column 8n + 2t + (e & 1).
  float dk[ND][4], dv[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.0f;

  for (int tq = P.causal ? tk : 0; tq < P.nt; ++tq) {
    const int64_t i0 = int64_t(tq) * BT - P.off;
    __syncthreads();  // the previous pair's readers are done (the first: K and V stored, Acc zeroed)
    load_gmma_split<DHP, false, kMmaThreads>(tid, q0, i0, P.T, dh, s.Qh, s.Ql);
    load_gmma_split<DHP, false, kMmaThreads>(tid, dOb, i0, P.T, dh, s.dOh, s.dOl);
    if (P.prefetch && tq + 1 < P.nt) {  // the next query tile's Q and dO, into L2 meanwhile
      prefetch_tile_l2(q0, i0 + BT, BT, P.T, dh);
      prefetch_tile_l2(dOb, i0 + BT, BT, P.T, dh);
    }
    load_lse_d(P, s.lse, s.Dr, bh, i0, LSE, D);
    if (P.L > 1) {
      stage_level_rows(P, lay, P.q, bh, tq, s.Qlev);
      stage_level_rows(P, lay, P.k, bh, tk, s.Klev);
    }
    fence_proxy_async();  // the stores above, before the products read them
    __syncthreads();
    if (P.L > 1) {
      level_grids_staged(P, lay, s.Qlev, s.Klev, s.Cg);
      __syncthreads();  // the grids are done; the coarse rows' region is free for Q^T, dO^T
      fold_levels(P, lay, w, s.Cg, 0, BT / 2, 8 * warp, 8);  // this warp's 16 keys' coarse terms
    }

    // S^T = K Q^T, dP^T = V dO^T (level 0, unweighted); element e of [j]:
    // key r0 + 8 (e >> 1), query 8j + 2t + (e & 1).
    float st[NT][4], dpt[NT][4];
    wgmma_fence();
    gmma_abt_3x<NT, KS, BT>(st, dKh, dKl, dQh, dQl);
    gmma_abt_3x<NT, KS, BT>(dpt, dVh, dVl, dOh, dOl);
    wgmma_commit();
    // Meanwhile Q and dO transposed (queries in key_slot order), for dK and dV.
    load_gmma_split<DHP, true, kMmaThreads>(tid, q0, i0, P.T, dh, s.QTh, s.QTl);
    load_gmma_split<DHP, true, kMmaThreads>(tid, dOb, i0, P.T, dh, s.dOTh, s.dOTl);
    fence_proxy_async();
    wgmma_wait<0>();
    wgmma_fence_operand(st);
    wgmma_fence_operand(dpt);
    __syncthreads();  // Q^T, dO^T stored; every warp's S^T, dP^T done (the plain region free for dS)

    pair_p_ds<true>(P, lay, w[0], s.Cg, s.lse, s.Dr, b, i0, j0, r0, t, 0, st, dpt);  // P^T, dS^T
    if (P.L > 1) store_ds<true>(s.dSs, lay.lds, r0, t, 0, dpt);

    // dV += P^T dO, then dK_0 / w_0 += dS^T Q_0 (Q^T, dO^T's query slots in key_slot order).
    GmmaAFrags<NT> pf, dsf;  // both in flight until the wait
    gmma_frag_b_3x<NT, ND, DHP>(dv, st, pf, dOTh, dOTl);
    gmma_frag_b_3x<NT, ND, DHP>(dk, dpt, dsf, dQTh, dQTl);
    wgmma_wait<0>();  // before the accumulators are read and the tiles are written again
    wgmma_fence_operand(dv);
    wgmma_fence_operand(dk);
    if (P.L > 1) level_grads<true>(P, lay, s.dSs, s.dSg, s.stage, s.Acc, bh, tq);
  }

  store_frag_rows<DHP>(P, nullptr, 1.0f, j0, dv, dV ? dV + bh * P.T * P.dh : nullptr);
  store_frag_rows<DHP>(P, nullptr, w[0], j0, dk, dK.on ? dK.p[0] + bh * P.T * P.dh : nullptr);
  if (dK.on && P.L > 1) {
    __syncthreads();
    store_coarse(P, lay, s.Acc, dK, w, bh, tk);
  }
}

// Shared memory of the query side, in floats: Q, dO (hi, lo) for the whole
// block; per key tile K, V as they are (the plain region) and K transposed;
// L > 1: the query tile's coarse rows (every level, staged once), the grids,
// the coarse dQ_l accumulators; the key tile's coarse rows over K^T before it
// is stored, dS, its block sums and level_grads' rows over K and V once their
// products are done.
struct WgBwdQTiles {
  float *Qh, *Ql, *dOh, *dOl;  // the query tile as it is
  float *Kh, *Kl, *Vh, *Vl;    // the key tile as it is (the plain region)
  float *KTh, *KTl;            // K transposed (keys in key_slot order)
  float *lse, *Dr;
  float *Qlev, *Cg, *Acc;      // L > 1
  float *Klev;                 // L > 1, over K^T
  float *dSs, *dSg, *stage;    // L > 1, over the plain region
  static size_t elems(const Layout& lay, int dhp) {
    const size_t tile = static_cast<size_t>(kWgBT * dhp);
    size_t n = 10 * tile + 2 * Layout::up8(kWgBT);
    if (lay.L > 1) n += 2 * static_cast<size_t>(WgBwdKvTiles::all_levels(lay)) + lay.grid_off(lay.L);
    HKT_CHECK(static_cast<size_t>(WgBwdKvTiles::all_levels(lay)) <= 2 * tile &&
                  static_cast<size_t>(lay.scores() + MmaBwdTiles::dsg_off(lay, lay.L) + lay.level_rows()) <= 4 * tile,
              "attn_bwd_q_wgmma: the levels' buffers do not fit over the key tiles (L = ", lay.L, ", dhp = ", dhp,
              ")");
    return n;
  }
  __device__ WgBwdQTiles(float* sm, const Layout& lay, int dhp) {
    const int tile = kWgBT * dhp;
    Carver<float> cv{sm};
    for (float** p : {&Qh, &Ql, &dOh, &dOl, &Kh, &Kl, &Vh, &Vl, &KTh, &KTl}) *p = cv.take(tile);
    lse = cv.take(Layout::up8(kWgBT));
    Dr = cv.take(Layout::up8(kWgBT));
    Qlev = Cg = Acc = Klev = dSs = dSg = stage = nullptr;
    if (lay.L > 1) {
      Qlev = cv.take(WgBwdKvTiles::all_levels(lay));
      Cg = cv.take(lay.grid_off(lay.L));
      Acc = cv.take(WgBwdKvTiles::all_levels(lay));
      Klev = KTh;
      dSs = Kh;
      dSg = Kh + lay.scores();
      stage = dSg + MmaBwdTiles::dsg_off(lay, lay.L);
    }
  }
};

template <int DHP>
__global__ void __launch_bounds__(kMmaThreads, 1)
    attn_bwd_q_wgmma(const Params P, const float* dO, const float* LSE, const float* D, const LevelPtrs<float> dQ,
                     double* dlam_part) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kWgBT, KS = DHP / 8, NT = BT / 8, ND = DHP / 8;
  const Layout lay = mma_layout<DHP>(BT, P.L);
  const WgBwdQTiles s(reinterpret_cast<float*>(smem_raw), lay, DHP);
  const int tq = blockIdx.x, dh = int(P.dh), tid = int(threadIdx.x);
  const int64_t bh = blockIdx.y, b = bh / P.H;
  const auto [warp, g, t, r0] = frag_lane();  // this lane's queries: r0 and r0 + 8
  (void)g;
  float w[kMaxLevels];
  level_weights(P, bh % P.H, w);
  const int64_t i0 = int64_t(tq) * BT - P.off;
  load_gmma_split<DHP, false, kMmaThreads>(tid, level_rows<float>(P, P.q, 0, bh), i0, P.T, dh, s.Qh, s.Ql);
  load_gmma_split<DHP, false, kMmaThreads>(tid, dO + bh * P.T * P.dh, i0, P.T, dh, s.dOh, s.dOl);
  load_lse_d(P, s.lse, s.Dr, bh, i0, LSE, D);
  if (P.L > 1) {
    stage_level_rows(P, lay, P.q, bh, tq, s.Qlev);
    zero(s.Acc, lay.acc_row(P.L) * lay.ld);
  }
  const uint64_t dQh = gmma_desc(s.Qh), dQl = gmma_desc(s.Ql), dOh = gmma_desc(s.dOh), dOl = gmma_desc(s.dOl);
  const uint64_t dKh = gmma_desc(s.Kh), dKl = gmma_desc(s.Kl), dVh = gmma_desc(s.Vh), dVl = gmma_desc(s.Vl);
  const uint64_t dKTh = gmma_desc(s.KTh), dKTl = gmma_desc(s.KTl);
  // Element e of [n]: query r0 + 8 (e >> 1), column 8n + 2t + (e & 1).
  float dq[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;

  const float* k0 = level_rows<float>(P, P.k, 0, bh);
  const float* vv = static_cast<const float*>(P.v) + bh * P.T * P.dh;
  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the previous pair's readers are done (the first: nothing)
    load_gmma_split<DHP, false, kMmaThreads>(tid, k0, j0, P.T, dh, s.Kh, s.Kl);
    load_gmma_split<DHP, false, kMmaThreads>(tid, vv, j0, P.T, dh, s.Vh, s.Vl);
    if (P.prefetch && tk < last) {  // the next key tile's K and V, into L2 meanwhile
      prefetch_tile_l2(k0, j0 + BT, BT, P.T, dh);
      prefetch_tile_l2(vv, j0 + BT, BT, P.T, dh);
    }
    if (P.L > 1) stage_level_rows(P, lay, P.k, bh, tk, s.Klev);
    fence_proxy_async();  // the stores above, before the products read them
    __syncthreads();
    if (P.L > 1) {
      level_grids_staged(P, lay, s.Qlev, s.Klev, s.Cg);
      __syncthreads();  // the grids are done; the key tile's coarse rows' region is free for K^T
      fold_levels(P, lay, w, s.Cg, 8 * warp, 8, 0, BT / 2);  // this warp's 16 queries' coarse terms
    }

    // S = Q K^T, dP = dO V^T (level 0, unweighted); element e of [j]: query
    // r0 + 8 (e >> 1), key 8j + 2t + (e & 1).
    float sc[NT][4], dp[NT][4];
    wgmma_fence();
    gmma_abt_3x<NT, KS, BT>(sc, dQh, dQl, dKh, dKl);
    gmma_abt_3x<NT, KS, BT>(dp, dOh, dOl, dVh, dVl);
    wgmma_commit();
    // Meanwhile K transposed (keys in key_slot order), for dQ.
    load_gmma_split<DHP, true, kMmaThreads>(tid, k0, j0, P.T, dh, s.KTh, s.KTl);
    fence_proxy_async();
    wgmma_wait<0>();
    wgmma_fence_operand(sc);
    wgmma_fence_operand(dp);
    __syncthreads();  // K^T stored; every warp's S, dP done (the plain region free for dS)

    pair_p_ds<false>(P, lay, w[0], s.Cg, s.lse, s.Dr, b, i0, j0, r0, t, 0, sc, dp);  // P, dS
    if (P.L > 1) store_ds<false>(s.dSs, lay.lds, r0, t, 0, dp);

    GmmaAFrags<NT> dsf;
    gmma_frag_b_3x<NT, ND, DHP>(dq, dp, dsf, dKTh, dKTl);  // dQ_0 / w_0 += dS K_0 (K^T's key slots in key_slot order)
    wgmma_wait<0>();  // before the accumulators are read and the tiles are written again
    wgmma_fence_operand(dq);
    if (P.L > 1) level_grads<false>(P, lay, s.dSs, s.dSg, s.stage, s.Acc, bh, tk);
  }

  // dQ_0 = w_0 dq from the fragments; dlambda_0 partial = scale sum Q_0 . dq
  // (Q_0 = its hi + lo, exactly: lo = Q_0 - hi truncated, within 2^-10 |lo|).
  double dl0 = 0;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int n = 0; n < ND; ++n)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int at = gmma_at(r0 + 8 * r, 8 * n + 2 * t + x, BT);
        dl0 += double(s.Qh[at] + s.Ql[at]) * double(dq[n][2 * r + x]);
      }
  store_frag_rows<DHP>(P, nullptr, w[0], i0, dq, dQ.on ? dQ.p[0] + bh * P.T * P.dh : nullptr);
  __syncthreads();  // every warp's level products are in Acc
  tile_dlambda(P, lay, dl0, s.Acc, nullptr, s.Qlev, bh, tq, dlam_part ? dlam_part + (bh * P.nt + tq) * P.L : nullptr);
  if (dQ.on && P.L > 1) store_coarse(P, lay, s.Acc, dQ, w, bh, tq);
}

template <int DHP>
size_t q_wgmma_bytes(const Params& P) {
  return WgBwdQTiles::elems(mma_layout<DHP>(kWgBT, P.L), DHP) * sizeof(float);
}

template <int DHP>
void launch_bwd_q_wgmma(const Params& P, const float* dout, const float* lse, const float* D,
                        const LevelPtrs<float>& dq, double* part) {
  const size_t bytes = q_wgmma_bytes<DHP>(P);
  allow_smem(attn_bwd_q_wgmma<DHP>, bytes);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, kMmaThreads, bytes, attn_bwd_q_wgmma<DHP>)(P, dout, lse, D, dq, part);
  CUDA_CHECK_LAUNCH();
}

template <int DHP>
size_t kv_wgmma_bytes(const Params& P) {
  return WgBwdKvTiles::elems(mma_layout<DHP>(kWgBT, P.L), DHP) * sizeof(float);
}

template <int DHP>
void launch_bwd_kv_wgmma(const Params& P, const float* dout, const float* lse, const float* D,
                         const LevelPtrs<float>& dk, float* dv) {
  const size_t bytes = kv_wgmma_bytes<DHP>(P);
  allow_smem(attn_bwd_kv_wgmma<DHP>, bytes);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, kMmaThreads, bytes, attn_bwd_kv_wgmma<DHP>)(P, dout, lse, D, dk, dv);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

bool attention_backward_wgmma(const AttnShape& s, const std::vector<const void*>& q,
                              const std::vector<const void*>& k, const void* v, const void* lambda,
                              const bool* valid, const float* dout, const float* lse, const float* D,
                              const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv, double* part) {
  if (s.dh > kMmaMaxDh || !mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv) || !wgmma_device()) return false;
  const Params P = make_params(s, q, k, v, lambda, valid, kWgBT);
  const bool narrow = s.dh <= 32;
  const size_t most = std::max(narrow ? kv_wgmma_bytes<32>(P) : kv_wgmma_bytes<64>(P),
                               narrow ? q_wgmma_bytes<32>(P) : q_wgmma_bytes<64>(P));
  if (most > static_cast<size_t>(max_smem_optin())) return false;
  const LevelPtrs<float> dk_dev = level_ptrs<float>(dk), dq_dev = level_ptrs<float>(dq);
  if (dk_dev.on || dv) {
    if (narrow)
      launch_bwd_kv_wgmma<32>(P, dout, lse, D, dk_dev, dv);
    else
      launch_bwd_kv_wgmma<64>(P, dout, lse, D, dk_dev, dv);
  }
  if (dq_dev.on || part) {
    if (narrow)
      launch_bwd_q_wgmma<32>(P, dout, lse, D, dq_dev, part);
    else
      launch_bwd_q_wgmma<64>(P, dout, lse, D, dq_dev, part);
  }
  return true;
}

}  // namespace hkt::cuda
