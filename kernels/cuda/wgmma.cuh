// Hopper's warpgroup matrix products (PTX wgmma.mma_async, sm_90a only), TF32
// inputs and float accumulators, for the kernels of kernels/cuda/sm90a/ (built
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
// tests/cuda_emu emulates the instructions per warp (HKT_CUDA_EMULATED):
// products run at the wait, so a kernel that reads D before it, or changes
// the operands' shared memory or A's registers first, sees wrong results.
#pragma once
#include <cstdint>

namespace hkt::cuda {

// Float offset of element (r, c) in a gmma tile of R rows (see above).
__host__ __device__ constexpr int gmma_at(int r, int c, int R) {
  return (c >> 3) * (R * 8) + (r >> 3) * 64 + ((c >> 2) & 1) * 32 + (r & 7) * 4 + (c & 3);
}
constexpr uint32_t kGmmaLbo = 128, kGmmaSbo = 256;  // bytes

// The shared-state-space address of a pointer into shared memory.
__device__ __forceinline__ uint32_t smem_address(const void* p) {
#ifdef HKT_CUDA_EMULATED
  return ::hkt_emu::shared_address(p);
#else
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#endif
}

// The descriptor of the k step of a gmma tile that starts at p (16-byte
// aligned): bits 0-13 the address / 16, 16-29 LBO / 16, 32-45 SBO / 16, base
// offset (49-51) 0, swizzle (62-63) 0: none.
__device__ __forceinline__ uint64_t gmma_desc(const float* p) {
  return uint64_t((smem_address(p) >> 4) & 0x3FFFu) | (uint64_t(kGmmaLbo >> 4) << 16) |
         (uint64_t(kGmmaSbo >> 4) << 32);
}

#if defined(HKT_CUDA_EMULATED)
#define HKT_WGMMA_EMULATED 1
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HKT_WGMMA_PTX 1
#endif

// Orders this thread's generic shared-memory stores before the async proxy's
// reads (wgmma's operands); a barrier then makes every thread's visible.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(HKT_WGMMA_PTX)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// wgmma.fence: orders earlier register writes (D, A) before the products.
__device__ __forceinline__ void wgmma_fence() {
#if defined(HKT_WGMMA_EMULATED)
  ::hkt_emu::wgmma_fence();
#elif defined(HKT_WGMMA_PTX)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(HKT_WGMMA_EMULATED)
  ::hkt_emu::wgmma_commit();
#elif defined(HKT_WGMMA_PTX)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most Pending committed groups of products are in flight.
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(HKT_WGMMA_EMULATED)
  ::hkt_emu::wgmma_wait(Pending);
#elif defined(HKT_WGMMA_PTX)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

// Keeps the compiler from moving reads or writes of an accumulator across the
// asynchronous products (CUTLASS's warpgroup_fence_operand).
template <int NC>
__device__ __forceinline__ void wgmma_fence_operand(float (&d)[NC][4]) {
#if defined(HKT_WGMMA_PTX)
#pragma unroll
  for (int c = 0; c < NC; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[c][e])::"memory");
#else
  (void)d;
#endif
}

#define HKT_WGMMA_D16                                                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define HKT_WGMMA_D32                                                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define HKT_WGMMA_OUT16(d)                                                                                        \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),       \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),   \
      "+f"(d[3][2]), "+f"(d[3][3])
#define HKT_WGMMA_OUT32(d)                                                                                        \
  HKT_WGMMA_OUT16(d), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]),  \
      "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]),   \
      "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])

// D (64 x N) = A B + (scale_d ? D : 0), N = 8 NC in {32, 64}: A (64 x 8) from
// this warp's registers (its 16 rows), B (N x 8, K-major) at desc_b.
template <int NC>
__device__ __forceinline__ void wgmma_rs(float (&d)[NC][4], const uint32_t (&a)[4], uint64_t desc_b, bool scale_d) {
  static_assert(NC == 4 || NC == 8, "N is 32 or 64");
#if defined(HKT_WGMMA_EMULATED)
  ::hkt_emu::wgmma_tf32(&d[0][0], 8 * NC, a, 0, desc_b, scale_d);
#elif defined(HKT_WGMMA_PTX)
  if constexpr (NC == 8) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " HKT_WGMMA_D32
        ", {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : HKT_WGMMA_OUT32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(scale_d)));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 " HKT_WGMMA_D16
        ", {%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
        : HKT_WGMMA_OUT16(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(scale_d)));
  }
#else
  (void)d, (void)a, (void)desc_b, (void)scale_d;
  __trap();
#endif
}

// D (64 x N) = A B + (scale_d ? D : 0), A (64 x 8, K-major) at desc_a.
template <int NC>
__device__ __forceinline__ void wgmma_ss(float (&d)[NC][4], uint64_t desc_a, uint64_t desc_b, bool scale_d) {
  static_assert(NC == 4 || NC == 8, "N is 32 or 64");
#if defined(HKT_WGMMA_EMULATED)
  ::hkt_emu::wgmma_tf32(&d[0][0], 8 * NC, nullptr, desc_a, desc_b, scale_d);
#elif defined(HKT_WGMMA_PTX)
  if constexpr (NC == 8) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " HKT_WGMMA_D32 ", %32, %33, p, 1, 1;\n}\n"
        : HKT_WGMMA_OUT32(d)
        : "l"(desc_a), "l"(desc_b), "r"(int(scale_d)));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 " HKT_WGMMA_D16 ", %16, %17, p, 1, 1;\n}\n"
        : HKT_WGMMA_OUT16(d)
        : "l"(desc_a), "l"(desc_b), "r"(int(scale_d)));
  }
#else
  (void)d, (void)desc_a, (void)desc_b, (void)scale_d;
  __trap();
#endif
}

#undef HKT_WGMMA_D16
#undef HKT_WGMMA_D32
#undef HKT_WGMMA_OUT16
#undef HKT_WGMMA_OUT32

}  // namespace hkt::cuda
