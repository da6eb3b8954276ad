// Stores of 64-row tiles into gmma tiles (kernels/cuda/wgmma.cuh, gmma_at),
// split into TF32 hi and lo, for the sm_90a kernels (attention_fwd_wgmma.cu,
// attention_bwd_wgmma.cu); the store pattern is gmma_tile.cuh's.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_mma.hpp"
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

}  // namespace
}  // namespace hkt::cuda
