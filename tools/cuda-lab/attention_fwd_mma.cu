// The fused attention forward with the scores in registers
// (FlashAttention-2 style), float32, head dims up to 64: the same function and
// tiles as attn_fwd (attention.cu), another division of the work.
//
// A block of 4 warps takes 64 query rows, 16 per warp. Each warp keeps its
// rows' Q (split once into TF32 hi and lo), its 16 x 64 scores, and its 16 x dh
// output in registers, as PTX mma.sync m16n8k8 fragments (mma_tf32.cuh). Per
// key tile, the block loads K and V into shared memory and splits them there
// once, as pair tiles (pair_tile.cuh: one LDS.128 per B fragment of S and of
// P V), computes the coarse levels' grids (level_grids_staged: the
// query tile's coarse rows staged once, the key tile's with K and V, every
// level between the same two barriers), then each warp
//   S = w_0 Q K^T (3xTF32) + sum_l w_l Cg_l[p >> l, p' >> l], masked;
//   online softmax over its rows (a row lives in the 4 lanes of a quad);
//   O = alpha O + P V (3xTF32), P taken straight from the score fragments:
// a C fragment holds keys 2t and 2t + 1 where an A fragment wants t and t + 4,
// so the key order inside each group of 8 is permuted, in P and in V alike.
// No shared-memory round trip for S, P or O; no block barrier per product.
// HKT_CUDA_ATTN_FWD=mma-async also fetches the next key tile with cp.async
// (async_copy.cuh) while the current one is used. HKT_CUDA_ATTN_FWD=mma-lean
// keeps Q and K plain in shared memory and splits their fragments as each
// warp loads them (2 instructions per value, every tile pair), which frees
// the 64 registers of Q's fragments: at most 168 registers a thread and 66 KB
// of shared memory for MHA, so 3 blocks (12 warps) per SM where the others
// run 2, as PyTorch's float32 SDPA kernel does (docs/cuda.md).
#include <cmath>
#include <cstdint>
#include <limits>

#include "tools/cuda-lab/async_copy.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "tools/cuda-lab/attention_mma.hpp"
#include "tools/cuda-lab/fwd_softmax.cuh"
#include "kernels/cuda/mma_tf32.cuh"

namespace hkt::cuda {
namespace {

constexpr int kMmaBT = kMmaTile;  // query and key tile rows
// Shared memory in floats: K and V (pair tiles; async: and the next tile's K
// and V as loaded, at mma_ld; lean: K and Q plain at mma_ld, V a pair tile,
// the levels' weights),
// then every level's coarse rows of the query and the key tile
// (lay.acc_row(l)) and the levels' grids.
inline size_t mma_fwd_elems(const Layout& lay, int dhp, FwdMma variant) {
  const size_t pair = pair_tile_floats(kMmaBT, dhp), plain = Layout::up8(kMmaBT * mma_ld(dhp));
  const size_t tiles =
      variant == FwdMma::lean ? 2 * plain + pair + 8 : 2 * pair + (variant == FwdMma::async ? 2 * plain : 0);
  return tiles + 2 * static_cast<size_t>(Layout::up8(lay.acc_row(lay.L) * lay.ld)) + lay.grid_off(lay.L);
}

// Async (HKT_CUDA_ATTN_FWD=mma-async): key tile tk + 1's K and V are fetched
// with cp.async into their own buffers while tile tk is used. Lean
// (mma-lean): Q and K plain, their fragments split as loaded (warp_abt), for
// 3 blocks per SM (__launch_bounds__: at most 168 registers). The others ask
// for no minimum (0, as if left out; with 1, ptxas took dh <= 32 from 141 and
// 138 registers to 176 and 180, one block per SM fewer).
template <int DHP, FwdMma Variant>
__global__ void __launch_bounds__(kMmaThreads, Variant == FwdMma::lean ? 3 : 0)
    attn_fwd_mma(const Params P, float* O, float* LSE) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr bool Async = Variant == FwdMma::async, Lean = Variant == FwdMma::lean;
  static_assert(kMaxLevels <= 8, "Ws holds 8 weights");
  constexpr int BT = kMmaBT, ld = mma_ld(DHP), KS = DHP / 8, NT = BT / 8, ND = DHP / 8;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const Layout lay = mma_layout<DHP>(BT, P.L);
  Carver<float> cv{reinterpret_cast<float*>(smem_raw)};
  // K, V split: column and row pairs (pair_tile.cuh); lean: K plain, and Q plain in Qs.
  float* Kp = cv.take(Lean ? Layout::up8(BT * ld) : pair_tile_floats(BT, DHP));
  float* Vp = cv.take(pair_tile_floats(BT, DHP));
  float* Qs = Lean ? cv.take(Layout::up8(BT * ld)) : nullptr;
  float* Knext = Async ? cv.take(Layout::up8(BT * ld)) : nullptr;
  float* Vnext = Async ? cv.take(Layout::up8(BT * ld)) : nullptr;
  float* Ql = cv.take(Layout::up8(lay.acc_row(P.L) * lay.ld));  // the query tile's coarse rows, once
  float* Kl = cv.take(Layout::up8(lay.acc_row(P.L) * lay.ld));  // the key tile's, per key tile
  float* Cg = cv.take(lay.grid_off(P.L));
  // Lean: the levels' weights here (fold_levels reads them once per key tile), not in 6 more registers.
  float* Ws = Lean ? cv.take(8) : nullptr;

  const int tq = blockIdx.x, dh = int(P.dh);
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const auto [warp, g, t, r0] = frag_lane();  // this lane's rows: r0 and r0 + 8
  const PairLane<DHP> pl(threadIdx.x & 31);   // its reads of Kp and Vp
  const int64_t i0 = int64_t(tq) * BT - P.off;
  float w[kMaxLevels];
  level_weights(P, h, w);
  if constexpr (Lean)
    if (threadIdx.x < kMaxLevels) Ws[threadIdx.x] = int(threadIdx.x) < P.L ? weight<float>(P, h, threadIdx.x) : 0.0f;
  const float w0 = w[0];

  // Q's A fragments, split once: staged through Kp (lean: Q stays in Qs). The levels' query rows stay.
  const RowCopy<float> qc[1] = {{Lean ? Qs : Kp, level_rows<float>(P, P.q, 0, bh), i0, nullptr,
                                 Lean ? TileLayout::plain : TileLayout::pair_cols}};
  load_rows_aligned(qc, ld, BT, P.T, dh, DHP);
  stage_level_rows(P, lay, P.q, bh, tq, Ql);
  __syncthreads();
  uint32_t qh[Lean ? 1 : KS][4], ql[Lean ? 1 : KS][4];
  if constexpr (!Lean)
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) load_a_pair<DHP>(Kp, pl, r0 - g, kk, qh[kk], ql[kk]);  // this warp's 16 rows
  float o[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_run[2] = {kNegInf, kNegInf}, l_run[2] = {0.0f, 0.0f};

  const float* k0 = level_rows<float>(P, P.k, 0, bh);
  const float* vv = static_cast<const float*>(P.v) + bh * P.T * P.dh;
  const int last = P.causal ? tq : P.nt - 1;
  const auto fetch = [&](int tk) {  // Async: key tile tk's K and V into Knext, Vnext
    const RowCopy<float> kv[2] = {{Knext, k0, int64_t(tk) * BT - P.off}, {Vnext, vv, int64_t(tk) * BT - P.off}};
    load_rows_async(kv, ld, BT, P.T, dh, DHP);
  };
  if constexpr (Async) fetch(0);
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the Q staging and the previous tile's readers are done
    if constexpr (Async) {
      cp_async_wait_all();
    } else {
      const RowCopy<float> kv[2] = {{Kp, k0, j0, nullptr, Lean ? TileLayout::plain : TileLayout::pair_cols},
                                    {Vp, vv, j0, nullptr, TileLayout::pair_rows}};  // split as stored
      load_tile_pair<DHP, BT, kMmaThreads>(kv, ld, P.T, dh);
      if (P.prefetch && tk < last) {  // the next key tile's K and V, into L2 meanwhile (async: cp.async does it)
        prefetch_tile_l2(k0, j0 + BT, BT, P.T, dh);
        prefetch_tile_l2(vv, j0 + BT, BT, P.T, dh);
      }
    }
    stage_level_rows(P, lay, P.k, bh, tk, Kl);
    __syncthreads();
    level_grids_staged(P, lay, Ql, Kl, Cg);  // every level between the same two barriers
    if constexpr (Async) {
      tile_from_staged<DHP, BT, kMmaThreads, TileLayout::pair_cols>(Knext, ld, Kp);
      tile_from_staged<DHP, BT, kMmaThreads, TileLayout::pair_rows>(Vnext, ld, Vp);
    }
    __syncthreads();
    if constexpr (Async)
      if (tk < last) fetch(tk + 1);  // lands while this tile's products run
    if (P.L > 1) {  // this warp's 16 rows' coarse terms
      if constexpr (Lean)
        fold_levels(P, lay, static_cast<const float*>(Ws), Cg, 8 * warp, 8, 0, BT / 2);
      else
        fold_levels(P, lay, w, Cg, 8 * warp, 8, 0, BT / 2);
    }

    // S = Q K^T: n-tile j holds keys 8j .. 8j + 7; k in the pair order (Q's fragments too).
    float s[NT][4];
    if constexpr (Lean) {
      warp_abt<DHP, NT>(s, Qs + 16 * warp * ld, Kp, ld);  // this warp's 16 rows
    } else {
#pragma unroll
      for (int j = 0; j < NT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        uint32_t bh[NT][2], bl[NT][2];
#pragma unroll
        for (int j = 0; j < NT; ++j) load_b_chunk(Kp + pl.col_at(j, kk), bh[j], bl[j]);  // K[8j + g][8kk + 2t, + 1]
        mma_3xtf32_passes(s, qh[kk], ql[kk], bh, bl);
      }
    }

    // Combined, masked scores and the online softmax (fwd_softmax.cuh).
    online_softmax_tile(P, lay, w0, Cg, b, i0, j0, r0, t, s, o, m_run, l_run);
    warp_fb_pair<DHP, NT>(o, s, Vp, pl);  // O += P V (V split already)
  }

  store_forward_rows(P, bh, i0, r0, t, o, m_run, l_run, O, LSE);
}

template <int DHP, FwdMma Variant>
void launch_fwd_mma(const Params& P, float* o, float* lse) {
  const Layout lay = mma_layout<DHP>(kMmaBT, P.L);
  const size_t bytes = mma_fwd_elems(lay, DHP, Variant) * sizeof(float);
  allow_smem(attn_fwd_mma<DHP, Variant>, bytes);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, kMmaThreads, bytes, attn_fwd_mma<DHP, Variant>)(P, o, lse);
  CUDA_CHECK_LAUNCH();
}
template <int DHP>
void launch_fwd_mma(const Params& P, FwdMma variant, float* o, float* lse) {
  if (variant == FwdMma::async)
    launch_fwd_mma<DHP, FwdMma::async>(P, o, lse);
  else if (variant == FwdMma::lean)
    launch_fwd_mma<DHP, FwdMma::lean>(P, o, lse);
  else
    launch_fwd_mma<DHP, FwdMma::plain>(P, o, lse);
}

}  // namespace

bool attention_forward_mma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                           const void* v, const void* lambda, const bool* valid, float* o, float* lse,
                           FwdMma variant) {
  if (s.dh > kMmaMaxDh || !mma_rows_aligned(s.dh, q, k, v, o)) return false;
  const Params P = make_params(s, q, k, v, lambda, valid, kMmaBT);
  if (s.dh <= 32)
    launch_fwd_mma<32>(P, variant, o, lse);
  else
    launch_fwd_mma<64>(P, variant, o, lse);
  return true;
}

}  // namespace hkt::cuda
