// A probe of the warpgroup products (kernels/cuda/wgmma.cuh) on one warpgroup,
// the same source in the emulator (test_emulator) and on a GPU
// (test_cuda_wgmma.cu, sm_90a): what the fused kernels assume of wgmma (the
// fragments, the gmma layout, the descriptors, the wait) against a product on
// the CPU. When the wgmma attention forward fails on a GPU, this says whether
// those assumptions are wrong or the kernel is.
//
// k_wgmma_probe, 128 threads, 2 * 64 * 8 floats of dynamic shared memory: A
// (64 x 8), A2 (64 x 8) and B (64 x 8), row major in a, a2, b, go to shared
// memory in the gmma layout; D (64 x 64) = A B^T from shared memory, then
// D += A2 B^T with A2 from registers (its fragments), and E (64 x 32) =
// A B[:32]^T. out gets, per thread, its 32 + 16 accumulator values as they are
// before the wait (phase 0) and after it (phase 1): 96 floats a thread;
// desc[0] gets thread 0's descriptor of B, desc[1] B's shared-state-space address.
#pragma once
#include <cstdint>

#include "cuda_kernels/wgmma_probe_check.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gmma_tile.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace hkt::cuda::probe {

__global__ void k_wgmma_probe(const float* a, const float* a2, const float* b, float* out, uint64_t* desc) {
  HKT_DYNAMIC_SHARED(raw);
  float* As = reinterpret_cast<float*>(raw);
  float* Bs = As + 64 * 8;
  const int tid = threadIdx.x;
  for (int e = tid; e < 64 * 8; e += 128) {
    As[gmma_at(e / 8, e % 8, 64)] = a[e];
    Bs[gmma_at(e / 8, e % 8, 64)] = b[e];
  }
  fence_proxy_async();
  __syncthreads();
  const int lane = tid & 31, g = lane >> 2, t = lane & 3, r0 = 16 * (tid >> 5) + g;
  const uint32_t af[4] = {__float_as_uint(a2[r0 * 8 + t]), __float_as_uint(a2[(r0 + 8) * 8 + t]),
                          __float_as_uint(a2[r0 * 8 + t + 4]), __float_as_uint(a2[(r0 + 8) * 8 + t + 4])};
  float d[8][4], e4[4][4];
  for (int c = 0; c < 8; ++c)
    for (int i = 0; i < 4; ++i) d[c][i] = -1.0f;
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i) e4[c][i] = -2.0f;
  if (tid == 0) {
    desc[0] = gmma_desc(Bs);
    desc[1] = smem_address(Bs);
  }
  wgmma_fence_operand(d);
  wgmma_fence_operand(e4);
  wgmma_fence();
  wgmma_ss<8>(d, gmma_desc(As), gmma_desc(Bs), false);
  wgmma_rs<8>(d, af, gmma_desc(Bs), true);
  wgmma_ss<4>(e4, gmma_desc(As), gmma_desc(Bs), false);
  wgmma_commit();
  // Phase 0 is what the registers hold before the wait: on a GPU anything
  // (the check does not look at it there), in the emulator the old values.
  for (int c = 0; c < 8; ++c)
    for (int i = 0; i < 4; ++i) out[tid * 96 + 4 * c + i] = d[c][i];
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i) out[tid * 96 + 32 + 4 * c + i] = e4[c][i];
  wgmma_wait<0>();
  wgmma_fence_operand(d);
  wgmma_fence_operand(e4);
  for (int c = 0; c < 8; ++c)
    for (int i = 0; i < 4; ++i) out[tid * 96 + 48 + 4 * c + i] = d[c][i];
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i) out[tid * 96 + 48 + 32 + 4 * c + i] = e4[c][i];
}

}  // namespace hkt::cuda::probe
