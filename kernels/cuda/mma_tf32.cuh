// Warp-level tensor-core products with explicit fragments (PTX mma.sync
// m16n8k8, TF32 inputs, float accumulators), for kernels that keep their
// operands in registers (attention_fwd_mma.cu). The fragment layout is the PTX
// ISA's ("Matrix Fragments for mma.m16n8k8", .tf32); with g = lane / 4 and
// t = lane % 4:
//   A (16 x 8, row):  a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][t + 4], a3 = A[g + 8][t + 4]
//   B (8 x 8, col):   b0 = B[t][g], b1 = B[t + 4][g]
//   C, D (16 x 8):    c0 = C[g][2t], c1 = C[g][2t + 1], c2 = C[g + 8][2t], c3 = C[g + 8][2t + 1]
// 3xTF32 (x = hi + lo, a b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi) keeps float32
// accuracy, as tile_mm.cuh's WMMA path does. tests/cuda_emu emulates both
// instructions (HKT_CUDA_EMULATED).
#pragma once
#include <cstdint>

namespace hkt::cuda {

// cvt.rna.tf32.f32: the nearest TF32 value (ties away from zero), as bits.
__device__ __forceinline__ uint32_t to_tf32(float x) {
#ifdef HKT_CUDA_EMULATED
  return ::hkt_emu::tf32_rna_bits(x);
#else
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
#endif
}

// x = hi + lo in TF32 (lo carries the next 11 bits).
__device__ __forceinline__ void split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  hi = to_tf32(x);
  lo = to_tf32(x - __uint_as_float(hi));
}

// d += a b (one m16n8k8 product).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef HKT_CUDA_EMULATED
  ::hkt_emu::mma_m16n8k8_tf32(d, a, b);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// d += a b in 3xTF32: the small products first.
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const uint32_t (&a_hi)[4], const uint32_t (&a_lo)[4],
                                           const uint32_t (&b_hi)[2], const uint32_t (&b_lo)[2]) {
  mma_tf32(d, a_lo, b_hi);
  mma_tf32(d, a_hi, b_lo);
  mma_tf32(d, a_hi, b_hi);
}

}  // namespace hkt::cuda
