// The emulator's stand-in for kernels/cuda/ptx.cuh (the kernels' inline-PTX
// instructions and launch macros), included by hkt_cuda_emu.hpp: it defines
// that header's guard, so a kernel source that includes it gets these
// functions, with the same names and signatures, instead.
#pragma once
#define HKT_KERNELS_CUDA_PTX_CUH 1
#include <cstdint>

#define HKT_DYNAMIC_SHARED(name) unsigned char* name = ::hkt_emu::dynamic_shared()
#define HKT_LAUNCH(grid, block, smem, ...) ::hkt_emu::launcher(__VA_ARGS__, (grid), (block), (smem), #__VA_ARGS__)

namespace hkt::cuda {

inline void expect_device(bool ok, const char* what) { ::hkt_emu::expect(ok, what); }
inline void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  ::hkt_emu::mma_m16n8k8_tf32(d, a, b);
}
inline void prefetch_l2(const float* p) { ::hkt_emu::prefetch_l2(p); }
inline float exp2_ftz(float y) { return ::hkt_emu::ex2_approx_ftz(y); }
inline void cp_async16(float* dst, const float* src, int src_bytes) { ::hkt_emu::cp_async16(dst, src, src_bytes); }
inline void cp_async_commit() { ::hkt_emu::cp_async_commit(); }
inline void cp_async_wait_all() { ::hkt_emu::cp_async_wait_group(0); }
inline uint32_t smem_address(const void* p) { return ::hkt_emu::shared_address(p); }
inline void fence_proxy_async() {}
inline void wgmma_fence() { ::hkt_emu::wgmma_fence(); }
inline void wgmma_commit() { ::hkt_emu::wgmma_commit(); }
template <int Pending>
void wgmma_wait() {
  ::hkt_emu::wgmma_wait(Pending);
}
template <int NC>
void wgmma_fence_operand(float (&d)[NC][4]) {
  (void)d;
}
template <int NC>
void wgmma_rs(float (&d)[NC][4], const uint32_t (&a)[4], uint64_t desc_b, bool scale_d) {
  static_assert(NC == 4 || NC == 8, "N is 32 or 64");
  ::hkt_emu::wgmma_tf32(&d[0][0], 8 * NC, a, 0, desc_b, scale_d);
}
template <int NC>
void wgmma_ss(float (&d)[NC][4], uint64_t desc_a, uint64_t desc_b, bool scale_d) {
  static_assert(NC == 4 || NC == 8, "N is 32 or 64");
  ::hkt_emu::wgmma_tf32(&d[0][0], 8 * NC, nullptr, desc_a, desc_b, scale_d);
}

}  // namespace hkt::cuda
