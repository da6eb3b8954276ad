// Shared by the fused attention kernels (attention.cu, tools/cuda-lab/attention_fwd_mma.cu):
// the problem (Params), the tile geometry and shared-memory layout (Layout),
// row loads into shared memory, the coarse levels' score grids, masks and
// the combined score. See attention.cu for the scheme.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma_tf32.cuh"
#include "kernels/cuda/pair_tile.cuh"
#include "kernels/cuda/tile_mm.cuh"
#include "kernels/cuda/tile_mma.cuh"

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
  bool prefetch;  // the mma kernels' L2 prefetches (prefetch_tile_l2); HKT_CUDA_ATTN_PREFETCH=0: off
};

// Per-level output pointers, passed by value (on = wanted).
template <class T>
struct LevelPtrs {
  T* p[kMaxLevels];
  bool on;
};

// Per-level device pointers from the host's list (empty: not wanted).
template <class T>
inline LevelPtrs<T> level_ptrs(const std::vector<void*>& p) {
  LevelPtrs<T> r{};
  r.on = !p.empty();
  for (size_t l = 0; l < p.size(); ++l) r.p[l] = static_cast<T*>(p[l]);
  return r;
}

__host__ __device__ inline int64_t level_len(int64_t T, int l) { return (T + (int64_t{1} << l) - 1) >> l; }

// Shared-memory layout (in elements of T), the same on host and device. Every
// buffer starts at a multiple of 8 elements and every leading dimension is a
// multiple of 4, as the tensor-core loads need (tile_mm.cuh).
// smem_acc: the backward's level-0 accumulators (dK_0, dV; dQ_0) live in
// shared memory (the default, float64 always) rather than in registers
// (wmma_tf32::AccFrags: tools/cuda-lab's bwd 1, HKT_CUDA_ATTN_BWD_ACC=regs).
struct Layout {
  int dhp, ld, lds, BT, G1, L;
  bool smem_acc;
  __host__ __device__ static int up8(int n) { return (n + 7) & ~7; }
  __host__ __device__ Layout(int bt, int dh, int levels, bool smem_accumulators = true)
      : dhp((dh + 15) & ~15), ld(((dh + 15) & ~15) + 4), lds(bt + 4), BT(bt), G1(levels > 1 ? bt / 2 : 0),
        L(levels), smem_acc(smem_accumulators) {}
  __host__ __device__ int rows() const { return up8(BT * ld); }      // BT rows of a head dim
  __host__ __device__ int scores() const { return up8(BT * lds); }   // BT x BT scores
  __host__ __device__ int level_rows() const { return up8(G1 * ld); }
  __host__ __device__ int grid_off(int l) const {  // offset of level l's G x G grid
    int o = 0;
    for (int m = 1; m < l; ++m) o += up8((BT >> m) * (BT >> m));
    return o;
  }
  __host__ __device__ int acc_row(int l) const {  // first row of level l's coarse accumulator
    int r = 0;
    for (int m = 1; m < l; ++m) r += BT >> m;
    return r;
  }
  __host__ __device__ int fwd_elems() const { return 4 * rows() + scores() + 2 * level_rows() + grid_off(L) + up8(BT); }
  __host__ __device__ int bwd_elems() const {
    return (smem_acc ? 6 : 4) * rows() + 2 * scores() + 2 * level_rows() + 2 * grid_off(L) + up8(acc_row(L) * ld) +
           2 * up8(BT);
  }
};

// The `mma` kernels' layout: every row at the padded width DHP (their template
// argument) whatever dh is, so that the widths are compile-time constants and
// the coarse rows' index arithmetic (load_rows) has no divisions. Columns
// dh .. DHP - 1 hold zeros (load_rows).
template <int DHP>
__host__ __device__ inline Layout mma_layout(int bt, int levels) {
  return Layout(bt, DHP, levels);
}

// Carves consecutive buffers out of dynamic shared memory.
template <class T>
struct Carver {
  T* p;
  __device__ T* take(int elems) {
    T* r = p;
    p += elems;
    return r;
  }
};

// dst[r * ld + d] = rows[first + r][d] for r < count, d < dh (zero outside
// [0, n) and in the padding columns dh <= d < dhp). Each thread issues kLoadBatch
// independent loads before it stores any (a plain loop waits for every load in
// turn), with float4 accesses when rows allow them. Other layouts (float
// only) store each value split for the 3xTF32 products, so that the warps
// reading it split nothing: a split tile (dst the hi parts, lo the lo parts)
// or a pair tile (dst), of rows of dhp values (pair_tile.cuh; ld unused).
constexpr int kLoadBatch = 8;
template <class T>
struct RowCopy {  // count rows from rows[first] on into dst (see load_rows)
  T* dst;
  const T* rows;
  int64_t first;
  T* lo = nullptr;
  TileLayout layout = TileLayout::plain;
};
// which = e / each, x = e % each for e < N each, by N - 1 compares (no division).
template <int N>
__device__ __forceinline__ void split_index(int e, int each, int& which, int& x) {
  which = 0;
  x = e;
#pragma unroll
  for (int i = 1; i < N; ++i)
    if (x >= each) {
      x -= each;
      which = i;
    }
}
// c[which] without a runtime index into c (which would put c in local memory).
template <class T, int N>
__device__ inline RowCopy<T> pick(const RowCopy<T> (&c)[N], int which) {
  RowCopy<T> r = c[0];
#pragma unroll
  for (int i = 1; i < N; ++i)
    if (which == i) r = c[i];
  return r;
}
template <class V, class T, int N>
__device__ void load_rows_as(const RowCopy<T> (&c)[N], int ld, int count, int64_t n, int dh, int dhp) {
  constexpr int W = sizeof(V) / sizeof(T);
  const int per_row = dhp / W, live = dh / W, each = count * per_row, total = N * each;
  for (int base = threadIdx.x; base < total; base += kLoadBatch * blockDim.x) {
    V v[kLoadBatch];
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int e = base + u * blockDim.x;
      v[u] = V{};
      if (e < total) {
        int which, x;
        split_index<N>(e, each, which, x);
        const int r = x / per_row, col = x - r * per_row;
        const RowCopy<T> cw = pick(c, which);
        const int64_t src = cw.first + r;
        if (col < live && src >= 0 && src < n) v[u] = reinterpret_cast<const V*>(cw.rows + src * dh)[col];
      }
    }
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int e = base + u * blockDim.x;
      if (e < total) {
        int which, x;
        split_index<N>(e, each, which, x);
        const int r = x / per_row, col = x - r * per_row;
        const RowCopy<T> cw = pick(c, which);
        if constexpr (std::is_same_v<T, float>) {
          if (cw.layout != TileLayout::plain) {  // the general path: one value at a time
            store_split(cw.dst, cw.lo, cw.layout, dhp, r, col * W, v[u]);
            continue;
          }
        }
        reinterpret_cast<V*>(cw.dst + r * ld)[col] = v[u];
      }
    }
  }
}
// The mma kernels' precondition on the rows they read and the gradients they
// write: dh % 4 == 0 and 16-byte aligned rows, checked on the host
// (mma_rows_aligned, attention_variants.hpp; the general kernels take the rest), so
// that their loads need no single-value path. The emulator checks it.
// True when rows of dh floats from `rows` on are whole 16-byte aligned float4s.
__device__ __forceinline__ bool float4_rows(const void* rows, int dh) {
  return dh % 4 == 0 && reinterpret_cast<uintptr_t>(rows) % 16 == 0;
}
__device__ __forceinline__ void expect_rows_aligned(const void* rows, int dh) {
  expect_device(float4_rows(rows, dh),
                "an mma kernel got rows that are not whole 16-byte aligned float4s (mma_rows_aligned)");
}

// Copies N groups of count rows at once (all loads of a batch in flight
// together). Aligned (float): the caller guarantees expect_rows_aligned, and
// only the float4 path is compiled (load_rows_aligned).
template <class T, int N, bool Aligned = false>
__device__ void load_rows(const RowCopy<T> (&c)[N], int ld, int count, int64_t n, int dh, int dhp) {
  if constexpr (Aligned) {
    static_assert(std::is_same_v<T, float>, "aligned loads are the mma kernels' (float)");
    for (int i = 0; i < N; ++i) expect_rows_aligned(c[i].rows, dh);
    load_rows_as<float4>(c, ld, count, n, dh, dhp);
  } else {
    if constexpr (std::is_same_v<T, float>) {
      // dhp and ld are multiples of 4, every dst is 32-byte aligned (Layout).
      bool aligned = true;
      for (int i = 0; i < N; ++i) aligned = aligned && float4_rows(c[i].rows, dh);
      if (aligned) {
        load_rows_as<float4>(c, ld, count, n, dh, dhp);
        return;
      }
    }
    load_rows_as<T>(c, ld, count, n, dh, dhp);
  }
}
template <int N>
__device__ void load_rows_aligned(const RowCopy<float> (&c)[N], int ld, int count, int64_t n, int dh, int dhp) {
  load_rows<float, N, true>(c, ld, count, n, dh, dhp);
}
// The mma kernels' per-tile-pair loads: load_rows(c, ld, BT, n, dh, DHP) for
// two BT-row tiles (K and V, or Q and dO) in blocks of THREADS threads, with
// each thread's column and rows fixed: thread x copies float4 column
// x % (DHP / 4) of rows x / (DHP / 4) + STEP k. load_rows works each
// element's row, column and copy out from its index (about 28 instructions per
// float4, tools/cuda-lab/sass-mix); here that is done once per call. The rows are
// whole 16-byte aligned float4s (expect_rows_aligned).
template <int DHP, int BT, int THREADS>
__device__ __forceinline__ void load_tile_pair(const RowCopy<float> (&c)[2], int ld, int64_t n, int dh) {
  using Store = PairStore<DHP, THREADS>;  // its rows and columns are this thread's
  constexpr int STEP = Store::STEP, PER = BT / STEP;
  static_assert(BT % (2 * STEP) == 0, "whole rows per pass, in pairs");
  expect_rows_aligned(c[0].rows, dh);
  expect_rows_aligned(c[1].rows, dh);
  const Store st(threadIdx.x);
  const int col = st.col, r0 = st.r0;
  const bool live = 4 * col < dh;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    // Row pairs (PairStore): rows 2 m, 2 m + 1 for m = r0 + STEP k, k < PER / 2.
    const bool rows2 = c[i].layout == TileLayout::pair_rows;
    const auto row_of = [&](int k) { return rows2 ? 2 * (r0 + (k >> 1) * STEP) + (k & 1) : r0 + k * STEP; };
    float4 v[PER];
#pragma unroll
    for (int k = 0; k < PER; ++k) {  // every load in flight before any store
      const int64_t src = c[i].first + row_of(k);
      v[k] = live && src >= 0 && src < n ? *reinterpret_cast<const float4*>(c[i].rows + src * dh + 4 * col)
                                         : float4{};
    }
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int r = row_of(k);
      if (rows2) {
        if (k % 2 == 0) st.rows_at(c[i].dst, k >> 1, v[k], v[k + 1]);
      } else if (c[i].layout == TileLayout::pair_cols) {
        st.cols_at(c[i].dst, k, v[k]);
      } else if (c[i].layout == TileLayout::split) {
        st.split_at_k(c[i].dst, c[i].lo, k, v[k]);
      } else {
        reinterpret_cast<float4*>(c[i].dst + r * ld)[col] = v[k];
      }
    }
  }
}

template <class T>
__device__ void load_rows(T* dst, int ld, const T* rows, int64_t first, int count, int64_t n, int dh, int dhp) {
  const RowCopy<T> c[1] = {{dst, rows, first}};
  load_rows(c, ld, count, n, dh, dhp);
}
__device__ inline void load_rows_aligned(float* dst, int ld, const float* rows, int64_t first, int count, int64_t n,
                                         int dh, int dhp) {
  const RowCopy<float> c[1] = {{dst, rows, first}};
  load_rows_aligned(c, ld, count, n, dh, dhp);
}

// Asks the L2 cache for the 128-byte line holding p and goes on: a hint that
// nothing waits for. The mma kernels issue it a tile pair ahead for the rows
// their next loads (and the single pass's dQ read-modify-writes) touch, so
// that those come from L2, not from memory; the cp.async forward needs none.
// The emulator reads a byte there instead (an address outside the buffers
// then shows under ASan), and counts it.
// prefetch_l2(p): ptx.cuh.
// prefetch_l2 over every line of the rows [first, first + count) inside [0, n)
// of rows (n rows of dh floats, one after another: one range of floats),
// spread over the block's threads: a probe every 32 floats (a line) and one
// at the range's last float.
__device__ __forceinline__ void prefetch_tile_l2(const float* rows, int64_t first, int count, int64_t n, int dh) {
  const int64_t a = first > 0 ? first : 0, b = first + count < n ? first + count : n;
  if (a >= b) return;
  const float* base = rows + a * dh;
  const int len = int(b - a) * dh;  // at most count * dh floats
  for (int f = 32 * int(threadIdx.x); f < len + 31; f += 32 * int(blockDim.x))
    prefetch_l2(base + (f < len ? f : len - 1));
}

template <class T>
__device__ void zero(T* p, int n) {
  for (int e = threadIdx.x; e < n; e += blockDim.x) p[e] = T(0);
}

// Level-l rows of (b, h), and the first coarse row of tile t.
template <class T>
__device__ inline const T* level_rows(const Params& P, const void* const* base, int l, int64_t bh) {
  return static_cast<const T*>(base[l]) + bh * level_len(P.T, l) * P.dh;
}
__device__ inline int64_t coarse_first(const Params& P, int t, int l, int BT) {
  return ((int64_t(t) * BT) >> l) - P.off;
}

// Cg_l = Q_l[tile tq] K_l[tile tk]^T for l = 1..L-1 (unscaled), level l's
// grid at lay.grid_off(l) in Cg. Uses Ql, Kl as staging. Starts and ends with
// a barrier.
// Mma: the grids' products on mma.sync fragments (tile_mma), and the rows'
// loads aligned (expect_rows_aligned), for the `mma` kernels.
template <class T, bool Mma = false>
__device__ void level_grids(const Params& P, int64_t bh, int tq, int tk, const Layout& lay, T* Ql, T* Kl, T* Cg) {
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l;
    const int64_t n = level_len(P.T, l);
    __syncthreads();  // Ql, Kl free
    const RowCopy<T> c[2] = {{Ql, level_rows<T>(P, P.q, l, bh), coarse_first(P, tq, l, lay.BT)},
                             {Kl, level_rows<T>(P, P.k, l, bh), coarse_first(P, tk, l, lay.BT)}};
    load_rows<T, 2, Mma>(c, lay.ld, G, n, int(P.dh), lay.dhp);
    __syncthreads();
    if constexpr (Mma)
      tile_mma<true, false>(Cg + lay.grid_off(l), G, Ql, lay.ld, Kl, lay.ld, G, G, lay.dhp, false);
    else
      tile_mm<true, false>(Cg + lay.grid_off(l), G, Ql, lay.ld, Kl, lay.ld, G, G, lay.dhp, false);
  }
  __syncthreads();
}

// Every coarse level's rows of tile `tile` of one side (X = P.q or P.k) at
// once: level l's rows into dst from row lay.acc_row(l) on, at lay.ld. No
// barrier. With level_grids_staged, the register-resident kernels stage the
// levels once per tile instead of once per level (level_grids). Their rows
// are aligned (expect_rows_aligned).
__device__ void stage_level_rows(const Params& P, const Layout& lay, const void* const* X, int64_t bh, int tile,
                                 float* dst) {
  for (int l = 1; l < P.L; ++l)
    load_rows_aligned(dst + lay.acc_row(l) * lay.ld, lay.ld, level_rows<float>(P, X, l, bh),
                      coarse_first(P, tile, l, lay.BT), lay.BT >> l, level_len(P.T, l), int(P.dh), lay.dhp);
}
// Cg_l = Q_l K_l^T for l = 1..L-1 (unscaled) from rows staged by
// stage_level_rows; level l's grid at lay.grid_off(l). No barrier.
template <class T>
__device__ void level_grids_staged(const Params& P, const Layout& lay, const T* Ql, const T* Kl, T* Cg) {
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l, r = lay.acc_row(l) * lay.ld;
    tile_mma<true, false>(Cg + lay.grid_off(l), G, Ql + r, lay.ld, Kl + r, lay.ld, G, G, lay.dhp, false);
  }
}

__device__ inline bool key_masked(const Params& P, int64_t b, int64_t i, int64_t j) {
  if (j < 0 || j >= P.T || i < 0 || i >= P.T) return true;
  if (P.valid && !P.valid[b * P.T + j]) return true;
  return P.causal && j > i;
}

// e^x for the float32 `mma` kernels' scores: __expf, ex2.approx of x log2(e)
// (2 instructions where expf takes about 8, per score); relative error about
// 2^-22 + |x| 2^-24, far inside the 1e-4 the kernels are held to; e^-inf = 0;
// subnormal results flush to 0.
__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }

// e^(x - m) for the scores, given m2 = m log2(e): ex2.approx.ftz of
// x log2(e) - m2 in one FFMA, one MUFU.EX2 where __expf(x - m) takes an add,
// a multiply and the denormal range tests of ex2.approx without ftz (about 7
// instructions per score, tools/cuda-lab/sass-mix). As FlashAttention does. Error:
// about (|x| + |m|) 2^-24 relative, far inside the 1e-4 the kernels are held
// to; e^-inf = 0 (m2 = +inf or x = -inf); subnormal results flush to 0.
constexpr float kLog2e = 1.44269504088896341f;
// exp2_ftz(y): ptx.cuh.
__device__ __forceinline__ float exp_minus(float x, float m2) { return exp2_ftz(fmaf(x, kLog2e, -m2)); }

// True when no key of the tile pair (bt queries from i0, bt keys from j0) is
// masked for a query in [0, T): the key tile inside [0, T), no key padding
// and, causal, every key at or before every query. Such pairs (most of them at
// large T) take score loops without per-element mask tests (with_mask_test).
// Query rows outside [0, T) need no test: their results are never stored,
// and in the backward their LSE is +inf, so P and dS are 0 there.
__device__ inline bool pair_unmasked(const Params& P, int64_t i0, int64_t j0, int bt) {
  return !P.valid && j0 >= 0 && j0 + bt <= P.T && (!P.causal || j0 + bt - 1 <= i0);
}

// f(std::true_type{}) when some score may be masked, else f(std::false_type{}):
// the two copies of a score loop, with and without the per-element tests.
template <class F>
__device__ __forceinline__ void with_mask_test(bool needed, F&& f) {
  if (needed)
    f(std::true_type{});
  else
    f(std::false_type{});
}

template <class T>
__device__ inline T weight(const Params& P, int64_t h, int l) {
  return static_cast<T>(static_cast<double>(static_cast<const T*>(P.lambda)[h * P.L + l]) * P.scale);
}

// w[l] = weight(P, h, l) for l < L, 0 above (unrolled: w stays in registers).
template <class T>
__device__ inline void level_weights(const Params& P, int64_t h, T (&w)[kMaxLevels]) {
#pragma unroll
  for (int l = 0; l < kMaxLevels; ++l) w[l] = l < P.L ? weight<T>(P, h, l) : T(0);
}

// Combined score of local (p, p2) given the level-0 dot c0.
template <class T>
__device__ inline T combine(const Params& P, const Layout& lay, const T* w, const T* Cg, int p, int p2, T c0) {
  T s = w[0] * c0;
  int off = 0;  // lay.grid_off(l)
  // Unrolled to kMaxLevels so that w[] stays in registers (a runtime index puts it in local memory).
#pragma unroll
  for (int l = 1; l < kMaxLevels; ++l) {
    if (l >= P.L) break;
    const int G = lay.BT >> l;
    s += w[l] * Cg[off + (p >> l) * G + (p2 >> l)];
    off += Layout::up8(G * G);
  }
  return s;
}

// Folds the coarse levels into level 1's grid, coarse to fine as the CPU
// kernel does: Cg_1[a][c] becomes sum_{l >= 1} w_l Cg_l[a >> (l-1)][c >> (l-1)]
// (the coarser grids stay), so that a score needs one coarse term
// (combine_folded) instead of L - 1. Every warp folds its own rows [a0, a0 + na)
// x columns [c0, c0 + nc) of level 1 (the warps' parts must be disjoint, and
// each warp reads only its own part afterwards), then __syncwarp. L > 1.
// w: the levels' weights, in registers (float[kMaxLevels]) or in shared memory (const float*).
template <class W>
__device__ inline void fold_levels(const Params& P, const Layout& lay, const W& w, float* Cg, int a0, int na, int c0,
                                   int nc) {
  const int G1 = lay.BT >> 1;
  for (int e = threadIdx.x & 31; e < na * nc; e += 32) {
    const int a = a0 + e / nc, c = c0 + e % nc;
    // From the coarsest level down: A_l = w_l Cg_l + up2(A_{l+1}).
    float acc = 0.0f;
#pragma unroll
    for (int l = kMaxLevels - 1; l >= 1; --l) {
      if (l >= P.L) continue;
      const int G = lay.BT >> l;
      acc += w[l] * Cg[lay.grid_off(l) + (a >> (l - 1)) * G + (c >> (l - 1))];
    }
    Cg[a * G1 + c] = acc;
  }
  __syncwarp();
}

// Combined score of local (p, p2) given the level-0 dot c0, the coarse levels
// folded into level 1's grid by fold_levels.
__device__ inline float combine_folded(const Params& P, const Layout& lay, float w0, const float* Cg, int p, int p2,
                                       float c0) {
  float s = w0 * c0;
  if (P.L > 1) s += Cg[(p >> 1) * (lay.BT >> 1) + (p2 >> 1)];
  return s;
}

// dSg_l = the 2^l x 2^l block sums of dS (a BT x BT tile at lay.lds, [query][key])
// for level l: a G x G grid (G = BT >> l) into out, row major at ldo.
template <class T>
__device__ void block_sums(const T* dS, T* out, int ldo, const Layout& lay, int l) {
  const int G = lay.BT >> l, s = 1 << l;
  int lg = 0;  // G = 2^lg (tiles are powers of two): shifts, not divisions
  while ((1 << lg) < G) ++lg;
  for (int e = threadIdx.x; e < G * G; e += blockDim.x) {
    const int a = e >> lg, c = e & (G - 1);
    T sum = 0;
    for (int x = 0; x < s; ++x)
      for (int y = 0; y < s; ++y) sum += dS[(a * s + x) * lay.lds + c * s + y];
    out[a * ldo + c] = sum;
  }
}

// out.p[l] rows of tile `tile` = w_l * the coarse accumulator of level l
// (Acc at lay.acc_row(l), lay.ld), for l = 1 .. L-1; rows outside the level are skipped.
template <class T>
__device__ void store_coarse(const Params& P, const Layout& lay, const T* Acc, const LevelPtrs<T>& out, const T* w,
                             int64_t bh, int tile) {
  const int dh = int(P.dh);
  for (int l = 1; l < P.L; ++l) {
    const int G = lay.BT >> l;
    const int64_t n = level_len(P.T, l), first = coarse_first(P, tile, l, lay.BT);
    const T* acc = Acc + lay.acc_row(l) * lay.ld;
    for (int e = threadIdx.x; e < G * dh; e += blockDim.x) {
      const int c = e / dh, d = e - c * dh;
      const int64_t row = first + c;
      if (row >= 0 && row < n) out.p[l][(bh * n + row) * P.dh + d] = w[l] * acc[c * lay.ld + d];
    }
  }
}

// --- host side ----------------------------------------------------------------

inline Params make_params(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
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
  const char* prefetch = std::getenv("HKT_CUDA_ATTN_PREFETCH");  // read at every call, as the other knobs
  P.prefetch = !(prefetch && std::string_view(prefetch) == "0");
  return P;
}

// Attribute A of device 0, read once.
template <cudaDeviceAttr A>
int device_attribute() {
  static const int v = [] {
    int x = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&x, A, 0));
    return x;
  }();
  return v;
}
// The device's shared memory per block for kernels that opt in, and its SMs.
inline int max_smem_optin() { return device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(); }
inline int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(); }
// Compute capability 9.0 exactly (H100, H200): the one that runs the sm_90a kernels (tools/cuda-lab/sm90a/).
inline bool wgmma_device() {
  return device_attribute<cudaDevAttrComputeCapabilityMajor>() == 9 &&
         device_attribute<cudaDevAttrComputeCapabilityMinor>() == 0;
}

template <class Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// Blocks of `threads` threads and `bytes` of dynamic shared memory that run at
// once on one SM (registers, shared memory and warps all counted), at least 1;
// call after allow_smem.
template <class Kernel>
int blocks_per_sm(Kernel kernel, int threads, size_t bytes) {
  int n = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, bytes));
  return n > 0 ? n : 1;
}

}  // namespace
}  // namespace hkt::cuda
