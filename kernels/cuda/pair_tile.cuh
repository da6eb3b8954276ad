// Shared-memory tiles stored split for 3xTF32 (the mma kernels' operands
// that several warps read), swizzled instead of padded, in two kinds:
//   - pair tiles: one LDS.128 gives a lane a whole B fragment, hi and lo, in
//     the registers mma.sync takes them from (the forward's K and V);
//   - split tiles (further below): hi and lo as two tiles, for operands read
//     both along k and down k (the backward's Q and dO, K and V).
// tests/test_smem_layouts.cpp checks the bank conflicts of every read below.
//
// A 16-byte chunk holds two values x, y of the same k pair, split:
// {hi(x), hi(y), lo(x), lo(y)}: b0, b1's hi parts are one aligned register
// pair, their lo parts the next (as mma.sync wants its B operand).
//   - Column pairs (B^T row-major, k along the row: K in S = Q K^T): chunk
//     (r, k) holds values (r, 2k), (r, 2k + 1). Lane (g, t) reads chunk
//     (8 j + g, 4 kk + t): k in the pair order (below).
//   - Row pairs (B row-major, k down the column: V in O += P V): chunk (m, c)
//     holds values (2m, c), (2m + 1, c). Lane (g, t) reads chunk
//     (4 j + t, 8 n + g): the keys 2t, 2t + 1 that warp_fb's P fragments hold.
// The pair order: b0, b1 are values 2t and 2t + 1 of each group of 8 k
// (where the PTX layout has t and t + 4); the A fragment must take the same
// order (load_a_pair, load_a_split_k, or warp_fb's C-fragment order). Any
// order of k inside a product gives the same sum up to rounding.
//
// Bank conflicts: a warp's LDS.128 runs in 4 phases of 8 lanes, and each
// phase must hit the 8 chunk positions of 128 bytes once. Row lengths are
// multiples of 128 bytes, so the swizzles (XOR on the low 3 bits of the chunk
// index, as CUTLASS swizzles its shared tiles) do it:
//   - column pairs: a phase is rows r, r + 1 (r even) times chunks 4 kk + t;
//     pair_swizzle(r) = ((r >> 1) & 3) << 1 ^ (r & 1) << 2 puts the two rows
//     in opposite halves;
//   - row pairs: a phase is chunk rows m = 4 j + t times columns g, g + 1 (g
//     even); the swizzle (m & 3) << 1 spreads the four t.
#pragma once
#include <cstdint>

#include "kernels/cuda/mma_tf32.cuh"

namespace hkt::cuda {

__host__ __device__ constexpr int pair_tile_floats(int rows, int dhp) { return rows * 2 * dhp; }

// Column pairs: float offset of chunk k (values 2k, 2k + 1) of row r; of value (r, c)'s hi part (lo: + 2).
__host__ __device__ __forceinline__ int pair_swizzle(int r) { return (((r >> 1) & 3) << 1) ^ ((r & 1) << 2); }
__host__ __device__ __forceinline__ int pcol_chunk(int r, int k, int dhp) {
  return r * 2 * dhp + ((k ^ pair_swizzle(r)) << 2);
}
__host__ __device__ __forceinline__ int pcol_at(int r, int c, int dhp) { return pcol_chunk(r, c >> 1, dhp) + (c & 1); }

// Row pairs: float offset of chunk (m, c) (values (2m, c), (2m + 1, c)); of value (r, c)'s hi part (lo: + 2).
__host__ __device__ __forceinline__ int prow_chunk(int m, int c, int dhp) {
  return m * 4 * dhp + ((c ^ ((m & 3) << 1)) << 2);
}
__host__ __device__ __forceinline__ int prow_at(int r, int c, int dhp) { return prow_chunk(r >> 1, c, dhp) + (r & 1); }

// Split tiles: the hi parts and the lo parts as two tiles of rows of DHP
// floats (no padding), value (r, c) at split_at(r, c) in each. Its 8-byte
// unit u = c >> 1 sits at unit u ^ (split_swizzle(r) << 2) of the row. For
// operands read both ways, where a pair tile suits only one: Q and dO in the
// backward (B of S^T = K Q^T, k along the row; B of dK += dS^T Q, k down the
// column), K in the query-side backward. Reads, both free of bank conflicts:
//   - k along the row (warp_abt_split): lane (g, t) reads the float2 of
//     values (8 j + g, 8 kk + 2t, + 1), the pair order, from each tile
//     (LDS.64: a half warp is rows g = 4q .. 4q + 3 times t; split_swizzle
//     differs on those 4 rows);
//   - k down the column (warp_fb_split): lane (g, t) reads value
//     (8 j + 2t + h, 8 n + g) from each tile (LDS.32: rows 2t + h have 4
//     different split_swizzle).
__host__ __device__ __forceinline__ int split_swizzle(int r) { return ((r >> 1) & 3) ^ ((r & 1) << 1); }
__host__ __device__ __forceinline__ int split_at(int r, int c, int dhp) {
  return r * dhp + ((((c >> 1) ^ (split_swizzle(r) << 2))) << 1) + (c & 1);
}

// How a loaded tile is stored (RowCopy::layout, attention_common.cuh): plain,
// split (hi tile at RowCopy::dst, lo tile at RowCopy::lo), or as a pair tile.
enum class TileLayout { plain, split, pair_cols, pair_rows };

// Stores x as value (r, c) of a split or pair tile (lo: the split tile's lo tile), split.
__device__ __forceinline__ void store_split(float* tile, float* lo_tile, TileLayout layout, int dhp, int r, int c,
                                            float x) {
  float hi, lo;
  split_tf32(x, hi, lo);
  if (layout == TileLayout::split) {
    tile[split_at(r, c, dhp)] = hi;
    lo_tile[split_at(r, c, dhp)] = lo;
    return;
  }
  const int at = layout == TileLayout::pair_cols ? pcol_at(r, c, dhp) : prow_at(r, c, dhp);
  tile[at] = hi;
  tile[at + 2] = lo;
}
__device__ __forceinline__ void store_split(float* tile, float* lo_tile, TileLayout layout, int dhp, int r, int c,
                                            float4 x) {
  store_split(tile, lo_tile, layout, dhp, r, c, x.x);
  store_split(tile, lo_tile, layout, dhp, r, c + 1, x.y);
  store_split(tile, lo_tile, layout, dhp, r, c + 2, x.z);
  store_split(tile, lo_tile, layout, dhp, r, c + 3, x.w);
}
// A thread's stores of whole tiles of BT rows, THREADS threads each taking
// column quad col = x % (DHP / 4) (values 4 col .. 4 col + 3) of some rows:
//   column pairs: rows r0 + STEP k (r0 = x / (DHP / 4), STEP = THREADS / (DHP / 4));
//   row pairs: rows 2 m and 2 m + 1 for m = r0 + STEP k, so that the thread
//   holds both values of each chunk it stores.
// STEP is a multiple of 8, so those rows share row r0's swizzle: the chunk
// offsets are worked out once, as in PairLane.
template <int DHP, int THREADS>
struct PairStore {
  static constexpr int PR = DHP / 4, STEP = THREADS / PR;
  static_assert(THREADS % PR == 0 && STEP % 8 == 0, "rows a multiple of 8 apart");
  int col, r0, cols[2], rows[4], split[2];
  __device__ explicit PairStore(int x) : col(x % PR), r0(x / PR) {
    for (int h = 0; h < 2; ++h) cols[h] = pcol_chunk(r0, 2 * col + h, DHP);
    for (int u = 0; u < 4; ++u) rows[u] = prow_chunk(r0, 4 * col + u, DHP);
    for (int h = 0; h < 2; ++h) split[h] = split_at(r0, 4 * col + 2 * h, DHP);
  }
  // x as values (r0 + STEP k, 4 col .. 4 col + 3) of a split tile (hi, lo): two units in each.
  __device__ __forceinline__ void split_at_k(float* hi, float* lo, int k, float4 x) const {
    float h[4], l[4];
    split_tf32(x.x, h[0], l[0]);
    split_tf32(x.y, h[1], l[1]);
    split_tf32(x.z, h[2], l[2]);
    split_tf32(x.w, h[3], l[3]);
    const int at = k * STEP * DHP;
    *reinterpret_cast<float2*>(hi + at + split[0]) = float2{h[0], h[1]};
    *reinterpret_cast<float2*>(hi + at + split[1]) = float2{h[2], h[3]};
    *reinterpret_cast<float2*>(lo + at + split[0]) = float2{l[0], l[1]};
    *reinterpret_cast<float2*>(lo + at + split[1]) = float2{l[2], l[3]};
  }
  // x as values (r0 + STEP k, 4 col .. 4 col + 3) of a column-pair tile: two chunks.
  __device__ __forceinline__ void cols_at(float* tile, int k, float4 x) const {
    float h[4], l[4];
    split_tf32(x.x, h[0], l[0]);
    split_tf32(x.y, h[1], l[1]);
    split_tf32(x.z, h[2], l[2]);
    split_tf32(x.w, h[3], l[3]);
    float* at = tile + k * STEP * 2 * DHP;
    *reinterpret_cast<float4*>(at + cols[0]) = float4{h[0], h[1], l[0], l[1]};
    *reinterpret_cast<float4*>(at + cols[1]) = float4{h[2], h[3], l[2], l[3]};
  }
  // x, y as values (2 m, 4 col ..) and (2 m + 1, 4 col ..), m = r0 + STEP k, of a row-pair tile: four chunks.
  __device__ __forceinline__ void rows_at(float* tile, int k, float4 x, float4 y) const {
    const float xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
    float* at = tile + k * STEP * 4 * DHP;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      float hx, lx, hy, ly;
      split_tf32(xs[u], hx, lx);
      split_tf32(ys[u], hy, ly);
      *reinterpret_cast<float4*>(at + rows[u]) = float4{hx, hy, lx, ly};
    }
  }
};

// Rows [0, ROWS) x columns [0, DHP) of a plain tile at ld (staged as
// loaded: cp.async's landing place) into the pre-split tile dst (Layout
// pair_cols or pair_rows; split: dst the hi parts, lo the lo parts), by a
// block of THREADS threads, each its PairStore rows and columns. No barrier.
template <int DHP, int ROWS, int THREADS, TileLayout Layout>
__device__ __forceinline__ void tile_from_staged(const float* src, int ld, float* dst, float* lo = nullptr) {
  using Store = PairStore<DHP, THREADS>;
  const Store st(threadIdx.x);
  const float* x = src + 4 * st.col;
  const auto row = [&](int r) { return *reinterpret_cast<const float4*>(x + r * ld); };
  if constexpr (Layout == TileLayout::pair_rows) {
#pragma unroll
    for (int k = 0; k < ROWS / 2 / Store::STEP; ++k) {
      const int r = 2 * (st.r0 + k * Store::STEP);
      st.rows_at(dst, k, row(r), row(r + 1));
    }
  } else {
    static_assert(Layout == TileLayout::pair_cols || Layout == TileLayout::split, "a pre-split layout");
#pragma unroll
    for (int k = 0; k < ROWS / Store::STEP; ++k) {
      if constexpr (Layout == TileLayout::pair_cols)
        st.cols_at(dst, k, row(st.r0 + k * Store::STEP));
      else
        st.split_at_k(dst, lo, k, row(st.r0 + k * Store::STEP));
    }
  }
}

// A lane's offsets into pair tiles of DHP values, worked out once (a swizzle
// per read costs about 4 integer instructions; here every read is a base and
// a compile-time offset). Lane g = lane / 4, t = lane % 4:
//   col[p]: column pairs, chunk (g, 4p + t); chunk (8 j + g, 4 kk + t) is at
//           col_at(j, kk) (rows 8 j + x share row x's swizzle, chunks 8 m + y
//           chunk y's);
//   row:    row pairs, chunk (t, g); chunk (4 j + t, 8 n + g) is at row_at(j, n).
template <int DHP>
struct PairLane {
  int col[2], row;
  __host__ __device__ explicit PairLane(int lane) {
    const int g = lane >> 2, t = lane & 3;
    col[0] = pcol_chunk(g, t, DHP);
    col[1] = pcol_chunk(g, 4 + t, DHP);
    row = prow_chunk(t, g, DHP);
  }
  __host__ __device__ int col_at(int j, int kk) const { return 16 * DHP * j + 32 * (kk >> 1) + col[kk & 1]; }
  __host__ __device__ int row_at(int j, int n) const { return 16 * DHP * j + 32 * n + row; }
};

// One chunk as a B fragment's hi and lo registers.
__device__ __forceinline__ void load_b_chunk(const float* at, uint32_t (&bh)[2], uint32_t (&bl)[2]) {
  const float4 p = *reinterpret_cast<const float4*>(at);
  bh[0] = __float_as_uint(p.x);
  bh[1] = __float_as_uint(p.y);
  bl[0] = __float_as_uint(p.z);
  bl[1] = __float_as_uint(p.w);
}

// A fragment of rows row0 .. row0 + 15 (row0 a multiple of 8), columns
// 8 kk .. 8 kk + 7, of a column-pair tile, in the pair order (a0, a2 =
// columns 2t, 2t + 1 of row g; a1, a3 of row g + 8). Two LDS.128.
template <int DHP>
__device__ __forceinline__ void load_a_pair(const float* tile, const PairLane<DHP>& pl, int row0, int kk,
                                            uint32_t (&ah)[4], uint32_t (&al)[4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float4 p = *reinterpret_cast<const float4*>(tile + 2 * DHP * row0 + pl.col_at(h, kk));
    ah[h] = __float_as_uint(p.x);
    ah[h + 2] = __float_as_uint(p.y);
    al[h] = __float_as_uint(p.z);
    al[h + 2] = __float_as_uint(p.w);
  }
}

// warp_fb (mma_tf32.cuh) with B a row-pair tile: one LDS.128 per B fragment.
template <int DHP, int NT>
__device__ __forceinline__ void warp_fb_pair(float (&acc)[DHP / 8][4], const float (&f)[NT][4], const float* B,
                                             const PairLane<DHP>& pl) {
  warp_fb_with<DHP, NT>(acc, f, [&](int j, int n, uint32_t(&bh)[2], uint32_t(&bl)[2]) {
    load_b_chunk(B + pl.row_at(j, n), bh, bl);
  });
}

// A lane's offsets into split tiles of DHP values (as PairLane): g = lane / 4, t = lane % 4,
//   k[b]:  values (g, 8 b + 2t, + 1); values (8 j + g, 8 kk + 2t, + 1) are at k_at(j, kk);
//   fb[b]: value (2t, 8 b + g); value (8 j + 2t + h, 8 n + g) is at fb_at(j, n, h): row
//          2t + 1's swizzle is row 2t's with bit 1 flipped, so its offsets are fb[b ^ 2] + DHP.
// (Units 16 m + y share unit y's swizzle: it only touches bits 2 and 3.)
template <int DHP>
struct SplitLane {
  int k[4], fb[4];
  __host__ __device__ explicit SplitLane(int lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int b = 0; b < 4; ++b) {
      k[b] = split_at(g, 8 * b + 2 * t, DHP);
      fb[b] = split_at(2 * t, 8 * b + g, DHP);
    }
  }
  __host__ __device__ int k_at(int j, int kk) const { return 8 * DHP * j + 32 * (kk >> 2) + k[kk & 3]; }
  __host__ __device__ int fb_at(int j, int n, int h) const {
    return 8 * DHP * j + 32 * (n >> 2) + (h ? DHP + fb[(n & 3) ^ 2] : fb[n & 3]);
  }
};

// acc[j] = A[16 rows] . B[8j .. 8j + 7]^T over DHP columns (warp_abt,
// mma_tf32.cuh), B a split tile (hi, lo) whose first row is B's, A row major
// at lda (split here). k in the pair order: A's too (load_a_split_k).
template <int DHP, int NT>
__device__ __forceinline__ void warp_abt_split(float (&acc)[NT][4], const float* A, int lda, const float* B_hi,
                                               const float* B_lo, const SplitLane<DHP>& sl) {
  warp_abt_with<DHP, NT>(
      acc, [&](int kk, uint32_t(&ah)[4], uint32_t(&al)[4]) { load_a_split_k(A + 8 * kk, lda, ah, al); },
      [&](int j, int kk, uint32_t(&bh)[2], uint32_t(&bl)[2]) {
        const float2 h = *reinterpret_cast<const float2*>(B_hi + sl.k_at(j, kk));
        const float2 l = *reinterpret_cast<const float2*>(B_lo + sl.k_at(j, kk));
        bh[0] = __float_as_uint(h.x);
        bh[1] = __float_as_uint(h.y);
        bl[0] = __float_as_uint(l.x);
        bl[1] = __float_as_uint(l.y);
      });
}

// warp_fb (mma_tf32.cuh) with B a split tile (hi, lo) whose first row is B's.
template <int DHP, int NT>
__device__ __forceinline__ void warp_fb_split(float (&acc)[DHP / 8][4], const float (&f)[NT][4], const float* B_hi,
                                              const float* B_lo, const SplitLane<DHP>& sl) {
  warp_fb_with<DHP, NT>(acc, f, [&](int j, int n, uint32_t(&bh)[2], uint32_t(&bl)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      bh[h] = __float_as_uint(B_hi[sl.fb_at(j, n, h)]);
      bl[h] = __float_as_uint(B_lo[sl.fb_at(j, n, h)]);
    }
  });
}

}  // namespace hkt::cuda
