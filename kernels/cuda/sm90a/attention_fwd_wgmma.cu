// The fused attention forward on Hopper's warpgroup products (wgmma,
// kernels/cuda/wgmma.cuh), float32 in 3xTF32, head dims up to 64: the same
// function and tiles as attn_fwd_mma (attention_fwd_mma.cu), with every tile
// product one instruction per warp per k step instead of one per 16 x 8
// fragment. HKT_CUDA_ATTN_FWD=wgmma; built for sm_90a only (this folder),
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

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_mma.hpp"
#include "kernels/cuda/fwd_softmax.cuh"
#include "kernels/cuda/gmma_tile.cuh"
#include "kernels/cuda/mma_tf32.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace hkt::cuda {
namespace {

constexpr int kWgBT = kMmaTile;  // query and key tile rows

// Rows [first, first + 64) of `rows` (dh floats each; zero outside [0, n) and
// in columns dh .. DHP - 1), split into TF32 hi and lo, into gmma tiles, as
// they are (64 rows of DHP) or Transposed (DHP rows of 64 key slots), as
// gmma_tile.cuh lays the stores out: float4s, no bank conflicts. Each thread
// loads its float4s before it stores any.
template <int DHP, bool Transposed>
__device__ __forceinline__ void load_gmma_split(const float* rows, int64_t first, int64_t n, int dh, float* hi,
                                                float* lo) {
  constexpr int C4 = DHP / 4;
  const auto load = [&](int64_t src, int c) {
    return c < dh && src >= 0 && src < n ? *reinterpret_cast<const float4*>(rows + src * dh + c)
                                         : float4{0.0f, 0.0f, 0.0f, 0.0f};
  };
  const auto store = [&](int at, float4 x) {
    float4 h, l;
    split_tf32(x.x, h.x, l.x);
    split_tf32(x.y, h.y, l.y);
    split_tf32(x.z, h.z, l.z);
    split_tf32(x.w, h.w, l.w);
    *reinterpret_cast<float4*>(hi + at) = h;
    *reinterpret_cast<float4*>(lo + at) = l;
  };
  if constexpr (Transposed) {
    constexpr int PER = kWgBT * C4 / 4 / kMmaThreads;  // 4 x 4 blocks per thread
    static_assert(PER >= 1 && C4 >= 8, "units of 8 column chunks");
    float4 x[PER][4];
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const GmmaColsUnit u = gmma_cols_unit(int(threadIdx.x) + i * kMmaThreads, C4);
#pragma unroll
      for (int q = 0; q < 4; ++q) x[i][q] = load(first + u.j0 + 2 * q, u.d0);
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const GmmaColsUnit u = gmma_cols_unit(int(threadIdx.x) + i * kMmaThreads, C4);
      // Column (s + rot) & 3 of the block for store s: rotate each row's 4 values left by rot.
      float v[4][4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float a[4] = {x[i][q].x, x[i][q].y, x[i][q].z, x[i][q].w};
        float b[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) b[e] = u.rot & 1 ? a[(e + 1) & 3] : a[e];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[q][e] = u.rot & 2 ? b[(e + 2) & 3] : b[e];
      }
      const int k0 = key_slot(u.j0);
#pragma unroll
      for (int s = 0; s < 4; ++s)
        store(gmma_at(u.d0 + ((s + u.rot) & 3), k0, DHP), float4{v[0][s], v[1][s], v[2][s], v[3][s]});
    }
  } else {
    constexpr int PER = kWgBT * C4 / kMmaThreads;
    float4 x[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const GmmaRowsUnit u = gmma_rows_unit(int(threadIdx.x) + i * kMmaThreads, C4);
      x[i] = load(first + u.r, u.c);
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const GmmaRowsUnit u = gmma_rows_unit(int(threadIdx.x) + i * kMmaThreads, C4);
      store(gmma_at(u.r, u.c, kWgBT), x[i]);
    }
  }
}

// The descriptor of k step kk of a gmma tile of R rows whose step 0 is at desc.
__device__ __forceinline__ uint64_t gmma_step(uint64_t desc, int kk, int R) {
  return desc + uint64_t(kk * R * 8 * int(sizeof(float)) >> 4);
}

// Shared memory in floats: Q, K (hi, lo; 64 x DHP each), V^T (hi, lo; DHP x
// 64 each), then every level's coarse rows of the query and the key tile and
// the levels' grids, as attn_fwd_mma.
inline size_t wgmma_fwd_elems(const Layout& lay, int dhp) {
  return 6 * static_cast<size_t>(kWgBT * dhp) + 2 * static_cast<size_t>(Layout::up8(lay.acc_row(lay.L) * lay.ld)) +
         lay.grid_off(lay.L);
}

template <int DHP>
__global__ void __launch_bounds__(kMmaThreads) attn_fwd_wgmma(const Params P, float* O, float* LSE) {
  HKT_DYNAMIC_SHARED(smem_raw);
  constexpr int BT = kWgBT, KS = DHP / 8, NT = BT / 8, ND = DHP / 8, TILE = BT * DHP;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const Layout lay = mma_layout<DHP>(BT, P.L);
  Carver<float> cv{reinterpret_cast<float*>(smem_raw)};
  float* Qh = cv.take(TILE);
  float* Ql = cv.take(TILE);
  float* Kh = cv.take(TILE);
  float* Kl = cv.take(TILE);
  float* Vh = cv.take(TILE);
  float* Vl = cv.take(TILE);
  float* Qlev = cv.take(Layout::up8(lay.acc_row(P.L) * lay.ld));  // the query tile's coarse rows, once
  float* Klev = cv.take(Layout::up8(lay.acc_row(P.L) * lay.ld));  // the key tile's, per key tile
  float* Cg = cv.take(lay.grid_off(P.L));

  const int tq = blockIdx.x, dh = int(P.dh);
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const auto [warp, g, t, r0] = frag_lane();  // this lane's rows: r0 and r0 + 8
  (void)g;
  const int64_t i0 = int64_t(tq) * BT - P.off;
  float w[kMaxLevels];
  level_weights(P, h, w);
  const float w0 = w[0];

  load_gmma_split<DHP, false>(level_rows<float>(P, P.q, 0, bh), i0, P.T, dh, Qh, Ql);
  stage_level_rows(P, lay, P.q, bh, tq, Qlev);
  const uint64_t dQh = gmma_desc(Qh), dQl = gmma_desc(Ql), dKh = gmma_desc(Kh), dKl = gmma_desc(Kl),
                 dVh = gmma_desc(Vh), dVl = gmma_desc(Vl);
  float o[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_run[2] = {kNegInf, kNegInf}, l_run[2] = {0.0f, 0.0f};

  const float* k0 = level_rows<float>(P, P.k, 0, bh);
  const float* vv = static_cast<const float*>(P.v) + bh * P.T * P.dh;
  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the Q staging and the previous tile's readers are done
    load_gmma_split<DHP, false>(k0, j0, P.T, dh, Kh, Kl);
    load_gmma_split<DHP, true>(vv, j0, P.T, dh, Vh, Vl);
    if (P.prefetch && tk < last) {  // the next key tile's K and V, into L2 meanwhile
      prefetch_tile_l2(k0, j0 + BT, BT, P.T, dh);
      prefetch_tile_l2(vv, j0 + BT, BT, P.T, dh);
    }
    stage_level_rows(P, lay, P.k, bh, tk, Klev);
    fence_proxy_async();  // the stores above, before the products read them
    __syncthreads();
    if (P.L > 1) {
      level_grids_staged(P, lay, Qlev, Klev, Cg);  // every level between the same two barriers
      __syncthreads();
      fold_levels(P, lay, w, Cg, 8 * warp, 8, 0, BT / 2);  // this warp's 16 rows' coarse terms
    }

    // S = Q K^T, the small products of each k step first.
    float s[NT][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      const uint64_t qh = gmma_step(dQh, kk, BT), ql = gmma_step(dQl, kk, BT);
      const uint64_t kh = gmma_step(dKh, kk, BT), kl = gmma_step(dKl, kk, BT);
      wgmma_ss<NT>(s, ql, kh, kk > 0);
      wgmma_ss<NT>(s, qh, kl, true);
      wgmma_ss<NT>(s, qh, kh, true);
    }
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(s);

    online_softmax_tile(P, lay, w0, Cg, b, i0, j0, r0, t, s, o, m_run, l_run);

    // O += P V: group j of 8 keys as one A fragment (a0, a2 = keys 2t, 2t + 1 of row g; a1, a3 of row g + 8).
    uint32_t ph[NT][4], pl[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      split_tf32(s[j][0], ph[j][0], pl[j][0]);
      split_tf32(s[j][2], ph[j][1], pl[j][1]);
      split_tf32(s[j][1], ph[j][2], pl[j][2]);
      split_tf32(s[j][3], ph[j][3], pl[j][3]);
    }
    wgmma_fence_operand(o);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint64_t vh = gmma_step(dVh, j, DHP), vl = gmma_step(dVl, j, DHP);
      wgmma_rs<ND>(o, pl[j], vh, true);
      wgmma_rs<ND>(o, ph[j], vl, true);
      wgmma_rs<ND>(o, ph[j], vh, true);
    }
    wgmma_commit();
    wgmma_wait<0>();  // before P's registers change and V's tile is written again
    wgmma_fence_operand(o);
  }

  store_forward_rows(P, bh, i0, r0, t, o, m_run, l_run, O, LSE);
}

template <int DHP>
void launch_fwd_wgmma(const Params& P, float* o, float* lse) {
  const Layout lay = mma_layout<DHP>(kWgBT, P.L);
  const size_t bytes = wgmma_fwd_elems(lay, DHP) * sizeof(float);
  allow_smem(attn_fwd_wgmma<DHP>, bytes);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, kMmaThreads, bytes, attn_fwd_wgmma<DHP>)(P, o, lse);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

bool attention_forward_wgmma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                             const void* v, const void* lambda, const bool* valid, float* o, float* lse) {
  if (s.dh > kMmaMaxDh || !mma_rows_aligned(s.dh, q, k, v, o) || !wgmma_device()) return false;
  const Params P = make_params(s, q, k, v, lambda, valid, kWgBT);
  if (s.dh <= 32)
    launch_fwd_wgmma<32>(P, o, lse);
  else
    launch_fwd_wgmma<64>(P, o, lse);
  return true;
}

}  // namespace hkt::cuda
