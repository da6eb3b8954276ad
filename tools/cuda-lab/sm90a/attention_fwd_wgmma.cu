// The fused attention forward on Hopper's warpgroup products (wgmma,
// kernels/cuda/wgmma.cuh), float32 in 3xTF32, head dims up to 64: the same
// function and tiles as attn_fwd_mma (attention_fwd_mma.cu), with every tile
// product one instruction per warp per k step instead of one per 16 x 8
// fragment. HKT_CUDA_ATTN_FWD=wgmma (HKT_CUDA_ATTN_FWD=wgmma2: two warpgroups
// per block on the same key tiles); built for sm_90a only (this folder),
// called on compute capability 9.0 only.
//
// A block is one warpgroup (4 warps) and takes 64 query rows, 16 per warp,
// as in attn_fwd_mma. Q, K and V are split into TF32 hi and lo once, as they
// are stored, into tiles in the K-major gmma layout (gmma_at): Q and K as
// they are (64 rows of DHP), V transposed (DHP rows of 64 keys), since TF32
// operands must be K-major and P V contracts over the keys. Per key tile:
//   S = Q K^T: per k step of 8, three m64n64k8 products from shared memory
//   (Q_lo K_hi, Q_hi K_lo, Q_hi K_hi), into the warps' score fragments;
//   the levels and the online softmax as in attn_fwd_mma (fwd_softmax.cuh);
//   O += P V: P from the score fragments as A fragments in registers (keys
//   of each group of 8 in the order 0, 2, 4, 6, 1, 3, 5, 7, V's rows stored
//   in that order), three m64nDHPk8 products per 8 keys.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cuda/attention_common.cuh"
#include "tools/cuda-lab/attention_mma.hpp"
#include "tools/cuda-lab/fwd_softmax.cuh"
#include "kernels/cuda/mma_tf32.cuh"
#include "tools/cuda-lab/sm90a/gmma_split.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace hkt::cuda {
namespace {

// Shared memory in floats: per warpgroup its Q (hi, lo; 64 x DHP each), then K
// (hi, lo) and V^T (hi, lo; DHP x 64 each) shared by the warpgroups, then per
// warpgroup its query tile's coarse rows (every level), the key tile's, and per
// warpgroup the levels' grids, as attn_fwd_mma.
inline size_t wgmma_fwd_elems(const Layout& lay, int dhp, int wgs) {
  const size_t tile = static_cast<size_t>(kWgBT * dhp), rows = Layout::up8(lay.acc_row(lay.L) * lay.ld);
  return (2 * wgs + 4) * tile + (wgs + 1) * rows + wgs * static_cast<size_t>(lay.grid_off(lay.L));
}

// WGS warpgroups per block (HKT_CUDA_ATTN_FWD=wgmma: 1; wgmma2: 2), each with
// its own 64 query rows (query tiles WGS blockIdx.x + wg), all with the same
// key tiles: WGS = 2 loads and splits each K and V tile once for 128 queries.
template <int DHP, int WGS>
__global__ void __launch_bounds__(kMmaThreads * WGS) attn_fwd_wgmma(const Params P, float* O, float* LSE) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kWgBT, KS = DHP / 8, NT = BT / 8, ND = DHP / 8, TILE = BT * DHP;
  constexpr int THREADS = kMmaThreads * WGS;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const Layout lay = mma_layout<DHP>(BT, P.L);
  const int wg = int(threadIdx.x) / kMmaThreads, wtid = int(threadIdx.x) % kMmaThreads;
  const int rows = Layout::up8(lay.acc_row(P.L) * lay.ld);
  Carver<float> cv{reinterpret_cast<float*>(smem_raw)};
  float* Q0 = cv.take(2 * WGS * TILE);  // warpgroup w's Q: hi at Q0 + 2 w TILE, lo after it
  float* Kh = cv.take(TILE);
  float* Kl = cv.take(TILE);
  float* Vh = cv.take(TILE);
  float* Vl = cv.take(TILE);
  float* Qlev0 = cv.take(WGS * rows);  // each warpgroup's query tile's coarse rows, once
  float* Klev = cv.take(rows);         // the key tile's, per key tile
  float* Cg0 = cv.take(WGS * lay.grid_off(P.L));
  float* const Qh = Q0 + 2 * wg * TILE;
  float* const Ql = Qh + TILE;
  float* const Cg = Cg0 + wg * lay.grid_off(P.L);

  const int tq0 = WGS * int(blockIdx.x), tq = tq0 + wg, dh = int(P.dh);  // tq = nt: a warpgroup with no rows
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const auto [warp, g, t, r0] = frag_lane();  // this lane's rows: r0 and r0 + 8 of its warpgroup's tile
  (void)g;
  const int64_t i0 = int64_t(tq) * BT - P.off;
  float w[kMaxLevels];
  level_weights(P, h, w);
  const float w0 = w[0];

  load_gmma_split<DHP, false, kMmaThreads>(wtid, level_rows<float>(P, P.q, 0, bh), i0, P.T, dh, Qh, Ql);
  for (int x = 0; x < WGS; ++x) stage_level_rows(P, lay, P.q, bh, tq0 + x, Qlev0 + x * rows);
  const uint64_t dQh = gmma_desc(Qh), dQl = gmma_desc(Ql), dKh = gmma_desc(Kh), dKl = gmma_desc(Kl),
                 dVh = gmma_desc(Vh), dVl = gmma_desc(Vl);
  float o[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_run[2] = {kNegInf, kNegInf}, l_run[2] = {0.0f, 0.0f};

  const float* k0 = level_rows<float>(P, P.k, 0, bh);
  const float* vv = static_cast<const float*>(P.v) + bh * P.T * P.dh;
  // Causal: up to the last warpgroup's diagonal tile (the others' extra pairs are wholly masked).
  const int last = P.causal ? min(tq0 + WGS - 1, P.nt - 1) : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the Q staging and the previous tile's readers are done
    load_gmma_split<DHP, false, THREADS>(threadIdx.x, k0, j0, P.T, dh, Kh, Kl);
    load_gmma_split<DHP, true, THREADS>(threadIdx.x, vv, j0, P.T, dh, Vh, Vl);
    if (P.prefetch && tk < last) {  // the next key tile's K and V, into L2 meanwhile
      prefetch_tile_l2(k0, j0 + BT, BT, P.T, dh);
      prefetch_tile_l2(vv, j0 + BT, BT, P.T, dh);
    }
    stage_level_rows(P, lay, P.k, bh, tk, Klev);
    fence_proxy_async();  // the stores above, before the products read them
    __syncthreads();
    if (P.L > 1) {
      for (int x = 0; x < WGS; ++x)  // every level, every warpgroup, between the same two barriers
        level_grids_staged(P, lay, Qlev0 + x * rows, Klev, Cg0 + x * lay.grid_off(P.L));
      __syncthreads();
      fold_levels(P, lay, w, Cg, 8 * (warp & 3), 8, 0, BT / 2);  // this warp's 16 rows' coarse terms
    }

    // S = Q K^T, the small products of each k step first.
    float s[NT][4];
    wgmma_fence();
    gmma_abt_3x<NT, KS, BT>(s, dQh, dQl, dKh, dKl);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(s);

    online_softmax_tile(P, lay, w0, Cg, b, i0, j0, r0, t, s, o, m_run, l_run);

    GmmaAFrags<NT> pf;
    gmma_frag_b_3x<NT, ND, DHP>(o, s, pf, dVh, dVl);  // O += P V (V^T's key slots in key_slot order)
    wgmma_wait<0>();  // before P's registers change and V's tile is written again
    wgmma_fence_operand(o);
  }

  store_forward_rows(P, bh, i0, r0, t, o, m_run, l_run, O, LSE);
}

template <int DHP, int WGS>
void launch_fwd_wgmma(const Params& P, float* o, float* lse) {
  const Layout lay = mma_layout<DHP>(kWgBT, P.L);
  const size_t bytes = wgmma_fwd_elems(lay, DHP, WGS) * sizeof(float);
  allow_smem(attn_fwd_wgmma<DHP, WGS>, bytes);
  const dim3 grid(static_cast<unsigned>((P.nt + WGS - 1) / WGS), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, kMmaThreads * WGS, bytes, attn_fwd_wgmma<DHP, WGS>)(P, o, lse);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

bool attention_forward_wgmma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                             const void* v, const void* lambda, const bool* valid, float* o, float* lse,
                             int warpgroups) {
  if (s.dh > kMmaMaxDh || !mma_rows_aligned(s.dh, q, k, v, o) || !wgmma_device()) return false;
  const Params P = make_params(s, q, k, v, lambda, valid, kWgBT);
  const auto launch = [&](auto dhp) {
    constexpr int DHP = decltype(dhp)::value;
    if (warpgroups == 2)
      launch_fwd_wgmma<DHP, 2>(P, o, lse);
    else
      launch_fwd_wgmma<DHP, 1>(P, o, lse);
  };
  if (s.dh <= 32)
    launch(std::integral_constant<int, 32>{});
  else
    launch(std::integral_constant<int, 64>{});
  return true;
}

}  // namespace hkt::cuda
