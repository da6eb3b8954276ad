// Block-wide tile products in shared memory for the fused attention
// (attention.cu): C = [C +] op(A) op(B), called by every thread of a block,
// no barrier inside (the caller separates producers and consumers).
//
// float: tensor cores through WMMA m16n16k8 with the 3xTF32 split
// (x = hi + lo, split_tf32 in mma_tf32.cuh; a b ~ a_hi b_hi + a_hi b_lo
// + a_lo b_hi), which keeps float32 accuracy (relative error ~1e-6 against a
// float32 product, where one TF32 product alone gives ~1e-3): the kernels are
// checked against the CPU at 1e-4. Shapes that are not multiples of 16 x 16 x 8
// (the coarsest levels' small grids) and double take the plain loop below.
//
// Layouts: A is M x K, ARow ? A[m * lda + k] : A[k * lda + m];
//          B is K x N, BRow ? B[k * ldb + n] : B[n * ldb + k];
//          C is M x N, C[m * ldc + n].
// WMMA needs lda, ldb, ldc multiples of 4 and 32-byte aligned tile corners:
// attention.cu's layouts round every buffer and leading dimension for that.
#pragma once
#include <mma.h>

#include <type_traits>

#include "kernels/cuda/mma_tf32.cuh"

namespace hkt::cuda {

template <bool ARow, bool BRow, class T>
__device__ void tile_mm_loop(T* C, int ldc, const T* A, int lda, const T* B, int ldb, int M, int N, int K,
                             bool accumulate) {
  for (int e = threadIdx.x; e < M * N; e += blockDim.x) {
    const int m = e / N, n = e - m * N;
    T s = accumulate ? C[m * ldc + n] : T(0);
    for (int k = 0; k < K; ++k) s += (ARow ? A[m * lda + k] : A[k * lda + m]) * (BRow ? B[k * ldb + n] : B[n * ldb + k]);
    C[m * ldc + n] = s;
  }
}

namespace wmma_tf32 {
namespace wmma = nvcuda::wmma;

template <class Frag>
__device__ inline void split(Frag& hi, Frag& lo) {
#pragma unroll
  for (int i = 0; i < hi.num_elements; ++i) {
    float h, l;
    split_tf32(hi.x[i], h, l);
    hi.x[i] = h;
    lo.x[i] = l;
  }
}

// c += op(A)[m0:m0+16, :K] op(B)[:K, n0:n0+16] in 3xTF32 (K a multiple of 8).
// The three products of a k step go to three accumulators (hi hi into c, the
// two small ones into their own, added at the end): an mma waits for the one
// before it on the same accumulator, and one accumulator made a chain of
// 3 K / 8 of them with nothing between; now three chains of K / 8 interleave.
template <bool ARow, bool BRow>
__device__ void mma_k(wmma::fragment<wmma::accumulator, 16, 16, 8, float>& c, const float* A, int lda, const float* B,
                      int ldb, int m0, int n0, int K) {
  using ALay = std::conditional_t<ARow, wmma::row_major, wmma::col_major>;
  using BLay = std::conditional_t<BRow, wmma::row_major, wmma::col_major>;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> lo_hi, hi_lo;
  wmma::fill_fragment(lo_hi, 0.0f);
  wmma::fill_fragment(hi_lo, 0.0f);
  for (int k0 = 0; k0 < K; k0 += 8) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, ALay> a_hi, a_lo;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, BLay> b_hi, b_lo;
    wmma::load_matrix_sync(a_hi, ARow ? A + m0 * lda + k0 : A + k0 * lda + m0, lda);
    wmma::load_matrix_sync(b_hi, BRow ? B + k0 * ldb + n0 : B + n0 * ldb + k0, ldb);
    split(a_hi, a_lo);
    split(b_hi, b_lo);
    wmma::mma_sync(lo_hi, a_lo, b_hi, lo_hi);
    wmma::mma_sync(hi_lo, a_hi, b_lo, hi_lo);
    wmma::mma_sync(c, a_hi, b_hi, c);
  }
#pragma unroll
  for (int i = 0; i < c.num_elements; ++i) c.x[i] += lo_hi.x[i] + hi_lo.x[i];
}

template <bool ARow, bool BRow>
__device__ void mm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, int M, int N, int K,
                   bool accumulate) {
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5, tn = N / 16, tiles = (M / 16) * tn;
  for (int t = warp; t < tiles; t += warps) {
    const int m0 = (t / tn) * 16, n0 = (t - (t / tn) * tn) * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
    if (accumulate)
      wmma::load_matrix_sync(c, C + m0 * ldc + n0, ldc, wmma::mem_row_major);
    else
      wmma::fill_fragment(c, 0.0f);
    mma_k<ARow, BRow>(c, A, lda, B, ldb, m0, n0, K);
    wmma::store_matrix_sync(C + m0 * ldc + n0, c, ldc, wmma::mem_row_major);
  }
}

// Accumulator tiles of one M x N float product kept in registers across calls
// (instead of a shared-memory C loaded and stored by every call): warp w owns
// the 16 x 16 tiles w, w + warps, ..., at most NF of them (the launcher checks
// (M / 16) (N / 16) <= NF * warps). AccFrags<0> is empty: the shared-memory path.
template <int NF>
struct AccFrags {
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> f[NF];
  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < NF; ++i) wmma::fill_fragment(f[i], 0.0f);
  }
};
template <>
struct AccFrags<0> {
  __device__ void zero() {}
};

// Calls f(i, m0, n0) for each 16 x 16 tile (m0, n0) of an M x N product that
// this warp owns as AccFrags' fragment i (unrolled: i is a constant after inlining).
template <int NF, class F>
__device__ __forceinline__ void owned_tiles(int M, int N, F&& f) {
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5, tn = N / 16, tiles = (M / 16) * tn;
#pragma unroll
  for (int i = 0; i < NF; ++i) {
    const int t = warp + i * warps;
    if (t < tiles) f(i, (t / tn) * 16, (t % tn) * 16);
  }
}

// acc += op(A) op(B); M, N multiples of 16, K of 8; layouts as in mm().
template <bool ARow, bool BRow, int NF>
__device__ void mm_acc(AccFrags<NF>& acc, const float* A, int lda, const float* B, int ldb, int M, int N, int K) {
  owned_tiles<NF>(M, N, [&](int i, int m0, int n0) { mma_k<ARow, BRow>(acc.f[i], A, lda, B, ldb, m0, n0, K); });
}

// C = acc (row major, in shared memory), the tiles as mm_acc owns them.
template <int NF>
__device__ void store_acc(float* C, int ldc, const AccFrags<NF>& acc, int M, int N) {
  owned_tiles<NF>(M, N, [&](int i, int m0, int n0) {
    wmma::store_matrix_sync(C + m0 * ldc + n0, acc.f[i], ldc, wmma::mem_row_major);
  });
}
}  // namespace wmma_tf32

template <bool ARow, bool BRow, class T>
__device__ void tile_mm(T* C, int ldc, const T* A, int lda, const T* B, int ldb, int M, int N, int K,
                        bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (M % 16 == 0 && N % 16 == 0 && K % 8 == 0) {
      wmma_tf32::mm<ARow, BRow>(C, ldc, A, lda, B, ldb, M, N, K, accumulate);
      return;
    }
  }
  tile_mm_loop<ARow, BRow>(C, ldc, A, lda, B, ldb, M, N, K, accumulate);
}

}  // namespace hkt::cuda
