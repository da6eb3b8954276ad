// The device instructions the kernels reach through inline PTX, and the
// launch macros: one function or macro each, so that the kernels never test
// how they are built. kernels/cuda_emu supplies a stand-in of this header
// (ptx_emu.hpp, included by hkt_cuda_emu.hpp before any kernel source, which
// defines this header's guard): there every function below runs the
// emulator's model of the instruction, the launch macros queue a launch on the
// emulated device, and expect_device checks its condition.
#ifndef HKT_KERNELS_CUDA_PTX_CUH
#define HKT_KERNELS_CUDA_PTX_CUH
#include <cstdint>

// A kernel's dynamic shared memory, and a launch on the backend's stream
// (kernels/cuda/common.cuh):
//   HKT_LAUNCH(grid, block, shared_bytes, kernel<T>)(args...);
#define HKT_DYNAMIC_SHARED(name) extern __shared__ __align__(32) unsigned char name[]
#define HKT_LAUNCH(grid, block, smem, ...) __VA_ARGS__<<<(grid), (block), (smem), ::hkt::cuda::stream()>>>

// wgmma exists only in sm_90a code (the sm90a/ kernels); elsewhere its
// functions trap (nothing calls them there: the host checks the device).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HKT_WGMMA_PTX 1
#endif

namespace hkt::cuda {

// A precondition the host guarantees (e.g. aligned rows): free on a GPU, where
// nothing is tested; the emulator fails the launch with `what` when !ok.
__device__ __forceinline__ void expect_device(bool ok, const char* what) {
  (void)ok;
  (void)what;
}

// d += a b: one mma.sync m16n8k8, TF32 inputs, float accumulators
// (fragment layouts: mma_tf32.cuh).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Asks the L2 cache for the 128-byte line holding p and goes on.
__device__ __forceinline__ void prefetch_l2(const float* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

// 2^y: ex2.approx.ftz (about 2 ulp; subnormal results flush to 0).
__device__ __forceinline__ float exp2_ftz(float y) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(y));
  return r;
}

// cp.async (sm_80 and later): 16 bytes to dst (shared memory), src_bytes of
// them from src, the rest zero; landing once this thread waits for them.
__device__ __forceinline__ void cp_async16(float* dst, const float* src, int src_bytes) {
  const auto d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}
// Closes this thread's group of copies.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until every committed copy of this thread has landed.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// The shared-state-space address of a pointer into shared memory.
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Orders this thread's generic shared-memory stores before the async proxy's
// reads (wgmma's operands); a barrier then makes every thread's visible.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(HKT_WGMMA_PTX)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// wgmma.fence: orders earlier register writes (D, A) before the products.
__device__ __forceinline__ void wgmma_fence() {
#if defined(HKT_WGMMA_PTX)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(HKT_WGMMA_PTX)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most Pending committed groups of products are in flight.
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(HKT_WGMMA_PTX)
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
#if defined(HKT_WGMMA_PTX)
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
#if defined(HKT_WGMMA_PTX)
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

#endif  // HKT_KERNELS_CUDA_PTX_CUH
