// Block-wide tile products on PTX mma.sync fragments, for the `mma` kernels'
// coarse levels: C = [C +] op(A) op(B), the operands in shared memory,
// layouts as in tile_mm.cuh (A is M x K, ARow ? A[m * lda + k] : A[k * lda + m];
// B is K x N, BRow ? B[k * ldb + n] : B[n * ldb + k]; C row major at ldc).
// Called by every thread of a block, no barrier inside.
//
// Where tile_mm's WMMA path loads each fragment through a generic pointer and
// runs its k loop one step at a time, this reads the fragments' elements
// straight from shared memory, splits them into TF32 hi/lo as it goes
// (split_tf32) and adds the three 3xTF32 terms pass by pass over the two
// accumulators of a 16 x 16 output tile (mma_3xtf32_passes). Shapes that
// are not multiples of 16 x 16 x 8 (the grids of level 3 and above) take
// tile_mm.
#pragma once
#include <cstdint>

#include "kernels/cuda/mma_tf32.cuh"
#include "kernels/cuda/tile_mm.cuh"

namespace hkt::cuda {

template <bool ARow, bool BRow>
__device__ void tile_mma(float* C, int ldc, const float* A, int lda, const float* B, int ldb, int M, int N, int K,
                         bool accumulate) {
  if (M % 16 != 0 || N % 16 != 0 || K % 8 != 0) {
    tile_mm<ARow, BRow>(C, ldc, A, lda, B, ldb, M, N, K, accumulate);
    return;
  }
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const auto a_at = [&](int m, int k) { return ARow ? A[m * lda + k] : A[k * lda + m]; };
  const auto b_at = [&](int k, int n) { return BRow ? B[k * ldb + n] : B[n * ldb + k]; };
  const int tn = N / 16, tiles = (M / 16) * tn;
  for (int tile = warp; tile < tiles; tile += warps) {
    const int m0 = (tile / tn) * 16, n0 = (tile - (tile / tn) * tn) * 16;
    // acc[j]: rows m0 + g (+ 8 for elements 2, 3), columns n0 + 8j + 2t (+ 1 for odd elements)
    float acc[2][4];
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[j][e] = accumulate ? C[(m0 + g + 8 * (e >> 1)) * ldc + n0 + 8 * j + 2 * t + (e & 1)] : 0.0f;
#pragma unroll 2
    for (int k0 = 0; k0 < K; k0 += 8) {
      uint32_t ah[4], al[4], bh[2][2], bl[2][2];
      split_tf32(a_at(m0 + g, k0 + t), ah[0], al[0]);  // the fragment layout of mma_tf32.cuh
      split_tf32(a_at(m0 + g + 8, k0 + t), ah[1], al[1]);
      split_tf32(a_at(m0 + g, k0 + t + 4), ah[2], al[2]);
      split_tf32(a_at(m0 + g + 8, k0 + t + 4), ah[3], al[3]);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        split_tf32(b_at(k0 + t, n0 + 8 * j + g), bh[j][0], bl[j][0]);
        split_tf32(b_at(k0 + t + 4, n0 + 8 * j + g), bh[j][1], bl[j][1]);
      }
      mma_3xtf32_passes(acc, ah, al, bh, bl);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) C[(m0 + g + 8 * (e >> 1)) * ldc + n0 + 8 * j + 2 * t + (e & 1)] = acc[j][e];
  }
}

}  // namespace hkt::cuda
