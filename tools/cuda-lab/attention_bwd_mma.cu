// The fused attention backward with the tile products in registers, float32,
// head dims up to 64: the function of attn_bwd_kv / attn_bwd_q (attention.cu),
// the same two kernels (so nothing needs atomics and the bits are
// reproducible), another division of the work.
//
// A block of 4 warps takes a 64-row tile; each warp owns 16 of its rows and
// keeps their tile products and gradient accumulators as PTX mma.sync
// fragments (mma_tf32.cuh: warp_abt, warp_fb, 3xTF32). Shared memory holds
// only the four 64-row tiles (Q, K, V, dO) and, for L > 1, the levels' buffers.
//   key side   (block per key tile, warp = 16 keys), per query tile:
//     S^T = K Q^T, dP^T = V dO^T, P^T, dS^T = P^T (dP^T - D) in registers;
//     dV += P^T dO, dK_0 += dS^T Q_0 (warp_fb); the levels as attn_bwd_kv.
//   query side (block per query tile, warp = 16 queries), per key tile:
//     S = Q K^T, dP = dO V^T, dS; dQ_0 += dS K_0; the levels as attn_bwd_q.
// The levels' block sums need dS across warps: it goes to shared memory only
// when L > 1. The dlambda partials come at the end from the identity
//   sum_ij dS_ij (Q_0 K_0^T)_ij = sum_i Q_0[i] . (dS K_0)[i]
// (and the same per level with the coarse accumulators), instead of a sum
// per score.
#include <cmath>
#include <cstdint>

#include "tools/cuda-lab/attention_bwd_mma.cuh"
#include "kernels/cuda/mma_tf32.cuh"

namespace hkt::cuda {
namespace {

template <int DHP>
__global__ void __launch_bounds__(kMmaThreads, 1)
    attn_bwd_kv_mma(const Params P, const float* dO, const float* LSE, const float* D, const LevelPtrs<float> dK,
                    float* dV) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kMmaTile, ND = DHP / 8;
  const Layout lay = mma_layout<DHP>(BT, P.L);
  const MmaBwdTiles s(reinterpret_cast<float*>(smem_raw), lay, DHP, false, true);  // Q, dO loaded split
  const int tk = blockIdx.x;
  const int64_t bh = blockIdx.y;
  float w[kMaxLevels];
  level_weights(P, bh % P.H, w);
  const int64_t j0 = int64_t(tk) * BT - P.off;
  float dk[ND][4], dv[ND][4];  // this warp's 16 keys (key_side_pair)
  stage_key_tile<DHP>(P, s, lay, bh, tk, j0, dk, dv);
  for (int tq = P.causal ? tk : 0; tq < P.nt; ++tq) {
    key_side_pair<DHP, false, 1>(P, s, lay, w, bh, tq, tk, j0, dO, LSE, D, dk, dv, P.L > 1);
    if (P.L > 1) level_grads<true>(P, lay, s.dSs, s.dSg, s.Ql, s.Acc, bh, tq);
  }
  store_frag_rows<DHP>(P, nullptr, 1.0f, j0, dv, dV ? dV + bh * P.T * P.dh : nullptr);
  store_frag_rows<DHP>(P, s.Ks, w[0], j0, dk, dK.on ? dK.p[0] + bh * P.T * P.dh : nullptr);
  if (dK.on && P.L > 1) {
    __syncthreads();
    store_coarse(P, lay, s.Acc, dK, w, bh, tk);
  }
}

template <int DHP>
__global__ void __launch_bounds__(kMmaThreads, 1)
    attn_bwd_q_mma(const Params P, const float* dO, const float* LSE, const float* D, const LevelPtrs<float> dQ,
                   double* dlam_part) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kMmaTile, ld = mma_ld(DHP), NT = BT / 8, ND = DHP / 8;
  const Layout lay = mma_layout<DHP>(BT, P.L);
  const MmaBwdTiles s(reinterpret_cast<float*>(smem_raw), lay, DHP, false, false, true);  // K, V loaded split
  const SplitLane<DHP> sl(threadIdx.x & 31);  // this lane's reads of them
  const int tq = blockIdx.x, dh = int(P.dh);
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const auto [warp, g, t, r0] = frag_lane();  // this lane's queries: r0 and r0 + 8
  float w[kMaxLevels];
  level_weights(P, h, w);
  const int64_t i0 = int64_t(tq) * BT - P.off;
  const RowCopy<float> qo[2] = {{s.Qs, level_rows<float>(P, P.q, 0, bh), i0}, {s.dOs, dO + bh * P.T * P.dh, i0}};
  load_rows_aligned(qo, ld, BT, P.T, dh, DHP);
  load_lse_d(P, s.lse, s.Dr, bh, i0, LSE, D);
  if (P.L > 1) zero(s.Acc, lay.acc_row(P.L) * lay.ld);
  float dq[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;

  const float* k0 = level_rows<float>(P, P.k, 0, bh);
  const float* vv = static_cast<const float*>(P.v) + bh * P.T * P.dh;
  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the previous key tile's readers are done
    const RowCopy<float> kv[2] = {{s.Ks, k0, j0, s.Klo, TileLayout::split}, {s.Vs, vv, j0, s.Vlo, TileLayout::split}};
    load_tile_pair<DHP, BT, kMmaThreads>(kv, ld, P.T, dh);
    if (P.prefetch && tk < last) {  // the next key tile's K and V, into L2 meanwhile
      prefetch_tile_l2(k0, j0 + BT, BT, P.T, dh);
      prefetch_tile_l2(vv, j0 + BT, BT, P.T, dh);
    }
    level_grids<float, true>(P, bh, tq, tk, lay, s.Ql, s.Kl, s.Cg);  // ends with a barrier
    if (P.L > 1) fold_levels(P, lay, w, s.Cg, 8 * warp, 8, 0, BT / 2);  // this warp's 16 queries' coarse terms
    // Element e of sc[j]: query r0 + 8 (e >> 1), key 8j + 2t + (e & 1).
    float sc[NT][4], dp[NT][4];
    warp_abt_split<DHP, NT>(sc, s.Qs + warp * 16 * ld, ld, s.Ks, s.Klo, sl);   // S = Q K^T (level 0, unweighted)
    warp_abt_split<DHP, NT>(dp, s.dOs + warp * 16 * ld, ld, s.Vs, s.Vlo, sl);  // dP = dO V^T
    pair_p_ds<false>(P, lay, w[0], s.Cg, s.lse, s.Dr, b, i0, j0, r0, t, 0, sc, dp);  // P, dS
    warp_fb_split<DHP, NT>(dq, dp, s.Ks, s.Klo, sl);  // dQ_0 / w_0 += dS K_0
    if (P.L > 1) {
      store_ds<false>(s.dSs, lay.lds, r0, t, 0, dp);
      level_grads<false>(P, lay, s.dSs, s.dSg, s.Kl, s.Acc, bh, tk);
    }
  }

  // dQ_0 = w_0 dq from the fragments; dlambda_0 partial = scale sum Q_0 . dq.
  const double dl0 = store_frag_rows<DHP>(P, s.Qs, w[0], i0, dq, dQ.on ? dQ.p[0] + bh * P.T * P.dh : nullptr);
  __syncthreads();  // every warp's level products are in Acc; Ql is free
  tile_dlambda(P, lay, dl0, s.Acc, P.q, s.Ql, bh, tq, dlam_part ? dlam_part + (bh * P.nt + tq) * P.L : nullptr);
  if (dQ.on && P.L > 1) store_coarse(P, lay, s.Acc, dQ, w, bh, tq);
}

template <int DHP>
void launch_bwd_mma(const Params& P, const float* dout, const float* lse, const float* D, const LevelPtrs<float>& dk,
                    float* dv, const LevelPtrs<float>& dq, double* part) {
  const Layout lay = mma_layout<DHP>(kMmaTile, P.L);
  // Each side loads its B operands split (the key side Q and dO, the query
  // side K and V: two more tiles, 104 KB for MHA at dh = 64, still two blocks
  // per SM), so that its 4 warps do not each split them again.
  const size_t kv_bytes = MmaBwdTiles::elems(lay, DHP, false, true) * sizeof(float);
  const size_t bytes = MmaBwdTiles::elems(lay, DHP, false, false, true) * sizeof(float);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  if (dk.on || dv) {
    allow_smem(attn_bwd_kv_mma<DHP>, kv_bytes);
    HKT_LAUNCH(grid, kMmaThreads, kv_bytes, attn_bwd_kv_mma<DHP>)(P, dout, lse, D, dk, dv);
    CUDA_CHECK_LAUNCH();
  }
  if (dq.on || part) {
    allow_smem(attn_bwd_q_mma<DHP>, bytes);
    HKT_LAUNCH(grid, kMmaThreads, bytes, attn_bwd_q_mma<DHP>)(P, dout, lse, D, dq, part);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void attention_backward_mma(const AttnShape& s, const std::vector<const void*>& q,
                            const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                            const float* dout, const float* lse, const float* D, const std::vector<void*>& dq,
                            const std::vector<void*>& dk, float* dv, double* part) {
  HKT_CHECK(s.dh <= kMmaMaxDh, "attention_backward_mma: head dim ", s.dh, " above ", kMmaMaxDh);
  HKT_CHECK(mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv), "attention_backward_mma: head dim ", s.dh,
            " not a multiple of 4 or a tensor not 16-byte aligned (mma_rows_aligned)");
  const Params P = make_params(s, q, k, v, lambda, valid, kMmaTile);
  const LevelPtrs<float> dq_dev = level_ptrs<float>(dq), dk_dev = level_ptrs<float>(dk);
  if (s.dh <= 32)
    launch_bwd_mma<32>(P, dout, lse, D, dk_dev, dv, dq_dev, part);
  else
    launch_bwd_mma<64>(P, dout, lse, D, dk_dev, dv, dq_dev, part);
}

}  // namespace hkt::cuda
