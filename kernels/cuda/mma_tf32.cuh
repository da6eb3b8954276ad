// Warp-level tensor-core products with explicit fragments (PTX mma.sync
// m16n8k8, TF32 inputs, float accumulators), for kernels that keep their
// operands in registers (tools/cuda-lab/attention_fwd_mma.cu). The fragment layout is the PTX
// ISA's ("Matrix Fragments for mma.m16n8k8", .tf32); with g = lane / 4 and
// t = lane % 4:
//   A (16 x 8, row):  a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][t + 4], a3 = A[g + 8][t + 4]
//   B (8 x 8, col):   b0 = B[t][g], b1 = B[t + 4][g]
//   C, D (16 x 8):    c0 = C[g][2t], c1 = C[g][2t + 1], c2 = C[g + 8][2t], c3 = C[g + 8][2t + 1]
// 3xTF32 (x = hi + lo, a b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi) keeps float32
// accuracy (split_tf32), as tile_mm.cuh's WMMA path does. kernels/cuda_emu emulates the
// instruction (its stand-in for ptx.cuh).
#pragma once
#include <cstdint>

#include "kernels/cuda/ptx.cuh"

namespace hkt::cuda {

// x = hi + lo in TF32, in three instructions: hi is x truncated to TF32 (its
// top 19 bits, so x - hi is exact), lo is x - hi truncated likewise. Rounding
// with cvt.rna.tf32.f32 instead costs three instructions per conversion (a
// test for inf and NaN, an add, a mask): 7 per split, in loops that split
// hundreds of values per tile pair (tools/cuda-lab/sass-mix). Error of a 3xTF32
// product: |lo| < 2^-10 |x|, lo loses at most 2^-10 of itself, and the
// dropped lo lo term is below 2^-20 |a b|: at most about 3 2^-20 |a b| in all
// (float32: 2^-24), far inside the 1e-4 the kernels are held to.
constexpr uint32_t kTf32Mask = 0xffffe000u;
__device__ __forceinline__ void split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  hi = __float_as_uint(x) & kTf32Mask;
  lo = __float_as_uint(x - __uint_as_float(hi)) & kTf32Mask;
}
__device__ __forceinline__ void split_tf32(float x, float& hi, float& lo) {
  uint32_t h, l;
  split_tf32(x, h, l);
  hi = __uint_as_float(h);
  lo = __uint_as_float(l);
}

// d += a b, one m16n8k8 product: mma_tf32 (ptx.cuh).

// acc[j] += a b[j] for j < NJ in 3xTF32 (the small products first), pass by
// pass: every acc[j] gets its a_lo b_hi[j] before any gets its a_hi b_lo[j].
// An mma waits for the one before it on the same accumulator; in this order
// NJ - 1 independent ones lie between them (three per accumulator in a row put
// none), as CUTLASS's 3xTF32 does.
template <int NJ>
__device__ __forceinline__ void mma_3xtf32_passes(float (&acc)[NJ][4], const uint32_t (&a_hi)[4],
                                                  const uint32_t (&a_lo)[4], const uint32_t (&b_hi)[NJ][2],
                                                  const uint32_t (&b_lo)[NJ][2]) {
#pragma unroll
  for (int j = 0; j < NJ; ++j) mma_tf32(acc[j], a_lo, b_hi[j]);
#pragma unroll
  for (int j = 0; j < NJ; ++j) mma_tf32(acc[j], a_hi, b_lo[j]);
#pragma unroll
  for (int j = 0; j < NJ; ++j) mma_tf32(acc[j], a_hi, b_hi[j]);
}

// This lane's place in the fragments of a block whose warps own 16 rows each
// of a 64-row tile: g = lane / 4, t = lane % 4, r0 = 16 (warp % 4) + g (its
// rows are r0 and r0 + 8). In blocks of 8 warps, warps w and w + 4 own the
// same rows and split the other dimension (warp / 4 says which half).
struct FragLane {
  int warp, g, t, r0;
};
__device__ __forceinline__ FragLane frag_lane() {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  return {warp, lane >> 2, lane & 3, (warp & 3) * 16 + (lane >> 2)};
}

// B fragment pair {B[e], B[e + step]}, split into TF32 hi/lo.
__device__ __forceinline__ void load_b_split(const float* B, int e, int step, uint32_t (&bh)[2], uint32_t (&bl)[2]) {
  split_tf32(B[e], bh[0], bl[0]);
  split_tf32(B[e + step], bh[1], bl[1]);
}

// The A fragment of the 16 x 8 block of A (row major at ld) whose first
// element is at A, split into TF32 hi/lo.
__device__ __forceinline__ void load_a_split(const float* A, int ld, uint32_t (&ah)[4], uint32_t (&al)[4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float* a = A + g * ld + t;
  split_tf32(a[0], ah[0], al[0]);
  split_tf32(a[8 * ld], ah[1], al[1]);
  split_tf32(a[4], ah[2], al[2]);
  split_tf32(a[8 * ld + 4], ah[3], al[3]);
}

// One float from shared memory, as one 4-byte load: nvcc merges two plain
// loads of adjacent floats into one LDS.64, which load_a_split_k must avoid.
// A volatile load is not merged, and keeps its address as a base plus an
// immediate offset (inline PTX would need each address in a register of its
// own: about 8 integer instructions per load, tools/cuda-lab/sass-mix).
__device__ __forceinline__ float lds_f32(const float* p) { return *static_cast<const volatile float*>(p); }

// load_a_split in the pair order of the k index (pair_tile.cuh): a0, a2 =
// columns 2t, 2t + 1 of row g, a1, a3 those of row g + 8. Four 4-byte loads
// (lds_f32): ptxas drops the hi parts' masks and hands the loaded registers
// to mma.sync as they are, which wants a0 .. a3 in four consecutive
// registers; an LDS.64 puts a0 next to a2, and the moves to regroup them cost
// more than the loads they save (tools/cuda-lab/sass-mix: 214 moves per tile product).
__device__ __forceinline__ void load_a_split_k(const float* A, int ld, uint32_t (&ah)[4], uint32_t (&al)[4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float* a = A + g * ld + 2 * t;
  split_tf32(lds_f32(a), ah[0], al[0]);
  split_tf32(lds_f32(a + 8 * ld), ah[1], al[1]);
  split_tf32(lds_f32(a + 1), ah[2], al[2]);
  split_tf32(lds_f32(a + 8 * ld + 1), ah[3], al[3]);
}

// Warp-wide products of a warp's 16 rows with shared-memory tiles (row major
// at ld; fragments split into TF32 hi/lo as they are loaded). With g, t as
// above, element e of acc[j] is row g + 8 (e >> 1), column 8j + 2t + (e & 1).
//
// acc[j] = A[16 rows] . B[8j .. 8j + 7]^T over DHP columns (A = the warp's
// first row; B's rows are the columns of the result). B already split: a
// split tile, warp_abt_split (pair_tile.cuh).
// The fragments come from load_a(kk, ah, al) (A's columns 8kk ..) and
// load_b(j, kk, bh, bl) (B's rows 8j .., columns 8kk ..), split, in matching
// k orders (warp_abt_with; warp_abt_split in pair_tile.cuh).
template <int DHP, int NT, class LoadA, class LoadB>
__device__ __forceinline__ void warp_abt_with(float (&acc)[NT][4], LoadA&& load_a, LoadB&& load_b) {
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < DHP / 8; ++kk) {
    uint32_t ah[4], al[4], bh[NT][2], bl[NT][2];
    load_a(kk, ah, al);
#pragma unroll
    for (int j = 0; j < NT; ++j) load_b(j, kk, bh[j], bl[j]);
    mma_3xtf32_passes(acc, ah, al, bh, bl);
  }
}
template <int DHP, int NT>
__device__ __forceinline__ void warp_abt(float (&acc)[NT][4], const float* A, const float* B, int ld) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  warp_abt_with<DHP, NT>(
      acc, [&](int kk, uint32_t(&ah)[4], uint32_t(&al)[4]) { load_a_split(A + 8 * kk, ld, ah, al); },
      [&](int j, int kk, uint32_t(&bh)[2], uint32_t(&bl)[2]) {  // B^T[t][g] = B[8j + g][8kk + t]
        load_b_split(B, (8 * j + g) * ld + 8 * kk + t, 4, bh, bl);
      });
}

// acc[n] += A B: A the warp's 16 rows of K columns in shared memory (row major
// at lda, the first row at A; lda even), B a K x DHP tile (row major at ldb).
// k in the pair order: B's rows 2t and 2t + 1 of each group of 8 are 2 ldb
// apart, which at ldb = mma_ld (4 banks per row) puts a warp's reads on 32
// banks; rows t and t + 4 (the PTX order) would be 4 apart, 2 lanes per bank
// (tests/test_smem_layouts.cpp).
template <int DHP, int K>
__device__ __forceinline__ void warp_ab(float (&acc)[DHP / 8][4], const float* A, int lda, const float* B, int ldb) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int kk = 0; kk < K / 8; ++kk) {
    uint32_t ah[4], al[4], bh[DHP / 8][2], bl[DHP / 8][2];
    load_a_split_k(A + 8 * kk, lda, ah, al);
#pragma unroll
    for (int n = 0; n < DHP / 8; ++n)  // b0 = B[8kk + 2t][8n + g], b1 = B[8kk + 2t + 1][8n + g]
      load_b_split(B, (8 * kk + 2 * t) * ldb + 8 * n + g, ldb, bh[n], bl[n]);
    mma_3xtf32_passes(acc, ah, al, bh, bl);
  }
}

// acc[n] += F B: F is the warp's 16 x 8NT matrix held as C fragments (f[j],
// the layout above), B a (8 NT) x DHP matrix whose B fragments load_b(j, n,
// bh, bl) gives: {B[8j + 2t][8n + g], B[8j + 2t + 1][8n + g]}, split. A C
// fragment holds columns 2t and 2t + 1 where an A fragment wants t and t + 4,
// so each group of 8 k indices is taken in the order 0, 2, 4, 6, 1, 3, 5, 7,
// in F and in B alike.
template <int DHP, int NT, class LoadB>
__device__ __forceinline__ void warp_fb_with(float (&acc)[DHP / 8][4], const float (&f)[NT][4], LoadB&& load_b) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    uint32_t ah[4], al[4];
    split_tf32(f[j][0], ah[0], al[0]);  // A[g][t]         = F[g][8j + 2t]
    split_tf32(f[j][2], ah[1], al[1]);  // A[g + 8][t]     = F[g + 8][8j + 2t]
    split_tf32(f[j][1], ah[2], al[2]);  // A[g][t + 4]     = F[g][8j + 2t + 1]
    split_tf32(f[j][3], ah[3], al[3]);  // A[g + 8][t + 4] = F[g + 8][8j + 2t + 1]
    uint32_t bh[DHP / 8][2], bl[DHP / 8][2];
#pragma unroll
    for (int n = 0; n < DHP / 8; ++n) load_b(j, n, bh[n], bl[n]);
    mma_3xtf32_passes(acc, ah, al, bh, bl);
  }
}

// warp_fb_with for B a row-major tile in shared memory at ld (B already
// split: warp_fb_split or warp_fb_pair, pair_tile.cuh).
template <int DHP, int NT>
__device__ __forceinline__ void warp_fb(float (&acc)[DHP / 8][4], const float (&f)[NT][4], const float* B, int ld) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  warp_fb_with<DHP, NT>(acc, f, [&](int j, int n, uint32_t(&bh)[2], uint32_t(&bl)[2]) {
    load_b_split(B, (8 * j + 2 * t) * ld + 8 * n + g, ld, bh, bl);  // B[8j + 2t][8n + g], then row 8j + 2t + 1
  });
}

}  // namespace hkt::cuda
