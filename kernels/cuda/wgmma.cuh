// Hopper's warpgroup matrix products (PTX wgmma.mma_async, sm_90a only), TF32
// inputs and float accumulators, for the kernels of tools/cuda-lab/sm90a/ (built
// for sm_90a alone; the host calls them on compute capability 9.0 only).
//
// A warpgroup (4 consecutive warps, 128 threads) issues one 64 x N x 8 product
// together; warp w % 4 holds rows 16 (w % 4) .. + 15 of A (when A comes from
// registers) and of D. The fragments, per warp, are those of mma.sync
// m16n8k8 (mma_tf32.cuh; CUTLASS's ALayout_64x8 and CLayout_64xN say the same),
// with g = lane / 4, t = lane % 4:
//   A: a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][t + 4], a3 = A[g + 8][t + 4]
//   D: d[c][e] = D[g + 8 (e >> 1)][8 c + 2 t + (e & 1)]
// B (and A, in the shared-memory form) is read from shared memory through a
// matrix descriptor, asynchronously: the product is done, and its registers
// and shared memory may be touched again, only after wgmma_wait. Order:
//   generic stores to the operands' shared memory, fence_proxy_async(), a
//   barrier; wgmma_fence() (after the last write to D's or A's registers);
//   the products; wgmma_commit(); wgmma_wait<0>() before D is read, A's
//   registers change, or the operands' shared memory is written again.
//
// Operands in shared memory take the K-major layout without swizzle (PTX
// ISA, "Shared Memory Matrix Layout"; CUTLASS's Layout_K_INTER_Atom and its
// canonical form ((8, m), (T, 2)) : ((1T, SBO), (1, LBO))): core matrices of
// 8 rows x 16 bytes (4 floats of the K dimension), each 128 contiguous bytes,
// rows 16 bytes apart. gmma_at() lays a tile of R rows (M or N) and C columns
// (K) out as C / 8 blocks of R x 8 floats, one per k step of 8, and in a
// block core matrix (r / 8, (c / 4) % 2) at 256 (r / 8) + 128 ((c / 4) % 2)
// bytes: LBO (to the next core matrix along K) 128, SBO (along M or N) 256.
// TF32 operands must be K-major on both sides (the PTX ISA allows no
// transpose for .tf32), so an operand whose contracted index is its row index
// (V in P V) is stored transposed.
//
// kernels/cuda_emu emulates the instructions per warp:
// products run at the wait, so a kernel that reads D before it, or changes
// the operands' shared memory or A's registers first, sees wrong results.
#pragma once
#include <cstdint>

#include "kernels/cuda/ptx.cuh"

namespace hkt::cuda {

// Float offset of element (r, c) in a gmma tile of R rows (see above).
__host__ __device__ constexpr int gmma_at(int r, int c, int R) {
  return (c >> 3) * (R * 8) + (r >> 3) * 64 + ((c >> 2) & 1) * 32 + (r & 7) * 4 + (c & 3);
}
constexpr uint32_t kGmmaLbo = 128, kGmmaSbo = 256;  // bytes

// The descriptor of the k step of a gmma tile that starts at p (16-byte
// aligned): bits 0-13 the address / 16, 16-29 LBO / 16, 32-45 SBO / 16, base
// offset (49-51) 0, swizzle (62-63) 0: none.
__device__ __forceinline__ uint64_t gmma_desc(const float* p) {
  return uint64_t((smem_address(p) >> 4) & 0x3FFFu) | (uint64_t(kGmmaLbo >> 4) << 16) |
         (uint64_t(kGmmaSbo >> 4) << 32);
}

// The instructions (wgmma_fence, wgmma_rs, wgmma_ss, wgmma_commit, wgmma_wait,
// fence_proxy_async, smem_address): ptx.cuh.

}  // namespace hkt::cuda
