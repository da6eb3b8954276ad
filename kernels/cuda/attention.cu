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
//
// Forward: one block per (query tile, b * h); 4 threads per query row, each
// holding BT / 4 scores and dh / 4 output columns in registers; an online
// softmax streams over key tiles (causal: up to the diagonal); P goes
// through shared memory for P V. Writes O and LSE (+inf for a row whose keys
// are all masked, which gets O = 0).
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
#include <limits>

#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/common.cuh"

namespace hkt::cuda {
namespace {

constexpr int kMaxLevels = 7;
constexpr int kMaxDh = 128;

struct Params {
  int64_t B, H, T, dh;
  int L, off, nt;  // levels, tile offset, tiles
  bool causal;
  const void* q[kMaxLevels];
  const void* k[kMaxLevels];
  const void* v;
  const void* lambda;
  const bool* valid;
  double scale;
};

// Per-level output pointers, passed by value (on = wanted).
template <class T>
struct LevelPtrs {
  T* p[kMaxLevels];
  bool on;
};

__host__ __device__ inline int64_t level_len(int64_t T, int l) { return (T + (int64_t{1} << l) - 1) >> l; }

// Shared-memory layout (in elements of T), the same on host and device.
struct Layout {
  int ld, BT, G1, sumG2, sumG;
  __host__ __device__ Layout(int bt, int dh, int L) : ld(dh + 1), BT(bt), G1(bt / 2), sumG2(0), sumG(0) {
    for (int l = 1; l < L; ++l) {
      sumG2 += (bt >> l) * (bt >> l);
      sumG += bt >> l;
    }
  }
  __host__ __device__ int fwd_elems() const { return 2 * BT * ld + 2 * G1 * ld + sumG2 + BT * (BT + 1); }
  __host__ __device__ int bwd_elems() const {
    return 4 * BT * ld + 2 * G1 * ld + 2 * sumG2 + 2 * BT * (BT + 1) + sumG * ld + 2 * BT;
  }
};

// dst[r * ld + d] = rows[first + r][d] for r < count (zero outside [0, n)).
template <class T>
__device__ void load_rows(T* dst, int ld, const T* rows, int64_t first, int count, int64_t n, int dh) {
  for (int e = threadIdx.x; e < count * dh; e += blockDim.x) {
    const int r = e / dh, d = e - r * dh;
    const int64_t src = first + r;
    dst[r * ld + d] = (src >= 0 && src < n) ? rows[src * dh + d] : T(0);
  }
}

template <class T>
__device__ inline T dot(const T* a, const T* b, int dh) {
  T s = 0;
  for (int d = 0; d < dh; ++d) s += a[d] * b[d];
  return s;
}

// Level-l rows of (b, h) for level l, and the first coarse row of tile t.
template <class T>
__device__ inline const T* level_rows(const Params& P, const void* const* base, int l, int64_t bh) {
  return static_cast<const T*>(base[l]) + bh * level_len(P.T, l) * P.dh;
}
__device__ inline int64_t coarse_first(const Params& P, int t, int l, int BT) {
  return ((int64_t(t) * BT) >> l) - P.off;
}

// Cg_l = Q_l[tile tq] K_l[tile tk]^T for l = 1..L-1 (unscaled), all levels
// one after the other in Cg. Uses Ql, Kl as staging. Ends with a barrier.
template <class T>
__device__ void level_grids(const Params& P, int64_t bh, int tq, int tk, int BT, const Layout& lay, T* Ql, T* Kl,
                            T* Cg) {
  int goff = 0;
  for (int l = 1; l < P.L; ++l) {
    const int G = BT >> l;
    const int64_t n = level_len(P.T, l);
    load_rows(Ql, lay.ld, level_rows<T>(P, P.q, l, bh), coarse_first(P, tq, l, BT), G, n, int(P.dh));
    load_rows(Kl, lay.ld, level_rows<T>(P, P.k, l, bh), coarse_first(P, tk, l, BT), G, n, int(P.dh));
    __syncthreads();
    for (int e = threadIdx.x; e < G * G; e += blockDim.x) {
      const int a = e / G, c = e - a * G;
      Cg[goff + e] = dot(Ql + a * lay.ld, Kl + c * lay.ld, int(P.dh));
    }
    __syncthreads();
    goff += G * G;
  }
}

__device__ inline bool key_masked(const Params& P, int64_t b, int64_t i, int64_t j) {
  if (j < 0 || j >= P.T || i < 0 || i >= P.T) return true;
  if (P.valid && !P.valid[b * P.T + j]) return true;
  return P.causal && j > i;
}

template <class T>
__device__ inline T weight(const Params& P, int64_t h, int l) {
  return static_cast<T>(static_cast<double>(static_cast<const T*>(P.lambda)[h * P.L + l]) * P.scale);
}

// Combined score of local (p, p2) given the level-0 dot c0.
template <class T>
__device__ inline T combine(const Params& P, const T* w, const T* Cg, int BT, int p, int p2, T c0) {
  T s = w[0] * c0;
  int goff = 0;
  for (int l = 1; l < P.L; ++l) {
    const int G = BT >> l;
    s += w[l] * Cg[goff + (p >> l) * G + (p2 >> l)];
    goff += G * G;
  }
  return s;
}

// ---------------------------------------------------------------------------
template <class T, int BT>
__global__ void __launch_bounds__(4 * BT) attn_fwd(const Params P, T* O, T* LSE) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const Layout lay(BT, int(P.dh), P.L);
  const int ld = lay.ld, dh = int(P.dh);
  T* Q0 = sm;
  T* Ks = Q0 + BT * ld;
  T* Ql = Ks + BT * ld;
  T* Kl = Ql + lay.G1 * ld;
  T* Cg = Kl + lay.G1 * ld;
  T* Ps = Cg + lay.sumG2;

  const int tq = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const int p = threadIdx.x >> 2, r4 = threadIdx.x & 3;
  constexpr int M = BT / 4, C = kMaxDh / 4;
  const int64_t i = int64_t(tq) * BT - P.off + p;
  T w[kMaxLevels];
  for (int l = 0; l < P.L; ++l) w[l] = weight<T>(P, h, l);

  const T* q0 = level_rows<T>(P, P.q, 0, bh);
  const T* k0 = level_rows<T>(P, P.k, 0, bh);
  const T* vv = static_cast<const T*>(P.v) + bh * P.T * P.dh;
  load_rows(Q0, ld, q0, int64_t(tq) * BT - P.off, BT, P.T, dh);

  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T m_run = kNegInf, l_run = 0;
  T acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0;

  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // previous tile's readers of Ks, Ps are done
    load_rows(Ks, ld, k0, j0, BT, P.T, dh);
    __syncthreads();
    level_grids<T>(P, bh, tq, tk, BT, lay, Ql, Kl, Cg);
    T s[M];
    T mx = kNegInf;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int p2 = r4 + 4 * m;
      if (key_masked(P, b, i, j0 + p2)) {
        s[m] = kNegInf;
      } else {
        s[m] = combine(P, w, Cg, BT, p, p2, dot(Q0 + p * ld, Ks + p2 * ld, dh));
        mx = s[m] > mx ? s[m] : mx;
      }
    }
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
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] *= alpha;
#pragma unroll
    for (int m = 0; m < M; ++m) Ps[p * (BT + 1) + r4 + 4 * m] = s[m];
    __syncthreads();  // Ps complete; everyone is done with K in Ks
    load_rows(Ks, ld, vv, j0, BT, P.T, dh);
    __syncthreads();
    for (int p2 = 0; p2 < BT; ++p2) {
      const T pv = Ps[p * (BT + 1) + p2];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int d = r4 + 4 * c;
        if (d < dh) acc[c] += pv * Ks[p2 * ld + d];
      }
    }
  }
  if (i >= 0 && i < P.T) {
    const T inv = l_run > 0 ? T(1) / l_run : T(0);
    T* orow = O + (bh * P.T + i) * P.dh;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int d = r4 + 4 * c;
      if (d < dh) orow[d] = acc[c] * inv;
    }
    if (r4 == 0) LSE[bh * P.T + i] = l_run > 0 ? m_run + log(l_run) : std::numeric_limits<T>::infinity();
  }
}

// D[i] = sum_d dO[i, d] O[i, d]
template <class T>
__global__ void attn_rowdot(const T* dO, const T* O, int64_t rows, int64_t dh, T* D) {
  HKT_CUDA_LOOP(r, rows) {
    T s = 0;
    for (int64_t d = 0; d < dh; ++d) s += dO[r * dh + d] * O[r * dh + d];
    D[r] = s;
  }
}

// Shared state of one backward block: the loaded tiles and the recomputed P, dS.
template <class T, int BT>
struct BwdTiles {
  T *Q0, *K0, *Vs, *dO, *Ql, *Kl, *Cg, *dSg, *Ps, *dSs, *Acc, *lse, *Dq;
  __device__ BwdTiles(T* sm, const Layout& lay) {
    const int ld = lay.ld;
    Q0 = sm;
    K0 = Q0 + BT * ld;
    Vs = K0 + BT * ld;
    dO = Vs + BT * ld;
    Ql = dO + BT * ld;
    Kl = Ql + lay.G1 * ld;
    Cg = Kl + lay.G1 * ld;
    dSg = Cg + lay.sumG2;
    Ps = dSg + lay.sumG2;
    dSs = Ps + BT * (BT + 1);
    Acc = dSs + BT * (BT + 1);  // coarse-level accumulators (dK_l or dQ_l), sumG rows
    lse = Acc + lay.sumG * ld;
    Dq = lse + BT;
  }
};

// Loads query tile tq's Q_0, dO, LSE, D (zeros / +inf on virtual rows).
template <class T, int BT>
__device__ void load_query_side(const Params& P, const BwdTiles<T, BT>& t, int ld, int64_t bh, int tq, const T* dO,
                                const T* LSE, const T* D) {
  const int64_t i0 = int64_t(tq) * BT - P.off;
  load_rows(t.Q0, ld, level_rows<T>(P, P.q, 0, bh), i0, BT, P.T, int(P.dh));
  load_rows(t.dO, ld, dO + bh * P.T * P.dh, i0, BT, P.T, int(P.dh));
  for (int p = threadIdx.x; p < BT; p += blockDim.x) {
    const int64_t i = i0 + p;
    const bool in = i >= 0 && i < P.T;
    t.lse[p] = in ? LSE[bh * P.T + i] : std::numeric_limits<T>::infinity();
    t.Dq[p] = in ? D[bh * P.T + i] : T(0);
  }
}

// Recomputes P and dS of tile pair (tq, tk) into Ps, dSs (after the level
// grids); adds dS * C_0 into dl0. Thread mapping: row p = tid / 4.
template <class T, int BT>
__device__ void recompute(const Params& P, const BwdTiles<T, BT>& t, int ld, int64_t b, int tq, int tk, const T* w,
                          double& dl0) {
  const int p = threadIdx.x >> 2, r4 = threadIdx.x & 3, dh = int(P.dh);
  const int64_t i = int64_t(tq) * BT - P.off + p, j0 = int64_t(tk) * BT - P.off;
#pragma unroll 4
  for (int m = 0; m < BT / 4; ++m) {
    const int p2 = r4 + 4 * m;
    T pv = 0, ds = 0;
    if (!key_masked(P, b, i, j0 + p2)) {
      const T c0 = dot(t.Q0 + p * ld, t.K0 + p2 * ld, dh);
      const T s = combine(P, w, t.Cg, BT, p, p2, c0);
      pv = exp(s - t.lse[p]);  // 0 when lse = +inf
      const T dp = dot(t.dO + p * ld, t.Vs + p2 * ld, dh);
      ds = pv * (dp - t.Dq[p]);
      dl0 += static_cast<double>(ds) * static_cast<double>(c0);
    }
    t.Ps[p * (BT + 1) + p2] = pv;
    t.dSs[p * (BT + 1) + p2] = ds;
  }
}

// dSg_l = 2^l x 2^l block sums of dSs, for level l (offset goff in dSg).
template <class T, int BT>
__device__ void block_sums(const BwdTiles<T, BT>& t, int l, int goff) {
  const int G = BT >> l, s = 1 << l;
  for (int e = threadIdx.x; e < G * G; e += blockDim.x) {
    const int a = e / G, c = e - a * G;
    T sum = 0;
    for (int x = 0; x < s; ++x)
      for (int y = 0; y < s; ++y) sum += t.dSs[(a * s + x) * (BT + 1) + c * s + y];
    t.dSg[goff + e] = sum;
  }
}

// Key side: block per (key tile, b * h).
template <class T, int BT>
__global__ void __launch_bounds__(4 * BT)
    attn_bwd_kv(const Params P, const T* dO, const T* LSE, const T* D, const LevelPtrs<T> dK, T* dV) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Layout lay(BT, int(P.dh), P.L);
  const int ld = lay.ld, dh = int(P.dh);
  const BwdTiles<T, BT> t(reinterpret_cast<T*>(smem_raw), lay);
  const int tk = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const int kp = threadIdx.x >> 2, r4 = threadIdx.x & 3;  // key row owned in the accumulation
  constexpr int C = kMaxDh / 4;
  T w[kMaxLevels];
  for (int l = 0; l < P.L; ++l) w[l] = weight<T>(P, h, l);
  const int64_t j0 = int64_t(tk) * BT - P.off;
  load_rows(t.K0, ld, level_rows<T>(P, P.k, 0, bh), j0, BT, P.T, dh);
  load_rows(t.Vs, ld, static_cast<const T*>(P.v) + bh * P.T * P.dh, j0, BT, P.T, dh);
  for (int e = threadIdx.x; e < lay.sumG * ld; e += blockDim.x) t.Acc[e] = 0;
  T dv[C], dk[C];
#pragma unroll
  for (int c = 0; c < C; ++c) dv[c] = dk[c] = 0;
  double unused = 0;
  for (int tq = P.causal ? tk : 0; tq < P.nt; ++tq) {
    __syncthreads();
    load_query_side<T, BT>(P, t, ld, bh, tq, dO, LSE, D);
    __syncthreads();
    level_grids<T>(P, bh, tq, tk, BT, lay, t.Ql, t.Kl, t.Cg);
    recompute<T, BT>(P, t, ld, b, tq, tk, w, unused);
    __syncthreads();
    for (int p = 0; p < BT; ++p) {
      const T pv = t.Ps[p * (BT + 1) + kp], ds = t.dSs[p * (BT + 1) + kp];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int d = r4 + 4 * c;
        if (d < dh) {
          dv[c] += pv * t.dO[p * ld + d];
          dk[c] += ds * t.Q0[p * ld + d];
        }
      }
    }
    int goff = 0, aoff = 0;
    for (int l = 1; l < P.L; ++l) {
      const int G = BT >> l;
      __syncthreads();  // Ql free
      block_sums<T, BT>(t, l, goff);
      load_rows(t.Ql, ld, level_rows<T>(P, P.q, l, bh), coarse_first(P, tq, l, BT), G, level_len(P.T, l), dh);
      __syncthreads();
      for (int e = threadIdx.x; e < G * dh; e += blockDim.x) {
        const int c = e / dh, d = e - c * dh;
        T sum = 0;
        for (int a = 0; a < G; ++a) sum += t.dSg[goff + a * G + c] * t.Ql[a * ld + d];
        t.Acc[(aoff + c) * ld + d] += w[l] * sum;
      }
      goff += G * G;
      aoff += G;
    }
  }
  __syncthreads();
  const int64_t j = j0 + kp;
  if (j >= 0 && j < P.T) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int d = r4 + 4 * c;
      if (d >= dh) continue;
      if (dV) dV[(bh * P.T + j) * P.dh + d] = dv[c];
      if (dK.on) dK.p[0][(bh * P.T + j) * P.dh + d] = w[0] * dk[c];
    }
  }
  if (!dK.on) return;
  int aoff = 0;
  for (int l = 1; l < P.L; ++l) {
    const int G = BT >> l;
    const int64_t n = level_len(P.T, l), first = coarse_first(P, tk, l, BT);
    for (int e = threadIdx.x; e < G * dh; e += blockDim.x) {
      const int c = e / dh, d = e - c * dh;
      const int64_t row = first + c;
      if (row >= 0 && row < n) dK.p[l][(bh * n + row) * P.dh + d] = t.Acc[(aoff + c) * ld + d];
    }
    aoff += G;
  }
}

// Query side: block per (query tile, b * h). dlam_part[(bh * nt + tq) * L + l].
template <class T, int BT>
__global__ void __launch_bounds__(4 * BT)
    attn_bwd_q(const Params P, const T* dO, const T* LSE, const T* D, const LevelPtrs<T> dQ, double* dlam_part) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Layout lay(BT, int(P.dh), P.L);
  const int ld = lay.ld, dh = int(P.dh);
  const BwdTiles<T, BT> t(reinterpret_cast<T*>(smem_raw), lay);
  const int tq = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const int p = threadIdx.x >> 2, r4 = threadIdx.x & 3;
  constexpr int C = kMaxDh / 4;
  T w[kMaxLevels];
  for (int l = 0; l < P.L; ++l) w[l] = weight<T>(P, h, l);
  load_query_side<T, BT>(P, t, ld, bh, tq, dO, LSE, D);
  for (int e = threadIdx.x; e < lay.sumG * ld; e += blockDim.x) t.Acc[e] = 0;
  T dq[C];
#pragma unroll
  for (int c = 0; c < C; ++c) dq[c] = 0;
  double dl[kMaxLevels];
  for (int l = 0; l < kMaxLevels; ++l) dl[l] = 0;
  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();
    load_rows(t.K0, ld, level_rows<T>(P, P.k, 0, bh), j0, BT, P.T, dh);
    load_rows(t.Vs, ld, static_cast<const T*>(P.v) + bh * P.T * P.dh, j0, BT, P.T, dh);
    __syncthreads();
    level_grids<T>(P, bh, tq, tk, BT, lay, t.Ql, t.Kl, t.Cg);
    recompute<T, BT>(P, t, ld, b, tq, tk, w, dl[0]);
    __syncthreads();
    for (int p2 = 0; p2 < BT; ++p2) {
      const T ds = t.dSs[p * (BT + 1) + p2];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int d = r4 + 4 * c;
        if (d < dh) dq[c] += ds * t.K0[p2 * ld + d];
      }
    }
    int goff = 0, aoff = 0;
    for (int l = 1; l < P.L; ++l) {
      const int G = BT >> l;
      __syncthreads();  // Kl, dSg free
      block_sums<T, BT>(t, l, goff);
      load_rows(t.Kl, ld, level_rows<T>(P, P.k, l, bh), coarse_first(P, tk, l, BT), G, level_len(P.T, l), dh);
      __syncthreads();
      for (int e = threadIdx.x; e < G * G; e += blockDim.x)
        dl[l] += static_cast<double>(t.dSg[goff + e]) * static_cast<double>(t.Cg[goff + e]);
      for (int e = threadIdx.x; e < G * dh; e += blockDim.x) {
        const int a = e / dh, d = e - a * dh;
        T sum = 0;
        for (int c = 0; c < G; ++c) sum += t.dSg[goff + a * G + c] * t.Kl[c * ld + d];
        t.Acc[(aoff + a) * ld + d] += w[l] * sum;
      }
      goff += G * G;
      aoff += G;
    }
  }
  __syncthreads();
  if (dlam_part) {
    for (int l = 0; l < P.L; ++l) {
      const double s = block_reduce(dl[l], 0.0, SumOp{});
      if (threadIdx.x == 0) dlam_part[(bh * P.nt + tq) * P.L + l] = s * P.scale;
    }
  }
  if (!dQ.on) return;
  const int64_t i = int64_t(tq) * BT - P.off + p;
  if (i >= 0 && i < P.T) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int d = r4 + 4 * c;
      if (d < dh) dQ.p[0][(bh * P.T + i) * P.dh + d] = w[0] * dq[c];
    }
  }
  int aoff = 0;
  for (int l = 1; l < P.L; ++l) {
    const int G = BT >> l;
    const int64_t n = level_len(P.T, l), first = coarse_first(P, tq, l, BT);
    for (int e = threadIdx.x; e < G * dh; e += blockDim.x) {
      const int a = e / dh, d = e - a * dh;
      const int64_t row = first + a;
      if (row >= 0 && row < n) dQ.p[l][(bh * n + row) * P.dh + d] = t.Acc[(aoff + a) * ld + d];
    }
    aoff += G;
  }
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

int max_smem_optin() {
  static const int v = [] {
    int x = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&x, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    return x;
  }();
  return v;
}

// The largest tile (64 or 32) whose shared memory fits and whose coarsest
// level still has a row per tile (BT >= 2^(L-1)).
template <class T>
int pick_tile(const AttnShape& s, bool bwd, size_t* bytes) {
  HKT_CHECK(s.L >= 1 && s.L <= kMaxLevels, "hkt_attention: the CUDA kernel takes 1 to ", kMaxLevels,
            " levels, got L = ", s.L);
  for (int bt : {64, 32}) {
    if ((int64_t{1} << (s.L - 1)) > bt) continue;
    const Layout lay(bt, int(s.dh), int(s.L));
    *bytes = static_cast<size_t>(bwd ? lay.bwd_elems() : lay.fwd_elems()) * sizeof(T);
    // 1 KiB of headroom for the kernels' static shared memory (block_reduce).
    if (*bytes + 1024 <= static_cast<size_t>(max_smem_optin())) return bt;
  }
  throw Error(str_cat("hkt_attention: no CUDA tile fits: dh = ", s.dh, ", L = ", s.L, ", ", sizeof(T) * 8,
                      "-bit floats need more shared memory than the device's ", max_smem_optin(),
                      " bytes per block (use float32, a smaller head dim, or the cpu)"));
}

Params make_params(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                   const void* v, const void* lambda, const bool* valid, int bt) {
  HKT_CHECK(s.L >= 1 && s.L <= kMaxLevels, "hkt_attention: the CUDA kernel takes 1 to ", kMaxLevels,
            " levels, got L = ", s.L);
  HKT_CHECK(s.dh >= 1 && s.dh <= kMaxDh, "hkt_attention: the CUDA kernel takes head dims up to ", kMaxDh,
            ", got dh = ", s.dh);
  HKT_CHECK(s.B * s.H <= 65535, "hkt_attention: B * H = ", s.B * s.H, " exceeds the CUDA grid limit (65535)");
  Params P{};
  P.B = s.B;
  P.H = s.H;
  P.T = s.T;
  P.dh = s.dh;
  P.L = static_cast<int>(s.L);
  P.causal = s.causal;
  P.off = s.causal ? 1 : 0;
  P.nt = static_cast<int>((s.T + P.off + bt - 1) / bt);
  for (int l = 0; l < P.L; ++l) {
    P.q[l] = q[static_cast<size_t>(l)];
    P.k[l] = k[static_cast<size_t>(l)];
  }
  P.v = v;
  P.lambda = lambda;
  P.valid = valid;
  P.scale = s.scale;
  return P;
}

template <class Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

template <class T, int BT>
void launch_fwd(const Params& P, size_t bytes, T* o, T* lse) {
  allow_smem(attn_fwd<T, BT>, bytes);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  attn_fwd<T, BT><<<grid, 4 * BT, bytes, stream()>>>(P, o, lse);
  CUDA_CHECK_LAUNCH();
}

template <class T, int BT>
void launch_bwd(const Params& P, size_t bytes, const T* dout, const T* lse, const T* D, const LevelPtrs<T>& dk,
                T* dv, const LevelPtrs<T>& dq, double* part) {
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  if (dk.on || dv) {
    allow_smem(attn_bwd_kv<T, BT>, bytes);
    attn_bwd_kv<T, BT><<<grid, 4 * BT, bytes, stream()>>>(P, dout, lse, D, dk, dv);
    CUDA_CHECK_LAUNCH();
  }
  if (dq.on || part) {
    allow_smem(attn_bwd_q<T, BT>, bytes);
    attn_bwd_q<T, BT><<<grid, 4 * BT, bytes, stream()>>>(P, dout, lse, D, dq, part);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

template <class T>
void attention_forward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                       const void* v, const void* lambda, const bool* valid, void* o, void* lse) {
  if (s.B * s.H == 0) return;
  size_t bytes = 0;
  const int bt = pick_tile<T>(s, false, &bytes);
  const Params P = make_params(s, q, k, v, lambda, valid, bt);
  if (bt == 64)
    launch_fwd<T, 64>(P, bytes, static_cast<T*>(o), static_cast<T*>(lse));
  else
    launch_fwd<T, 32>(P, bytes, static_cast<T*>(o), static_cast<T*>(lse));
}

template <class T>
void attention_backward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                        const void* v, const void* lambda, const bool* valid, const void* o, const void* lse,
                        const void* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, void* dv,
                        void* dlambda) {
  if (s.B * s.H == 0) {
    if (dlambda) CUDA_CHECK(cudaMemsetAsync(dlambda, 0, static_cast<size_t>(s.H * s.L) * sizeof(T), stream()));
    return;
  }
  size_t bytes = 0;
  const int bt = pick_tile<T>(s, true, &bytes);
  const Params P = make_params(s, q, k, v, lambda, valid, bt);
  // Coarse rows that only virtual positions map to get no gradient: zero everything first.
  for (int64_t l = 0; l < s.L; ++l) {
    const size_t n = static_cast<size_t>(s.B * s.H * level_len(s.T, int(l)) * s.dh) * sizeof(T);
    if (!dq.empty()) CUDA_CHECK(cudaMemsetAsync(dq[static_cast<size_t>(l)], 0, n, stream()));
    if (!dk.empty()) CUDA_CHECK(cudaMemsetAsync(dk[static_cast<size_t>(l)], 0, n, stream()));
  }
  const int64_t rows = s.B * s.H * s.T;
  Scratch D(static_cast<size_t>(rows) * sizeof(T));
  attn_rowdot<T><<<blocks_for(rows), kThreads, 0, stream()>>>(static_cast<const T*>(dout), static_cast<const T*>(o),
                                                              rows, s.dh, D.as<T>());
  CUDA_CHECK_LAUNCH();
  LevelPtrs<T> dq_dev{}, dk_dev{};
  dq_dev.on = !dq.empty();
  dk_dev.on = !dk.empty();
  for (size_t l = 0; l < dq.size(); ++l) dq_dev.p[l] = static_cast<T*>(dq[l]);
  for (size_t l = 0; l < dk.size(); ++l) dk_dev.p[l] = static_cast<T*>(dk[l]);
  const size_t nparts = static_cast<size_t>(s.B * s.H * P.nt * s.L);
  Scratch part(dlambda ? nparts * sizeof(double) : sizeof(double));
  double* part_dev = dlambda ? part.as<double>() : nullptr;
  if (bt == 64)
    launch_bwd<T, 64>(P, bytes, static_cast<const T*>(dout), static_cast<const T*>(lse), D.as<T>(), dk_dev,
                      static_cast<T*>(dv), dq_dev, part_dev);
  else
    launch_bwd<T, 32>(P, bytes, static_cast<const T*>(dout), static_cast<const T*>(lse), D.as<T>(), dk_dev,
                      static_cast<T*>(dv), dq_dev, part_dev);
  if (dlambda) {
    attn_dlambda<T><<<blocks_for(s.H * s.L), kThreads, 0, stream()>>>(part_dev, s.B, s.H, P.nt, int(s.L),
                                                                       static_cast<T*>(dlambda));
    CUDA_CHECK_LAUNCH();
  }
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
