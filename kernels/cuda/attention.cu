// Fused HKT attention (and MHA, its L = 1 case) on the GPU: the math of
// kernels/cpu/attention.hpp, FlashAttention-style, never forming T x T.
//
// Tiles. Positions are cut into tiles of BT (64, or 32 when shared memory is
// short) starting at t * BT - off, off = 1 when causal, else 0; positions
// outside [0, T) are virtual (zero rows, masked keys, never written). With
// this alignment local position p of tile t reads coarse row
// c0(t, l) + (p >> l), c0(t, l) = ((t * BT) >> l) - off, at every level
// (bidirectional: i >> l; causal: floor((i + 1) / 2^l) - 1, whose rows < 0
// are zero rows, so their term is 0), and every coarse row belongs to
// exactly one tile. A tile pair's level-l scores therefore form a
// G x G grid, G = BT >> l, computed once per pair from G coarse query and
// key rows in shared memory:
//   S[p, p'] = w_0 Q_0[p] . K_0[p'] + sum_{l >= 1} w_l Cg_l[p >> l, p' >> l],
//   w_l = lambda[h, l] * scale.
// Every tile product (Q K^T, P V, dO V^T, dS K, P^T dO, dS^T Q and the coarse
// ones) is a block-wide product in shared memory (tile_mm.cuh: tensor cores
// with the float32-accurate 3xTF32 split for float, a plain loop for double).
// Head dims are padded with zero columns to dhp = round_up(dh, 16).
//
// Forward: one block per (query tile, b * h), 4 threads per query row for the
// softmax; an online softmax streams over key tiles (causal: up to the
// diagonal) with O accumulated in shared memory and rescaled per row. Writes
// O and LSE (+inf for a row whose keys are all masked, which gets O = 0).
//
// Backward (P = exp(S - LSE) recomputed, D = rowsum(dO * O),
// dS = P (dP - D), dP = dO V^T), two kernels so that nothing needs atomics:
//   key side   (block per key tile):   dV += P^T dO, dK_0 += w_0 dS^T Q_0,
//              dK_l += w_l dSg_l^T Q_l (dSg_l: 2^l x 2^l block sums of dS)
//   query side (block per query tile): dQ_0 += w_0 dS K_0,
//              dQ_l += w_l dSg_l K_l, and per block dlambda partials
//              scale * sum dSg_l * Cg_l, summed per head in a fixed order.
// Every sum has a fixed order: the bits are reproducible.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <limits>
#include <string_view>
#include <type_traits>

#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_tune.hpp"
#include "kernels/cuda/attention_variants.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/tile_mm.cuh"

namespace hkt::cuda {
namespace {

constexpr int kBwdTile = 64;  // the backward's preferred tile (pick_tile)

// ---------------------------------------------------------------------------
// float64: at least 1 block per SM, which lets ptxas take the registers it
// needs (with no minimum it held BT = 32 to 72 and spilled; its shared memory
// allows few blocks anyway). float32: no minimum (0, as if left out).
template <class T, int BT>
__global__ void __launch_bounds__(4 * BT, std::is_same_v<T, double> ? 1 : 0) attn_fwd(const Params P, T* O, T* LSE) {
  HKT_DYNAMIC_SHARED(smem_raw);
  const Layout lay(BT, int(P.dh), P.L);
  const int ld = lay.ld, lds = lay.lds, dh = int(P.dh), dhp = lay.dhp;
  Carver<T> cv{reinterpret_cast<T*>(smem_raw)};
  T* Q0 = cv.take(lay.rows());
  T* Ks = cv.take(lay.rows());
  T* Vs = cv.take(lay.rows());
  T* Os = cv.take(lay.rows());
  T* Ss = cv.take(lay.scores());
  T* Ql = cv.take(lay.level_rows());
  T* Kl = cv.take(lay.level_rows());
  T* Cg = cv.take(lay.grid_off(P.L));

  const int tq = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const int p = threadIdx.x >> 2, r4 = threadIdx.x & 3;
  constexpr int M = BT / 4;
  const int64_t i = int64_t(tq) * BT - P.off + p;
  T w[kMaxLevels];
  level_weights(P, h, w);

  const T* k0 = level_rows<T>(P, P.k, 0, bh);
  const T* vv = static_cast<const T*>(P.v) + bh * P.T * P.dh;
  load_rows(Q0, ld, level_rows<T>(P, P.q, 0, bh), int64_t(tq) * BT - P.off, BT, P.T, dh, dhp);
  zero(Os, BT * ld);

  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T m_run = kNegInf, l_run = 0;
  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the previous tile's readers of Ks, Vs, Ss are done
    const RowCopy<T> kv[2] = {{Ks, k0, j0}, {Vs, vv, j0}};
    load_rows(kv, ld, BT, P.T, dh, dhp);
    level_grids<T>(P, bh, tq, tk, lay, Ql, Kl, Cg);  // barriers before and after
    tile_mm<true, false>(Ss, lds, Q0, ld, Ks, ld, BT, BT, dhp, false);  // Q_0 K_0^T
    __syncthreads();
    T s[M];
    T mx = kNegInf;
    with_mask_test(!pair_unmasked(P, int64_t(tq) * BT - P.off, j0, BT), [&](auto masked) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const int p2 = r4 + 4 * m;
        if (decltype(masked)::value && key_masked(P, b, i, j0 + p2)) {
          s[m] = kNegInf;
        } else {
          s[m] = combine(P, lay, w, Cg, p, p2, Ss[p * lds + p2]);
          mx = s[m] > mx ? s[m] : mx;
        }
      }
    });
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const T m_new = mx > m_run ? mx : m_run;
    T alpha = 1, rs = 0;
    if (m_new != kNegInf) {
      alpha = m_run == kNegInf ? T(0) : exp(m_run - m_new);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        s[m] = s[m] == kNegInf ? T(0) : exp(s[m] - m_new);
        rs += s[m];
      }
    } else {
#pragma unroll
      for (int m = 0; m < M; ++m) s[m] = 0;
    }
    rs += __shfl_xor_sync(0xffffffffu, rs, 1);
    rs += __shfl_xor_sync(0xffffffffu, rs, 2);
    l_run = l_run * alpha + rs;
    m_run = m_new;
    // Each thread rewrites only its own scores and its own quarter of row p of O.
#pragma unroll
    for (int m = 0; m < M; ++m) Ss[p * lds + r4 + 4 * m] = s[m];
    for (int d = r4; d < dhp; d += 4) Os[p * ld + d] *= alpha;
    __syncthreads();
    tile_mm<true, true>(Os, ld, Ss, lds, Vs, ld, BT, dhp, BT, true);  // O += P V
  }
  __syncthreads();
  if (i >= 0 && i < P.T) {
    const T inv = l_run > 0 ? T(1) / l_run : T(0);
    T* orow = O + (bh * P.T + i) * P.dh;
    for (int d = r4; d < dh; d += 4) orow[d] = Os[p * ld + d] * inv;
    if (r4 == 0) LSE[bh * P.T + i] = l_run > 0 ? m_run + log(l_run) : std::numeric_limits<T>::infinity();
  }
}

// D[i] = sum_d dO[i, d] O[i, d], a warp per row: lane l takes the elements
// l, l + 32, ... (coalesced loads), then a fixed butterfly of shuffles sums
// the lanes, so the bits do not depend on timing.
template <class T>
__global__ void attn_rowdot(const T* dO, const T* O, int64_t rows, int64_t dh, T* D) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * int64_t(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    T s = 0;
    for (int64_t d = lane; d < dh; d += 32) s += dO[r * dh + d] * O[r * dh + d];
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    if (lane == 0) D[r] = s;
  }
}

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

// dlambda[h, l] = sum over b and query tiles, in order.
template <class T>
__global__ void attn_dlambda(const double* part, int64_t B, int64_t H, int nt, int L, T* dlambda) {
  HKT_CUDA_LOOP(e, H * L) {
    const int64_t h = e / L, l = e % L;
    double s = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int t = 0; t < nt; ++t) s += part[((b * H + h) * nt + t) * L + l];
    dlambda[e] = static_cast<T>(s);
  }
}

// --- host side ----------------------------------------------------------------

// Register fragments per warp for a BT x dhp accumulator (4 BT threads, so
// (BT / 16) (dhp / 16) tiles over BT / 8 warps: dhp / 32, rounded up to 2 or 4).
inline int acc_frags(int64_t dh) { return ((dh + 15) & ~15) <= 64 ? 2 : 4; }

// The largest tile (64 or 32) whose shared memory fits and whose coarsest
// level still has a row per tile (BT >= 2^(L-1)).
template <class T>
int pick_tile(const AttnShape& s, bool bwd, bool smem_acc, size_t* bytes) {
  HKT_CHECK(s.L >= 1 && s.L <= kMaxLevels, "hkt_attention: the CUDA kernel takes 1 to ", kMaxLevels,
            " levels, got L = ", s.L);
  // The preferred tile of the forward and of the backward; HKT_CUDA_ATTN_TILE="FWD,BWD"
  // (each 64 or 32) overrides them, for the benchmark's comparisons.
  static const std::pair<int, int> preferred = [] {
    std::pair<int, int> p{64, kBwdTile};
    if (const char* e = std::getenv("HKT_CUDA_ATTN_TILE")) {
      int f = 0, b = 0;
      if (std::sscanf(e, "%d,%d", &f, &b) == 2 && (f == 32 || f == 64) && (b == 32 || b == 64)) p = {f, b};
    }
    return p;
  }();
  const int first = bwd ? preferred.second : preferred.first;
  for (int bt : {first, 32}) {
    if ((int64_t{1} << (s.L - 1)) > bt) continue;
    const Layout lay(bt, int(s.dh), int(s.L), smem_acc);
    *bytes = static_cast<size_t>(bwd ? lay.bwd_elems() : lay.fwd_elems()) * sizeof(T);
    // 1 KiB of headroom for the kernels' static shared memory (block_reduce).
    if (*bytes + 1024 <= static_cast<size_t>(max_smem_optin())) return bt;
  }
  throw Error(str_cat("hkt_attention: no CUDA tile fits: dh = ", s.dh, ", L = ", s.L, ", ", sizeof(T) * 8,
                      "-bit floats need more shared memory than the device's ", max_smem_optin(),
                      " bytes per block (use ", std::is_same_v<T, float> ? "" : "float32, ",
                      "a smaller head dim, ", s.L == kMaxLevels ? "at most 6 levels (32-row tiles), " : "",
                      "or the cpu)"));
}

template <class T, int BT>
void launch_fwd(const Params& P, size_t bytes, T* o, T* lse) {
  allow_smem(attn_fwd<T, BT>, bytes);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, 4 * BT, bytes, attn_fwd<T, BT>)(P, o, lse);
  CUDA_CHECK_LAUNCH();
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
template <class T, int BT>
void launch_bwd(const Params& P, bool smem_acc, size_t bytes, const T* dout, const T* lse, const T* D,
                const LevelPtrs<T>& dk, T* dv, const LevelPtrs<T>& dq, double* part) {
  if constexpr (std::is_same_v<T, float>) {
    if (!smem_acc) {
      if (acc_frags(P.dh) == 2)
        launch_bwd_nf<T, BT, 2>(P, bytes, dout, lse, D, dk, dv, dq, part);
      else
        launch_bwd_nf<T, BT, 4>(P, bytes, dout, lse, D, dk, dv, dq, part);
      return;
    }
  }
  launch_bwd_nf<T, BT, 0>(P, bytes, dout, lse, D, dk, dv, dq, part);
}

// The variant `kern` names (tools/cuda-lab's), or null when the lab has not
// installed it.
AttnForwardVariant installed(FwdKernel kern) { return attention_variants().forward[int(kern)]; }
AttnBackwardVariant installed(BwdKernel kern) { return attention_variants().backward[int(kern)]; }

// A switch that names a kernel the library does not hold and the lab has not
// installed: an error saying where it is.
void expect_installed(bool ok, const char* var, const char* name) {
  HKT_CHECK(ok, "hkt_attention: ", var, "=", name,
            " names a kernel of tools/cuda-lab, which this program has not installed (the library holds the "
            "general kernels; build with -DHKT_CUDA_LAB=ON and run hkt-cuda-lab; docs/cuda.md, \"The lab\")");
}
void expect_installed(FwdKernel kern, bool set) {
  if (set && kern != FwdKernel::general) expect_installed(installed(kern) != nullptr, "HKT_CUDA_ATTN_FWD", kernel_name(kern));
}
void expect_installed(BwdKernel kern, bool set) {
  if (set && kern != BwdKernel::general && kern != BwdKernel::general_regs)
    expect_installed(installed(kern) != nullptr, "HKT_CUDA_ATTN_BWD", kernel_name(kern));
}

// Runs the forward with kernel `kern`, or returns false, having launched
// nothing, when `kern` cannot take the call (general takes every call).
template <class T>
bool forward_with(FwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                  const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid, void* o,
                  void* lse) {
  if (kern != FwdKernel::general) {
    if constexpr (std::is_same_v<T, float>) {
      const AttnForwardVariant f = installed(kern);
      return f && f(s, q, k, v, lambda, valid, static_cast<float*>(o), static_cast<float*>(lse));
    }
    return false;
  }
  size_t bytes = 0;
  const int bt = pick_tile<T>(s, false, true, &bytes);
  const Params P = make_params(s, q, k, v, lambda, valid, bt);
  if (bt == 64)
    launch_fwd<T, 64>(P, bytes, static_cast<T*>(o), static_cast<T*>(lse));
  else
    launch_fwd<T, 32>(P, bytes, static_cast<T*>(o), static_cast<T*>(lse));
  return true;
}

// Elements of level l of q, k and their gradients: [B, H, T_l, dh].
int64_t level_elems(const AttnShape& s, int64_t l) { return s.B * s.H * level_len(s.T, int(l)) * s.dh; }

// Runs the whole backward (zeroing, D, the kernels, the dlambda sum) with
// kernel `kern`, or returns false when `kern` cannot take the call (its
// outputs may have been zeroed; general takes every call).
template <class T>
bool backward_with(BwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                   const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                   const void* o, const void* lse, const void* dout, const std::vector<void*>& dq,
                   const std::vector<void*>& dk, void* dv, void* dlambda) {
  const bool general = kern == BwdKernel::general || kern == BwdKernel::general_regs;
  AttnBackwardVariant variant = nullptr;
  if (!general) {
    // The variants' contract (attention_variants.hpp): float, dh <= 64, aligned rows.
    if constexpr (std::is_same_v<T, float>)
      if (s.dh <= kMmaMaxDh && mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv)) variant = installed(kern);
    if (!variant) return false;
  }
  size_t bytes = 0;
  // Where the general backward keeps its level-0 accumulators: shared memory,
  // or registers (float only).
  const bool smem_acc = !(std::is_same_v<T, float> && kern == BwdKernel::general_regs);
  const int bt = general ? pick_tile<T>(s, true, smem_acc, &bytes) : kMmaTile;
  const Params P = make_params(s, q, k, v, lambda, valid, bt);
  // Coarse rows that only virtual positions map to get no gradient: zero everything first.
  for (int64_t l = 0; l < s.L; ++l) {
    const size_t n = static_cast<size_t>(level_elems(s, l)) * sizeof(T);
    if (!dq.empty()) CUDA_CHECK(cudaMemsetAsync(dq[static_cast<size_t>(l)], 0, n, stream()));
    if (!dk.empty()) CUDA_CHECK(cudaMemsetAsync(dk[static_cast<size_t>(l)], 0, n, stream()));
  }
  const int64_t rows = s.B * s.H * s.T;
  Scratch D(static_cast<size_t>(rows) * sizeof(T));
  HKT_LAUNCH(blocks_for(rows * 32), kThreads, 0, attn_rowdot<T>)(static_cast<const T*>(dout),
                                                                 static_cast<const T*>(o), rows, s.dh, D.as<T>());
  CUDA_CHECK_LAUNCH();
  const LevelPtrs<T> dq_dev = level_ptrs<T>(dq), dk_dev = level_ptrs<T>(dk);
  const size_t nparts = static_cast<size_t>(s.B * s.H * P.nt * s.L);
  Scratch part(dlambda ? nparts * sizeof(double) : sizeof(double));
  double* part_dev = dlambda ? part.as<double>() : nullptr;
  if (general) {
    if (bt == 64)
      launch_bwd<T, 64>(P, smem_acc, bytes, static_cast<const T*>(dout), static_cast<const T*>(lse), D.as<T>(),
                        dk_dev, static_cast<T*>(dv), dq_dev, part_dev);
    else
      launch_bwd<T, 32>(P, smem_acc, bytes, static_cast<const T*>(dout), static_cast<const T*>(lse), D.as<T>(),
                        dk_dev, static_cast<T*>(dv), dq_dev, part_dev);
  } else if constexpr (std::is_same_v<T, float>) {
    if (!variant(s, q, k, v, lambda, valid, static_cast<const float*>(dout), static_cast<const float*>(lse),
                 D.as<float>(), dq, dk, static_cast<float*>(dv), part_dev))
      return false;
  }
  if (dlambda) {
    HKT_LAUNCH(blocks_for(s.H * s.L), kThreads, 0, attn_dlambda<T>)(part_dev, s.B, s.H, P.nt, int(s.L),
                                                                    static_cast<T*>(dlambda));
    CUDA_CHECK_LAUNCH();
  }
  return true;
}

// The candidates the autotuner tries, the reference (general) first: the
// library's and those the lab installed.
std::vector<FwdKernel> fwd_candidates() {
  std::vector<FwdKernel> c{FwdKernel::general};
  for (int i = 1; i < kFwdKernels; ++i)
    if (installed(FwdKernel(i))) c.push_back(FwdKernel(i));
  return c;
}
std::vector<BwdKernel> bwd_candidates() {
  std::vector<BwdKernel> c{BwdKernel::general, BwdKernel::general_regs};
  for (int i = 2; i < kBwdKernels; ++i)
    if (installed(BwdKernel(i))) c.push_back(BwdKernel(i));
  return c;
}
// Their names, in the same order (autotune()'s candidates).
template <class K>
std::vector<std::string> names_of(const std::vector<K>& ks) {
  std::vector<std::string> n;
  for (K k : ks) n.emplace_back(kernel_name(k));
  return n;
}
TuneKey tune_key(bool backward, const AttnShape& s, const bool* valid, bool aligned, unsigned want) {
  return {backward, s.B, s.H, s.T, s.dh, s.L, s.causal, valid != nullptr, aligned, want};
}

}  // namespace

AttentionVariants& attention_variants() {
  static AttentionVariants v;
  return v;
}

// The kernel: the knob's when HKT_CUDA_ATTN_FWD is set; else, for float with
// autotuning on, the tuner's choice for this shape; else general. A kernel
// that cannot take the call leaves it to general.
template <class T>
void attention_forward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                       const void* v, const void* lambda, const bool* valid, void* o, void* lse) {
  if (s.B * s.H == 0) return;
  bool set = false;
  FwdKernel kern = fwd_kernel_knob(&set);
  if constexpr (std::is_same_v<T, float>) {
    expect_installed(kern, set);
    if (!set && attention_autotune_mode() > 0) {
      const TuneKey key = tune_key(false, s, valid, mma_rows_aligned(s.dh, q, k, v, o), 0);
      const std::vector<FwdKernel> cands = fwd_candidates();
      const int64_t rows = s.B * s.H * s.T;
      kern = cands[size_t(autotune(
          key, names_of(cands),
          [&](int i) { return forward_with<float>(cands[size_t(i)], s, q, k, v, lambda, valid, o, lse); },
          [&]() -> std::vector<TuneOutput> {
            return {{static_cast<const float*>(o), rows * s.dh}, {static_cast<const float*>(lse), rows}};
          }))];
    }
  }
  if (!forward_with<T>(kern, s, q, k, v, lambda, valid, o, lse))
    forward_with<T>(FwdKernel::general, s, q, k, v, lambda, valid, o, lse);
}

// The kernel is chosen as the forward's (HKT_CUDA_ATTN_BWD). wgmma leaves a
// call it cannot take to mma, and the others to general.
template <class T>
void attention_backward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                        const void* v, const void* lambda, const bool* valid, const void* o, const void* lse,
                        const void* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, void* dv,
                        void* dlambda) {
  if (s.B * s.H == 0) {
    if (dlambda) CUDA_CHECK(cudaMemsetAsync(dlambda, 0, static_cast<size_t>(s.H * s.L) * sizeof(T), stream()));
    return;
  }
  bool set = false;
  BwdKernel kern = bwd_kernel_knob(&set);
  if constexpr (std::is_same_v<T, float>) {
    expect_installed(kern, set);
    if (!set && attention_autotune_mode() > 0) {
      const unsigned want = (dq.empty() ? 0u : 1u) | (dk.empty() ? 0u : 2u) | (dv ? 4u : 0u) | (dlambda ? 8u : 0u);
      const TuneKey key = tune_key(true, s, valid, mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv), want);
      const std::vector<BwdKernel> cands = bwd_candidates();
      kern = cands[size_t(autotune(
          key, names_of(cands),
          [&](int i) {
            return backward_with<float>(cands[size_t(i)], s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv,
                                        dlambda);
          },
          [&] {
            std::vector<TuneOutput> outs;
            for (int64_t l = 0; l < s.L; ++l) {
              const int64_t n = level_elems(s, l);
              if (!dq.empty()) outs.push_back({static_cast<const float*>(dq[size_t(l)]), n});
              if (!dk.empty()) outs.push_back({static_cast<const float*>(dk[size_t(l)]), n});
            }
            if (dv) outs.push_back({static_cast<const float*>(dv), level_elems(s, 0)});
            if (dlambda) outs.push_back({static_cast<const float*>(dlambda), s.H * s.L});
            return outs;
          }))];
    }
  }
  if (backward_with<T>(kern, s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv, dlambda)) return;
  if (kern == BwdKernel::wgmma &&
      backward_with<T>(BwdKernel::mma, s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv, dlambda))
    return;
  backward_with<T>(BwdKernel::general, s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv, dlambda);
}

template void attention_forward<float>(const AttnShape&, const std::vector<const void*>&,
                                       const std::vector<const void*>&, const void*, const void*, const bool*, void*,
                                       void*);
template void attention_forward<double>(const AttnShape&, const std::vector<const void*>&,
                                        const std::vector<const void*>&, const void*, const void*, const bool*, void*,
                                        void*);
template void attention_backward<float>(const AttnShape&, const std::vector<const void*>&,
                                        const std::vector<const void*>&, const void*, const void*, const bool*,
                                        const void*, const void*, const void*, const std::vector<void*>&,
                                        const std::vector<void*>&, void*, void*);
template void attention_backward<double>(const AttnShape&, const std::vector<const void*>&,
                                         const std::vector<const void*>&, const void*, const void*, const bool*,
                                         const void*, const void*, const void*, const std::vector<void*>&,
                                         const std::vector<void*>&, void*, void*);

}  // namespace hkt::cuda
