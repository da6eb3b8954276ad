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
// A second kernel sums the G partials in group order and scales them by w_l.
// Each block is the only writer of its group's partials and adds into them in
// a fixed order, so the sums do not depend on scheduling. The dlambda partials
// come per key tile from sum_ij dS_ij (Q K^T)_ij = sum_j K[j] . (dS^T Q)[j]
// (and per level with the coarse accumulators).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "kernels/cuda/attention_bwd_mma.cuh"
#include "kernels/cuda/mma_tf32.cuh"

namespace hkt::cuda {
namespace {

// Elements of level l's dQ (one partial).
__host__ __device__ inline int64_t level_elems(const Params& P, int l) { return P.B * P.H * level_len(P.T, l) * P.dh; }

// The levels' products for the tile pair (tq, tk) whose dS is in s.dSs and
// whose coarse rows stage_levels staged: for every level at once, the block
// sums dSg_l; Acc_l (dK_l / w_l of tile tk) += dSg_l^T Q_l[tile tq]; when dQ
// is wanted, the group's partial dQ_l[tile tq] += dSg_l K_l[tile tk] (through
// AccQ). Starts with a barrier.
__device__ void level_grads_fused(const Params& P, const MmaBwdTiles& s, const Layout& lay, int64_t bh, int tq,
                                  const LevelPtrs<float>& dQpart) {
  const int dh = int(P.dh);
  __syncthreads();  // dSs complete; AccQ free
  for (int l = 1; l < P.L; ++l) block_sums<float>(s.dSs, s.dSg, lay, l);
  __syncthreads();
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l, r = lay.acc_row(l) * lay.ld;
    const float* dsg = s.dSg + lay.grid_off(l);
    tile_mm<false, true>(s.Acc + r, lay.ld, dsg, G, s.Ql + r, lay.ld, G, lay.dhp, G, true);
    if (dQpart.on) tile_mm<true, true>(s.AccQ + r, lay.ld, dsg, G, s.Kl + r, lay.ld, G, lay.dhp, G, false);
  }
  if (!dQpart.on) return;
  __syncthreads();
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l;
    const int64_t n = level_len(P.T, l), first = coarse_first(P, tq, l, lay.BT);
    float* part = dQpart.p[l] + blockIdx.x * level_elems(P, l) + bh * n * P.dh;
    const float* accq = s.AccQ + lay.acc_row(l) * lay.ld;
    for (int e = threadIdx.x; e < G * dh; e += blockDim.x) {
      const int a = e / dh, d = e - a * dh;
      const int64_t row = first + a;
      if (row >= 0 && row < n) part[row * P.dh + d] += accq[a * lay.ld + d];
    }
  }
}

template <int DHP>
__global__ void __launch_bounds__(kMmaThreads)
    attn_bwd_fused_mma(const Params P, const float* dO, const float* LSE, const float* D, const LevelPtrs<float> dK,
                       float* dV, const LevelPtrs<float> dQpart, int groups, double* dlam_part) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kMmaTile, ld = mma_ld(DHP), ND = DHP / 8;
  const Layout lay(BT, int(P.dh), P.L);
  const MmaBwdTiles s(reinterpret_cast<float*>(smem_raw), lay, DHP, true);
  const int64_t bh = blockIdx.y;
  const int warp = threadIdx.x >> 5;  // its 16 queries in the dQ product
  float w[kMaxLevels];
  level_weights(P, bh % P.H, w);
  float* dq0 = dQpart.on ? dQpart.p[0] + blockIdx.x * level_elems(P, 0) + bh * P.T * P.dh : nullptr;

  for (int tk = blockIdx.x; tk < P.nt; tk += groups) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the previous key tile's readers are done
    float dk[ND][4], dv[ND][4];  // this warp's 16 keys (key_side_pair)
    stage_key_tile<DHP, true>(P, s, lay, bh, tk, j0, dk, dv);

    for (int tq = P.causal ? tk : 0; tq < P.nt; ++tq) {
      const int64_t i0 = int64_t(tq) * BT - P.off;
      key_side_pair<DHP, true>(P, s, lay, w, bh, tq, tk, j0, dO, LSE, D, dk, dv, dq0 || P.L > 1);
      if (dq0) {
        __syncthreads();  // dS complete
        // dQ_0 / w_0 of queries r0, r0 + 8 (this warp's 16 rows of dS) += dS K_0, into the partial.
        float dq[ND][4];
#pragma unroll
        for (int n = 0; n < ND; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
        warp_ab<DHP, BT>(dq, s.dSs + warp * 16 * lay.lds, lay.lds, s.Ks, ld);
        store_frag_rows<DHP, true>(P, nullptr, 1.0f, i0, dq, dq0);
      }
      if (P.L > 1) level_grads_fused(P, s, lay, bh, tq, dQpart);
    }

    store_frag_rows<DHP>(P, nullptr, 1.0f, j0, dv, dV ? dV + bh * P.T * P.dh : nullptr);
    const double dl0 = store_frag_rows<DHP>(P, s.Ks, w[0], j0, dk, dK.on ? dK.p[0] + bh * P.T * P.dh : nullptr);
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

// Key-tile groups per (b, h): enough blocks to fill every SM with as many
// as fit at once (2 by registers; 1 when the block's shared memory, `bytes`,
// takes more than half of the 227 KiB, as with L > 1 at dh = 64), at most
// one per key tile and at most 16 (the partials take G times dQ's memory).
// HKT_CUDA_ATTN_BWD_GROUPS=n forces n (tests).
int fused_groups(const Params& P, size_t bytes) {
  int g = 0;
  if (const char* e = std::getenv("HKT_CUDA_ATTN_BWD_GROUPS")) g = std::atoi(e);
  if (g <= 0) {
    const int64_t per_sm = std::clamp<int64_t>(int64_t(max_smem_optin()) / int64_t(std::max<size_t>(bytes, 1)), 1, 2);
    const int64_t bh = P.B * P.H;
    g = static_cast<int>(std::min<int64_t>(16, (per_sm * sm_count() + bh - 1) / bh));
  }
  return std::max(1, std::min(g, P.nt));
}

template <int DHP>
void launch_bwd_fused(const Params& P, const float* dout, const float* lse, const float* D,
                      const LevelPtrs<float>& dk, float* dv, const std::vector<void*>& dq, double* part) {
  const Layout lay(kMmaTile, int(P.dh), P.L);
  const size_t bytes = MmaBwdTiles::elems(lay, DHP, true) * sizeof(float);
  const int groups = fused_groups(P, bytes);
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
  allow_smem(attn_bwd_fused_mma<DHP>, bytes);
  const dim3 grid(static_cast<unsigned>(groups), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, kMmaThreads, bytes, attn_bwd_fused_mma<DHP>)(P, dout, lse, D, dk, dv, dq_part, groups, part);
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
                              const std::vector<void*>& dk, float* dv, double* part) {
  HKT_CHECK(s.dh <= kMmaMaxDh, "attention_backward_fused: head dim ", s.dh, " above ", kMmaMaxDh);
  const Params P = make_params(s, q, k, v, lambda, valid, kMmaTile);
  const LevelPtrs<float> dk_dev = level_ptrs<float>(dk);
  if (s.dh <= 32)
    launch_bwd_fused<32>(P, dout, lse, D, dk_dev, dv, dq, part);
  else
    launch_bwd_fused<64>(P, dout, lse, D, dk_dev, dv, dq, part);
}

}  // namespace hkt::cuda
