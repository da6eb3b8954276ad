// The single-pass fused attention backward (FlashAttention-2's order), float32,
// head dims up to 64: HKT_CUDA_ATTN_BWD=fused. The function of the two-kernel
// backwards (attn_bwd_kv / attn_bwd_q in attention.cu, attention_bwd_mma.cu)
// with 5 tile products per tile pair instead of their 7 (they both recompute
// S = Q K^T and dP = dO V^T), and still no atomics: the bits are reproducible.
//
// A block of 4 warps (16 keys each, fragments as in attention_bwd_mma.cu)
// walks the key tiles tk = g, g + G, g + 2G, ... of one (b, h), g its group
// (blockIdx.x) of G; per key tile it keeps dK_0, dV in fragments and the
// coarse dK_l in shared memory, and per query tile
//   S^T = K Q^T, dP^T = V dO^T, P^T, dS^T (registers);
//   dV += P^T dO, dK_0 += dS^T Q_0 (fragments); dS^T to shared memory as dS;
//   dQ_0 += dS K_0 (warp = 16 queries), added into the group's own partial
//   dQ (global memory, G partials per dQ);
//   the levels: their coarse rows staged once per tile for all levels (key
//   tile: stage_key_tile; query tile: stage_levels), dSg_l = block sums of
//   dS, dK_l += dSg_l^T Q_l, and the group's partial dQ_l += dSg_l K_l, each
//   step for all levels at once (one barrier per step, not per level).
// HKT_CUDA_ATTN_BWD=fused8 runs blocks of 8 warps (QS = 2): warps w and w + 4
// share 16 keys and take one half of each query tile each (half the score
// fragments per warp), their dK_0, dV shares summed through shared memory once
// per key tile; in the dQ product each takes half of the columns. And it loads
// Q and dO as split tiles (pair_tile.cuh: TF32 hi and lo, swizzled; dS goes
// over them once every warp is done with them), so that no warp splits them
// again. 8 warps per SM where shared memory allows one block (L > 1) and where
// registers allow one (MHA: about 200 per thread, tools/cuda-resources).
// A second kernel sums the G partials in group order and scales them by w_l.
// Each block is the only writer of its group's partials and adds into them in
// a fixed order, so the sums do not depend on scheduling. The dlambda partials
// come per key tile from sum_ij dS_ij (Q K^T)_ij = sum_j K[j] . (dS^T Q)[j]
// (and per level with the coarse accumulators).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "tools/cuda-lab/attention_bwd_mma.cuh"
#include "kernels/cuda/mma_tf32.cuh"

namespace hkt::cuda {
namespace {

// Elements of level l's dQ (one partial).
__host__ __device__ inline int64_t level_elems(const Params& P, int l) { return P.B * P.H * level_len(P.T, l) * P.dh; }

// The levels' products for the tile pair (tq, tk) whose block sums dSg_l the
// caller wrote and whose coarse rows stage_levels staged: for every level at
// once, Acc_l (dK_l / w_l of tile tk) += dSg_l^T Q_l[tile tq]; when dQ is
// wanted, the group's partial dQ_l[tile tq] += dSg_l K_l[tile tk] (through
// AccQ, free since key_side_pair's first barrier). Starts with a barrier.
template <int DHP>
__device__ void level_grads_fused(const Params& P, const MmaBwdTiles& s, const Layout& lay, int64_t bh, int tq,
                                  const LevelPtrs<float>& dQpart) {
  const int dh = int(P.dh);
  __syncthreads();  // dSg complete
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l, r = lay.acc_row(l) * lay.ld;
    const float* dsg = s.dSg + MmaBwdTiles::dsg_off(lay, l);
    const int ldg = MmaBwdTiles::dsg_ld(lay, l);
    tile_mma<false, true>(s.Acc + r, lay.ld, dsg, ldg, s.Ql + r, lay.ld, G, lay.dhp, G, true);
    if (dQpart.on) tile_mma<true, true>(s.AccQ + r, lay.ld, dsg, ldg, s.Kl + r, lay.ld, G, lay.dhp, G, false);
  }
  if (!dQpart.on) return;
  __syncthreads();
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l;
    const int64_t n = level_len(P.T, l), first = coarse_first(P, tq, l, lay.BT);
    float* part = dQpart.p[l] + blockIdx.x * level_elems(P, l) + bh * n * P.dh;
    const float* accq = s.AccQ + lay.acc_row(l) * lay.ld;
    for (int e = threadIdx.x; e < G * DHP; e += blockDim.x) {  // DHP: a shift, not a division
      const int a = e / DHP, d = e - a * DHP;
      const int64_t row = first + a;
      if (d < dh && row >= 0 && row < n) part[row * P.dh + d] += accq[a * lay.ld + d];
    }
  }
}

// QS = 2: the halves' shares of dK_0 and dV (warps w + 4) added into warps
// w's fragments, through s.Qs and s.dOs (each lane its own slots; free after
// the barrier this starts with). Fixed order: the bits do not depend on timing.
template <int DHP>
__device__ __forceinline__ void sum_query_halves(const MmaBwdTiles& s, float (&dk)[DHP / 8][4],
                                                 float (&dv)[DHP / 8][4]) {
  constexpr int ND = DHP / 8;
  static_assert(4 * ND * 4 * 32 <= MmaBwdTiles::split(DHP), "the halves' slots fit in a split tile");  // QS = 2
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();  // every warp is done with Qs and dOs
  if (warp >= 4) {
#pragma unroll
    for (int n = 0; n < ND; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = (((warp & 3) * ND + n) * 4 + e) * 32 + lane;
        s.Qs[i] = dk[n][e];
        s.dOs[i] = dv[n][e];
      }
  }
  __syncthreads();
  if (warp < 4) {
#pragma unroll
    for (int n = 0; n < ND; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = ((warp * ND + n) * 4 + e) * 32 + lane;
        dk[n][e] += s.Qs[i];
        dv[n][e] += s.dOs[i];
      }
  }
}

// Async (fused8-async, QS = 2): each tile pair's Q and dO arrive by cp.async,
// started a tile pair earlier into two more staging tiles (key_side_pair).
template <int DHP, int QS, bool Async = false>
__global__ void __launch_bounds__(kMmaThreads* QS, 1)
    attn_bwd_fused_mma(const Params P, const float* dO, const float* LSE, const float* D, const LevelPtrs<float> dK,
                       float* dV, const LevelPtrs<float> dQpart, int groups, double* dlam_part) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kMmaTile, ld = mma_ld(DHP), ND = DHP / 8, NQ = ND / QS;
  const Layout lay = mma_layout<DHP>(BT, P.L);
  static_assert(!Async || QS == 2, "the staged copies are for split Q and dO (QS = 2)");
  // QS = 2: Q, dO loaded split; Async: staged as loaded, too.
  const MmaBwdTiles s(reinterpret_cast<float*>(smem_raw), lay, DHP, true, QS == 2, false, Async);
  const int64_t bh = blockIdx.y;
  const int warp = threadIdx.x >> 5;
  // In the dQ product: queries 16 (warp % 4) .. + 15, columns col0 .. + DHP / QS - 1.
  const int col0 = (warp >> 2) * (DHP / QS);
  const bool owner = warp < 4;  // QS = 2: warps 0..3 hold the summed dK_0, dV
  float w[kMaxLevels];
  level_weights(P, bh % P.H, w);
  float* dq0 = dQpart.on ? dQpart.p[0] + blockIdx.x * level_elems(P, 0) + bh * P.T * P.dh : nullptr;

  for (int tk = blockIdx.x; tk < P.nt; tk += groups) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the previous key tile's readers are done
    float dk[ND][4], dv[ND][4];  // this warp's 16 keys (key_side_pair)
    stage_key_tile<DHP, true, QS>(P, s, lay, bh, tk, j0, dk, dv);
    if constexpr (Async) fetch_query_tile<DHP>(P, s, bh, P.causal ? tk : 0, dO);  // the first pair's Q and dO

    for (int tq = P.causal ? tk : 0; tq < P.nt; ++tq) {
      const int64_t i0 = int64_t(tq) * BT - P.off;
      // The partial dQ rows this pair adds to at its end, into L2 while its products run.
      if (dq0 && P.prefetch) prefetch_tile_l2(dq0, i0, BT, P.T, int(P.dh));
      key_side_pair<DHP, true, QS, QS == 2, Async>(P, s, lay, w, bh, tq, tk, j0, dO, LSE, D, dk, dv,
                                                   dq0 || P.L > 1);
      if (!dq0 && P.L == 1) continue;
      __syncthreads();  // dS complete
      // The levels' block sums and the dQ_0 product both only read dS (and K_0): no barrier between.
      for (int l = 1; l < P.L; ++l)
        block_sums<float>(s.dSs, s.dSg + MmaBwdTiles::dsg_off(lay, l), MmaBwdTiles::dsg_ld(lay, l), lay, l);
      if (dq0) {
        // dQ_0 / w_0 of queries r0, r0 + 8 (this warp's 16 rows of dS) += dS K_0, into the partial.
        float dq[NQ][4];
#pragma unroll
        for (int n = 0; n < NQ; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
        warp_ab<DHP / QS, BT>(dq, s.dSs + (warp & 3) * 16 * lay.lds, lay.lds, s.Ks + col0, ld);
        store_frag_rows<DHP, true, NQ>(P, nullptr, 1.0f, i0, dq, dq0, col0);
      }
      if (P.L > 1) level_grads_fused<DHP>(P, s, lay, bh, tq, dQpart);
    }

    if constexpr (QS == 2) sum_query_halves<DHP>(s, dk, dv);
    store_frag_rows<DHP>(P, nullptr, 1.0f, j0, dv, owner && dV ? dV + bh * P.T * P.dh : nullptr);
    const double dl0 = store_frag_rows<DHP>(P, owner ? s.Ks : nullptr, w[0], j0, dk,
                                            owner && dK.on ? dK.p[0] + bh * P.T * P.dh : nullptr);
    __syncthreads();  // every warp's level products are in Acc
    // The key tile's coarse rows are still staged in Kl (stage_key_tile).
    tile_dlambda(P, lay, dl0, s.Acc, nullptr, s.Kl, bh, tk, dlam_part ? dlam_part + (bh * P.nt + tk) * P.L : nullptr);
    if (dK.on && P.L > 1) store_coarse(P, lay, s.Acc, dK, w, bh, tk);
  }
}

// dQ_l = w_l * (sum of the groups' partials, in group order), every element of level l.
__global__ void attn_dq_sum(const Params P, const float* part, int groups, int l, float* dq) {
  const int64_t n = level_elems(P, l), per_head = level_len(P.T, l) * P.dh;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int g = 0; g < groups; ++g) sum += part[g * n + e];
    dq[e] = weight<float>(P, (e / per_head) % P.H, l) * sum;
  }
}

// Key-tile groups per (b, h): as many blocks as fit on the GPU at once
// (`per_sm` per SM, from the occupancy calculator: 2 for MHA at dh = 64, 1
// with L > 1, whose shared memory takes more than half of the 227 KiB), rounded
// down so that no second, mostly idle wave follows (G = 3 for B H = 128 on 132
// SMs would give 1.45 waves; G = 2 gives 0.97), at least 1, at most one per key
// tile, at most 32, and with the partials (G times dQ's memory, all levels)
// within 1 GiB. HKT_CUDA_ATTN_BWD_GROUPS=n forces n (tests).
int fused_groups(const Params& P, int per_sm) {
  int g = 0;
  if (const char* e = std::getenv("HKT_CUDA_ATTN_BWD_GROUPS")) g = std::atoi(e);
  if (g <= 0) {
    int64_t dq_bytes = 0;
    for (int l = 0; l < P.L; ++l) dq_bytes += level_elems(P, l) * int64_t(sizeof(float));
    const int64_t by_memory = (int64_t{1} << 30) / std::max<int64_t>(dq_bytes, 1);
    const int64_t waves_of_one = int64_t(per_sm) * sm_count() / std::max<int64_t>(P.B * P.H, 1);
    g = static_cast<int>(std::min<int64_t>({32, by_memory, waves_of_one}));
  }
  return std::max(1, std::min(g, P.nt));
}

template <int DHP, int QS, bool Async>
void launch_bwd_fused(const Params& P, const float* dout, const float* lse, const float* D,
                      const LevelPtrs<float>& dk, float* dv, const std::vector<void*>& dq, double* part) {
  const Layout lay = mma_layout<DHP>(kMmaTile, P.L);
  const size_t bytes = MmaBwdTiles::elems(lay, DHP, true, QS == 2, false, Async) * sizeof(float);
  constexpr int threads = kMmaThreads * QS;
  const auto kernel = attn_bwd_fused_mma<DHP, QS, Async>;
  allow_smem(kernel, bytes);
  const int groups = fused_groups(P, blocks_per_sm(kernel, threads, bytes));
  // The groups' dQ partials: level by level, G partials of each, zeroed.
  int64_t total = 0;
  for (int l = 0; l < P.L && !dq.empty(); ++l) total += groups * level_elems(P, l);
  Scratch partials(static_cast<size_t>(std::max<int64_t>(total, 1)) * sizeof(float));
  LevelPtrs<float> dq_part{};
  dq_part.on = !dq.empty();
  if (dq_part.on) {
    CUDA_CHECK(cudaMemsetAsync(partials.as<float>(), 0, static_cast<size_t>(total) * sizeof(float), stream()));
    int64_t off = 0;
    for (int l = 0; l < P.L; ++l) {
      dq_part.p[l] = partials.as<float>() + off;
      off += groups * level_elems(P, l);
    }
  }
  const dim3 grid(static_cast<unsigned>(groups), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, threads, bytes, attn_bwd_fused_mma<DHP, QS, Async>)(P, dout, lse, D, dk, dv, dq_part, groups,
                                                                      part);
  CUDA_CHECK_LAUNCH();
  for (int l = 0; l < P.L && dq_part.on; ++l) {
    HKT_LAUNCH(blocks_for(level_elems(P, l)), kThreads, 0, attn_dq_sum)(P, dq_part.p[l], groups, l,
                                                                       static_cast<float*>(dq[size_t(l)]));
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void attention_backward_fused(const AttnShape& s, const std::vector<const void*>& q,
                              const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                              const float* dout, const float* lse, const float* D, const std::vector<void*>& dq,
                              const std::vector<void*>& dk, float* dv, double* part, FusedBwd variant) {
  HKT_CHECK(s.dh <= kMmaMaxDh, "attention_backward_fused: head dim ", s.dh, " above ", kMmaMaxDh);
  HKT_CHECK(mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv), "attention_backward_fused: head dim ", s.dh,
            " not a multiple of 4 or a tensor not 16-byte aligned (mma_rows_aligned)");
  const Params P = make_params(s, q, k, v, lambda, valid, kMmaTile);
  const LevelPtrs<float> dk_dev = level_ptrs<float>(dk);
  const auto launch = [&](auto dhp) {
    constexpr int DHP = decltype(dhp)::value;
    if (variant == FusedBwd::warps8_async)
      launch_bwd_fused<DHP, 2, true>(P, dout, lse, D, dk_dev, dv, dq, part);
    else if (variant == FusedBwd::warps8)
      launch_bwd_fused<DHP, 2, false>(P, dout, lse, D, dk_dev, dv, dq, part);
    else
      launch_bwd_fused<DHP, 1, false>(P, dout, lse, D, dk_dev, dv, dq, part);
  };
  if (s.dh <= 32)
    launch(std::integral_constant<int, 32>{});
  else
    launch(std::integral_constant<int, 64>{});
}

}  // namespace hkt::cuda
