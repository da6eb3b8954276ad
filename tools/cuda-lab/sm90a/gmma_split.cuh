// Stores of 64-row tiles into gmma tiles (kernels/cuda/wgmma.cuh, gmma_at),
// split into TF32 hi and lo, for the sm_90a kernels (attention_fwd_wgmma.cu,
// attention_bwd_wgmma.cu); the store pattern is gmma_tile.cuh's.
#pragma once
#include <cstdint>

#include "tools/cuda-lab/attention_mma.hpp"
#include "kernels/cuda/gmma_tile.cuh"
#include "kernels/cuda/mma_tf32.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace hkt::cuda {
namespace {

constexpr int kWgBT = kMmaTile;  // the rows of a query or key tile: a warpgroup's M

// Rows [first, first + 64) of `rows` (dh floats each; zero outside [0, n) and
// in columns dh .. DHP - 1), split into TF32 hi and lo, into gmma tiles, as
// they are (64 rows of DHP) or Transposed (DHP rows of 64 key slots), as
// gmma_tile.cuh lays the stores out: float4s, no bank conflicts. THREADS
// threads take part, tid the caller's index among them. Each thread loads its
// float4s before it stores any.
template <int DHP, bool Transposed, int THREADS>
__device__ __forceinline__ void load_gmma_split(int tid, const float* rows, int64_t first, int64_t n, int dh,
                                                float* hi, float* lo) {
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
    constexpr int UNITS = kWgBT * C4 / 4, PER = (UNITS + THREADS - 1) / THREADS;  // 4 x 4 blocks
    static_assert(C4 >= 8 && UNITS % 32 == 0, "units of 8 column chunks, whole warps");
    float4 x[PER][4];
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int e = tid + i * THREADS;
      if (UNITS % THREADS != 0 && e >= UNITS) break;
      const GmmaColsUnit u = gmma_cols_unit(e, C4);
#pragma unroll
      for (int q = 0; q < 4; ++q) x[i][q] = load(first + u.j0 + 2 * q, u.d0);
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int e = tid + i * THREADS;
      if (UNITS % THREADS != 0 && e >= UNITS) break;
      const GmmaColsUnit u = gmma_cols_unit(e, C4);
      // Column (s + rot) & 3 of the block for store s: rotate each row's 4 values left by rot.
      float v[4][4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float a[4] = {x[i][q].x, x[i][q].y, x[i][q].z, x[i][q].w};
        float b[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) b[c] = u.rot & 1 ? a[(c + 1) & 3] : a[c];
#pragma unroll
        for (int c = 0; c < 4; ++c) v[q][c] = u.rot & 2 ? b[(c + 2) & 3] : b[c];
      }
      const int k0 = key_slot(u.j0);
#pragma unroll
      for (int st = 0; st < 4; ++st)
        store(gmma_at(u.d0 + ((st + u.rot) & 3), k0, DHP), float4{v[0][st], v[1][st], v[2][st], v[3][st]});
    }
  } else {
    constexpr int UNITS = kWgBT * C4, PER = (UNITS + THREADS - 1) / THREADS;
    float4 x[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int e = tid + i * THREADS;
      if (UNITS % THREADS != 0 && e >= UNITS) break;
      const GmmaRowsUnit u = gmma_rows_unit(e, C4);
      x[i] = load(first + u.r, u.c);
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int e = tid + i * THREADS;
      if (UNITS % THREADS != 0 && e >= UNITS) break;
      const GmmaRowsUnit u = gmma_rows_unit(e, C4);
      store(gmma_at(u.r, u.c, kWgBT), x[i]);
    }
  }
}

// The descriptor of k step kk of a gmma tile of R rows whose step 0 is at desc.
__device__ __forceinline__ uint64_t gmma_step(uint64_t desc, int kk, int R) {
  return desc + uint64_t(kk * R * 8 * int(sizeof(float)) >> 4);
}

// d = A B^T in 3xTF32, A and B split gmma tiles of R rows (their hi and lo
// descriptors), contracted over KS k steps of 8: per step A lo B hi, A hi B
// lo, A hi B hi (the small products first). Issued, not committed: the
// caller commits and waits.
template <int NT, int KS, int R>
__device__ __forceinline__ void gmma_abt_3x(float (&d)[NT][4], uint64_t ah, uint64_t al, uint64_t bh, uint64_t bl) {
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    const uint64_t a_h = gmma_step(ah, kk, R), a_l = gmma_step(al, kk, R);
    const uint64_t b_h = gmma_step(bh, kk, R), b_l = gmma_step(bl, kk, R);
    wgmma_ss<NT>(d, a_l, b_h, kk > 0);
    wgmma_ss<NT>(d, a_h, b_l, true);
    wgmma_ss<NT>(d, a_h, b_h, true);
  }
}

// A warpgroup's score fragments split into TF32 hi and lo A fragments, for
// gmma_frag_b_3x. wgmma reads them asynchronously, until the caller's wait:
// the caller holds them (one per product in flight), not the helper.
template <int NT>
struct GmmaAFrags {
  uint32_t h[NT][4], l[NT][4];
};

// d += F B in 3xTF32, F the warpgroup's score fragments (element e of [j]:
// row r0 + 8 (e >> 1), column 8j + 2t + (e & 1)), B a split gmma tile of R
// rows whose 8-row steps follow F's columns in key_slot order. Group j of F's
// columns is one A fragment (a0, a2 = columns 2t, 2t + 1 of row g; a1, a3 of
// row g + 8), split into a. Issued and committed; until the caller's wait, a
// and B's tile must not change, nor d be read.
template <int NT, int ND, int R>
__device__ __forceinline__ void gmma_frag_b_3x(float (&d)[ND][4], const float (&f)[NT][4], GmmaAFrags<NT>& a,
                                               uint64_t bh, uint64_t bl) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    split_tf32(f[j][0], a.h[j][0], a.l[j][0]);
    split_tf32(f[j][2], a.h[j][1], a.l[j][1]);
    split_tf32(f[j][1], a.h[j][2], a.l[j][2]);
    split_tf32(f[j][3], a.h[j][3], a.l[j][3]);
  }
  wgmma_fence_operand(d);
  wgmma_fence();
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const uint64_t b_h = gmma_step(bh, j, R), b_l = gmma_step(bl, j, R);
    wgmma_rs<ND>(d, a.l[j], b_h, true);
    wgmma_rs<ND>(d, a.h[j], b_l, true);
    wgmma_rs<ND>(d, a.h[j], b_h, true);
  }
  wgmma_commit();
}

}  // namespace
}  // namespace hkt::cuda
