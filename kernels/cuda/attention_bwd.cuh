// The fused attention's backward kernels (attention.cu's two-kernel backward:
// key side, query side), as templates: NF = 0 keeps the level-0 accumulators
// in shared memory (the library's default, the only one attention.cu
// instantiates); NF > 0 keeps them in WMMA register fragments, NF per warp,
// float only (tools/cuda-lab's bwd 1, HKT_CUDA_ATTN_BWD_ACC=regs, which
// instantiates them).
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/tile_mm.cuh"

namespace hkt::cuda {
namespace {

// Shared state of one backward block. A0, A1: the side's two accumulators in
// shared memory (key side: dK_0, dV; query side: dQ_0 and unused), null when
// they are kept in registers (!lay.smem_acc).
template <class T>
struct BwdTiles {
  T *Q0, *K0, *Vs, *dO, *A0, *A1, *Ss, *dSs, *Ql, *Kl, *Cg, *dSg, *Acc, *lse, *Dq;
  __device__ BwdTiles(T* sm, const Layout& lay) {
    Carver<T> cv{sm};
    Q0 = cv.take(lay.rows());
    K0 = cv.take(lay.rows());
    Vs = cv.take(lay.rows());
    dO = cv.take(lay.rows());
    A0 = lay.smem_acc ? cv.take(lay.rows()) : nullptr;
    A1 = lay.smem_acc ? cv.take(lay.rows()) : nullptr;
    Ss = cv.take(lay.scores());
    dSs = cv.take(lay.scores());
    Ql = cv.take(lay.level_rows());
    Kl = cv.take(lay.level_rows());
    Cg = cv.take(lay.grid_off(lay.L));
    dSg = cv.take(lay.grid_off(lay.L));
    Acc = cv.take(Layout::up8(lay.acc_row(lay.L) * lay.ld));  // coarse accumulators (dK_l or dQ_l)
    lse = cv.take(Layout::up8(lay.BT));
    Dq = cv.take(Layout::up8(lay.BT));
  }
};

// Loads query tile tq's Q_0, dO, LSE, D (zeros / +inf on virtual rows).
template <class T>
__device__ void load_query_side(const Params& P, const BwdTiles<T>& t, const Layout& lay, int64_t bh, int tq,
                                const T* dO, const T* LSE, const T* D) {
  const int BT = lay.BT;
  const int64_t i0 = int64_t(tq) * BT - P.off;
  const RowCopy<T> c[2] = {{t.Q0, level_rows<T>(P, P.q, 0, bh), i0}, {t.dO, dO + bh * P.T * P.dh, i0}};
  load_rows(c, lay.ld, BT, P.T, int(P.dh), lay.dhp);
  for (int p = threadIdx.x; p < BT; p += blockDim.x) {
    const int64_t i = i0 + p;
    const bool in = i >= 0 && i < P.T;
    t.lse[p] = in ? LSE[bh * P.T + i] : std::numeric_limits<T>::infinity();
    t.Dq[p] = in ? D[bh * P.T + i] : T(0);
  }
}

// Tile pair (tq, tk) with Q_0, K_0, V, dO, lse, D loaded: level grids, then
// P into Ss and dS into dSs; adds dS * C_0 into dl0. Ends with a barrier.
template <class T, int BT>
__device__ void recompute(const Params& P, const BwdTiles<T>& t, const Layout& lay, int64_t b, int64_t bh, int tq,
                          int tk, const T* w, double& dl0) {
  const int lds = lay.lds;
  level_grids<T>(P, bh, tq, tk, lay, t.Ql, t.Kl, t.Cg);
  tile_mm<true, false>(t.Ss, lds, t.Q0, lay.ld, t.K0, lay.ld, BT, BT, lay.dhp, false);   // Q_0 K_0^T
  tile_mm<true, false>(t.dSs, lds, t.dO, lay.ld, t.Vs, lay.ld, BT, BT, lay.dhp, false);  // dO V^T
  __syncthreads();
  const int p = threadIdx.x >> 2, r4 = threadIdx.x & 3;
  const int64_t i = int64_t(tq) * BT - P.off + p, j0 = int64_t(tk) * BT - P.off;
  with_mask_test(!pair_unmasked(P, int64_t(tq) * BT - P.off, j0, BT), [&](auto masked) {
#pragma unroll 4
    for (int m = 0; m < BT / 4; ++m) {
      const int p2 = r4 + 4 * m, e = p * lds + p2;
      T pv = 0, ds = 0;
      if (!(decltype(masked)::value && key_masked(P, b, i, j0 + p2))) {
        const T c0 = t.Ss[e];
        pv = exp(combine(P, lay, w, t.Cg, p, p2, c0) - t.lse[p]);  // 0 when lse = +inf
        ds = pv * (t.dSs[e] - t.Dq[p]);
        dl0 += static_cast<double>(ds) * static_cast<double>(c0);
      }
      t.Ss[e] = pv;
      t.dSs[e] = ds;
    }
  });
  __syncthreads();
}

// Key side: block per (key tile, b * h). NF > 0: dK_0 and dV accumulate in
// registers, NF fragments per warp (float only); NF = 0: in shared memory.
template <class T, int BT, int NF>
__global__ void __launch_bounds__(4 * BT, 1)
    attn_bwd_kv(const Params P, const T* dO, const T* LSE, const T* D, const LevelPtrs<T> dK, T* dV) {
  static_assert(NF == 0 || std::is_same_v<T, float>, "register accumulators are float (tensor cores)");
  HKT_DYNAMIC_SHARED(smem_raw);
  const Layout lay(BT, int(P.dh), P.L, NF == 0);
  const int ld = lay.ld, lds = lay.lds, dh = int(P.dh), dhp = lay.dhp;
  const BwdTiles<T> t(reinterpret_cast<T*>(smem_raw), lay);
  const int tk = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  T w[kMaxLevels];
  level_weights(P, h, w);
  const int64_t j0 = int64_t(tk) * BT - P.off;
  const RowCopy<T> kv[2] = {{t.K0, level_rows<T>(P, P.k, 0, bh), j0}, {t.Vs, static_cast<const T*>(P.v) + bh * P.T * P.dh, j0}};
  load_rows(kv, ld, BT, P.T, dh, dhp);
  wmma_tf32::AccFrags<NF> accK, accV;  // dK_0 / w_0, dV
  if constexpr (NF > 0) {
    accK.zero();
    accV.zero();
  } else {
    zero(t.A0, BT * ld);  // dK_0 / w_0
    zero(t.A1, BT * ld);  // dV
  }
  zero(t.Acc, lay.acc_row(P.L) * ld);
  double unused = 0;
  for (int tq = P.causal ? tk : 0; tq < P.nt; ++tq) {
    __syncthreads();
    load_query_side<T>(P, t, lay, bh, tq, dO, LSE, D);
    recompute<T, BT>(P, t, lay, b, bh, tq, tk, w, unused);
    if constexpr (NF > 0) {
      wmma_tf32::mm_acc<false, true>(accV, t.Ss, lds, t.dO, ld, BT, dhp, BT);   // dV += P^T dO
      wmma_tf32::mm_acc<false, true>(accK, t.dSs, lds, t.Q0, ld, BT, dhp, BT);  // dK_0 += dS^T Q_0
    } else {
      tile_mm<false, true>(t.A1, ld, t.Ss, lds, t.dO, ld, BT, dhp, BT, true);   // dV += P^T dO
      tile_mm<false, true>(t.A0, ld, t.dSs, lds, t.Q0, ld, BT, dhp, BT, true);  // dK_0 += dS^T Q_0
    }
    for (int l = 1; l < P.L; ++l) {
      const int G = BT >> l;
      __syncthreads();  // Ql free
      block_sums<T>(t.dSs, t.dSg + lay.grid_off(l), G, lay, l);
      load_rows(t.Ql, ld, level_rows<T>(P, P.q, l, bh), coarse_first(P, tq, l, BT), G, level_len(P.T, l), dh, dhp);
      __syncthreads();
      tile_mm<false, true>(t.Acc + lay.acc_row(l) * ld, ld, t.dSg + lay.grid_off(l), G, t.Ql, ld, G, dhp, G,
                           true);  // dK_l += dSg_l^T Q_l
    }
  }
  __syncthreads();
  T* dKs = t.A0;  // the accumulators in shared memory
  T* dVs = t.A1;
  if constexpr (NF > 0) {  // Q0 and dO are free now
    dKs = t.Q0;
    dVs = t.dO;
    wmma_tf32::store_acc(dKs, ld, accK, BT, dhp);
    wmma_tf32::store_acc(dVs, ld, accV, BT, dhp);
    __syncthreads();
  }
  for (int e = threadIdx.x; e < BT * dh; e += blockDim.x) {
    const int r = e / dh, d = e - r * dh;
    const int64_t j = j0 + r;
    if (j < 0 || j >= P.T) continue;
    if (dV) dV[(bh * P.T + j) * P.dh + d] = dVs[r * ld + d];
    if (dK.on) dK.p[0][(bh * P.T + j) * P.dh + d] = w[0] * dKs[r * ld + d];
  }
  if (dK.on) store_coarse(P, lay, t.Acc, dK, w, bh, tk);
}

// Query side: block per (query tile, b * h). dlam_part[(bh * nt + tq) * L + l].
// NF as for the key side (dQ_0).
template <class T, int BT, int NF>
__global__ void __launch_bounds__(4 * BT, 1)
    attn_bwd_q(const Params P, const T* dO, const T* LSE, const T* D, const LevelPtrs<T> dQ, double* dlam_part) {
  static_assert(NF == 0 || std::is_same_v<T, float>, "register accumulators are float (tensor cores)");
  HKT_DYNAMIC_SHARED(smem_raw);
  const Layout lay(BT, int(P.dh), P.L, NF == 0);
  const int ld = lay.ld, lds = lay.lds, dh = int(P.dh), dhp = lay.dhp;
  const BwdTiles<T> t(reinterpret_cast<T*>(smem_raw), lay);
  const int tq = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  T w[kMaxLevels];
  level_weights(P, h, w);
  load_query_side<T>(P, t, lay, bh, tq, dO, LSE, D);
  wmma_tf32::AccFrags<NF> accQ;  // dQ_0 / w_0
  if constexpr (NF > 0)
    accQ.zero();
  else
    zero(t.A0, BT * ld);
  zero(t.Acc, lay.acc_row(P.L) * ld);
  double dl[kMaxLevels];
  for (int l = 0; l < kMaxLevels; ++l) dl[l] = 0;
  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();
    const RowCopy<T> kv[2] = {{t.K0, level_rows<T>(P, P.k, 0, bh), j0},
                              {t.Vs, static_cast<const T*>(P.v) + bh * P.T * P.dh, j0}};
    load_rows(kv, ld, BT, P.T, dh, dhp);
    recompute<T, BT>(P, t, lay, b, bh, tq, tk, w, dl[0]);
    if constexpr (NF > 0)
      wmma_tf32::mm_acc<true, true>(accQ, t.dSs, lds, t.K0, ld, BT, dhp, BT);  // dQ_0 += dS K_0
    else
      tile_mm<true, true>(t.A0, ld, t.dSs, lds, t.K0, ld, BT, dhp, BT, true);
#pragma unroll
    for (int l = 1; l < kMaxLevels; ++l) {  // unrolled: dl[] stays in registers
      if (l >= P.L) break;
      const int G = BT >> l;
      __syncthreads();  // Kl, dSg free
      block_sums<T>(t.dSs, t.dSg + lay.grid_off(l), G, lay, l);
      load_rows(t.Kl, ld, level_rows<T>(P, P.k, l, bh), coarse_first(P, tk, l, BT), G, level_len(P.T, l), dh, dhp);
      __syncthreads();
      const T* dsg = t.dSg + lay.grid_off(l);
      const T* cg = t.Cg + lay.grid_off(l);
      for (int e = threadIdx.x; e < G * G; e += blockDim.x)
        dl[l] += static_cast<double>(dsg[e]) * static_cast<double>(cg[e]);
      tile_mm<true, true>(t.Acc + lay.acc_row(l) * ld, ld, dsg, G, t.Kl, ld, G, dhp, G, true);  // dQ_l += dSg_l K_l
    }
  }
  __syncthreads();
  if (dlam_part) {
#pragma unroll
    for (int l = 0; l < kMaxLevels; ++l) {
      if (l >= P.L) break;
      const double s = block_reduce(dl[l], 0.0, SumOp{});
      if (threadIdx.x == 0) dlam_part[(bh * P.nt + tq) * P.L + l] = s * P.scale;
    }
  }
  if (!dQ.on) return;
  T* dQs = t.A0;
  if constexpr (NF > 0) {  // Q0 is free now (the barrier above ends its last use)
    dQs = t.Q0;
    wmma_tf32::store_acc(dQs, ld, accQ, BT, dhp);
    __syncthreads();
  }
  const int64_t i0 = int64_t(tq) * BT - P.off;
  for (int e = threadIdx.x; e < BT * dh; e += blockDim.x) {
    const int r = e / dh, d = e - r * dh;
    const int64_t i = i0 + r;
    if (i >= 0 && i < P.T) dQ.p[0][(bh * P.T + i) * P.dh + d] = w[0] * dQs[r * ld + d];
  }
  store_coarse(P, lay, t.Acc, dQ, w, bh, tq);
}


template <class T, int BT, int NF>
void launch_bwd_nf(const Params& P, size_t bytes, const T* dout, const T* lse, const T* D, const LevelPtrs<T>& dk,
                   T* dv, const LevelPtrs<T>& dq, double* part) {
  const int tiles = (BT / 16) * Layout(BT, int(P.dh), P.L).dhp / 16, warps = 4 * BT / 32;
  HKT_CHECK(NF == 0 || tiles <= NF * warps, "hkt_attention: ", tiles, " accumulator tiles for ", warps,
            " warps of ", NF, " fragments (dh = ", P.dh, ")");
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  if (dk.on || dv) {
    allow_smem(attn_bwd_kv<T, BT, NF>, bytes);
    HKT_LAUNCH(grid, 4 * BT, bytes, attn_bwd_kv<T, BT, NF>)(P, dout, lse, D, dk, dv);
    CUDA_CHECK_LAUNCH();
  }
  if (dq.on || part) {
    allow_smem(attn_bwd_q<T, BT, NF>, bytes);
    HKT_LAUNCH(grid, 4 * BT, bytes, attn_bwd_q<T, BT, NF>)(P, dout, lse, D, dq, part);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace
}  // namespace hkt::cuda
