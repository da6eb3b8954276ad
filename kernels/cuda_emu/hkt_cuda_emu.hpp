// A CPU emulator for the project's CUDA kernels, so that kernels/cuda/*.cu
// runs and is checked on machines without a GPU (tests/test_emulated_attention.cpp,
// and the emulated backend hkt_emulated of tests/cuda_emu/CMakeLists.txt).
//
// A translation unit includes this header first and then a .cu file, compiled
// as C++ with kernels/cuda_emu/include (stand-ins for <cuda_runtime.h>, <mma.h>,
// <cublas_v2.h>) ahead of the CUDA Toolkit on the include path. Then:
//  - every CUDA thread of a block is a fiber (hkt_cuda_emu.cpp); blocks run one after
//    another. __syncthreads() parks a fiber until every live thread of the
//    block is parked; warp collectives (__shfl_*_sync, wmma::mma_sync) park it
//    until the 32 lanes of its warp have arrived, then run once for the warp.
//    Between two barriers one warp at a time runs as far as it can, warp 0
//    first (the last first in reverse order), so that a read of what another
//    warp writes in the same phase sees the old data in one of the two orders.
//    A deadlock (threads waiting on different barriers, a warp collective some
//    lanes never reach) is reported as an error instead of hanging.
//  - `__shared__` variables are function statics (one block at a time), and
//    the dynamic shared memory is a buffer filled with 0xFF bytes (NaN) at the
//    start of every block, so reading it before writing shows up in results.
//  - launches check what a GPU checks: at most 1024 threads, the dynamic
//    shared memory within the opt-in limit of an H200 (227 KiB) and within what
//    cudaFuncSetAttribute allowed (48 KiB by default); a failure is reported
//    by cudaGetLastError, as on a GPU.
//  - WMMA (m16n16k8 TF32 and float accumulators) keeps each lane's share of a
//    fragment in the lane (element e of lane l is matrix element 32 e + l, row
//    major), rounds with __float_to_tf32 as cvt.rna.tf32.f32 does and, in
//    mma_sync, uses only the TF32 bits of A and B (the low 13 mantissa bits
//    are dropped, as the tensor cores do). Loads and stores check the
//    alignment WMMA requires (32-byte pointers, ldm a multiple of 16 bytes).
//  - cp.async (16-byte copies to shared memory) reads its source at issue and
//    lands only at the cp.async.wait_group that covers it (or, with
//    set_cp_async_eager(true), at issue: the two ends of what a GPU may do).
//  - wgmma (kernels/cuda/wgmma.cuh: m64nNk8 TF32, descriptors without swizzle)
//    runs per warp at the wgmma.wait_group that covers it, reading the
//    registers and shared memory then, as the asynchronous product may.
//  - set_reverse_order(true) runs the warps of a block, the lanes of a warp,
//    and the blocks of a grid, in the opposite order: a kernel whose result
//    depends on the order (a race between threads) gives different bits.
// Global memory is host memory: cudaMalloc's blocks, with the checks that
// include/cuda_runtime.h describes; kernels may be handed any host pointer.
//
// What it cannot see: timing, occupancy and speed; races between threads that
// happen to be ordered the same way in both schedules; anything hardware does
// beyond the documented semantics (e.g. the tensor cores' internal rounding
// of sums, emulated here as float32 additions in k order).
#pragma once
#include <math.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cuda_emu/emulated.hpp"

#define HKT_CUDA_EMULATED 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};

namespace hkt_emu {

struct ThreadCtx {
  dim3 thread, block, block_dim, grid_dim;
};
extern ThreadCtx* g_ctx;  // the running fiber's; null outside a kernel

unsigned char* dynamic_shared();
void sync_block();
// Every lane of the calling warp calls this with its own `data`; once all have
// arrived, fn(lanes, n) runs once with the lanes' data in lane order, then
// every lane goes on. `what` names the collective (lanes must agree on it).
using CollectiveFn = void (*)(void* const* lanes, int n);
void warp_collective(const char* what, CollectiveFn fn, void* data);

// Runs body on every thread of every block. kernel_key identifies the kernel
// for cudaFuncSetAttribute's shared-memory limit. Returns an error, as a CUDA
// launch does (the body's exceptions are rethrown).
int run_grid(const void* kernel_key, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body);
void set_last_error(int e);
int take_last_error();
void allow_dynamic_shared(const void* kernel_key, int bytes);
// The dynamic shared memory a kernel may take: 48 KiB unless allow_dynamic_shared raised it.
size_t dynamic_shared_limit(const void* kernel_key);

// Counts a launch of the kernel named `name` (the launch's text, e.g. "attn_fwd<T, 64>").
void count_launch(const char* name);

template <class... P>
struct Launcher {
  void (*kernel)(P...);
  dim3 grid, block;
  size_t smem;
  const char* name;
  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "hkt_emu: wrong number of kernel arguments");
    // Kernel arguments are copied, as a launch copies them.
    auto bound = [k = kernel, tup = std::tuple<std::decay_t<P>...>(std::forward<A>(args)...)]() {
      std::apply(k, tup);
    };
    count_launch(name);
    const int e = run_grid(reinterpret_cast<const void*>(kernel), grid, block, smem, bound);
    if (e != 0) set_last_error(e);
  }
};
template <class... P>
Launcher<P...> launcher(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, const char* name = "?") {
  return {kernel, grid, block, smem, name};
}

inline unsigned lane_id() {
  const ThreadCtx& c = *g_ctx;
  return (c.thread.x + c.block_dim.x * (c.thread.y + c.block_dim.y * c.thread.z)) & 31u;
}

template <class T>
struct ShflData {
  T in, out;
  int src;
};
template <class T>
T shfl(const char* what, T v, int src) {
  static_assert(std::is_trivially_copyable_v<T>, "hkt_emu: __shfl of a non-trivial type");
  ShflData<T> d{v, v, src};
  warp_collective(
      what,
      [](void* const* lanes, int n) {
        for (int l = 0; l < n; ++l) {
          auto* me = static_cast<ShflData<T>*>(lanes[l]);
          const int s = me->src >= 0 && me->src < n ? me->src : l;
          me->out = static_cast<ShflData<T>*>(lanes[s])->in;
        }
      },
      &d);
  return d.out;
}

// The emulator's own arithmetic on a warp's registers (the mma products: fixed-size
// local arrays, none of the kernels' memory) is left out of the sanitizers'
// instrumentation: under ASan+UBSan it was half of the emulated suites' time, and
// checks nothing the kernels' own loads and stores (still instrumented) do not.
#define HKT_EMU_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

// cvt.rna.tf32.f32 as bits: round to 10 mantissa bits, ties away from zero
// (finite values; inf and NaN pass unchanged).
inline uint32_t tf32_rna_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu;
  return u;
}
// What the tensor cores read of a TF32 operand: its top 19 bits.
inline float tf32_truncate(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= ~0x1fffu;
  std::memcpy(&x, &u, 4);
  return x;
}
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, d += a b, with the PTX
// ISA's fragment layout (g = lane / 4, t = lane % 4): a0 = A[g][t],
// a1 = A[g + 8][t], a2 = A[g][t + 4], a3 = A[g + 8][t + 4]; b0 = B[t][g],
// b1 = B[t + 4][g]; d0 = D[g][2t], d1 = D[g][2t + 1], d2 = D[g + 8][2t],
// d3 = D[g + 8][2t + 1]. Only the TF32 bits of a and b are used.
void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
// prefetch.global.L2 [p]: reads a byte at p (an address outside the buffers
// then shows under ASan) and counts it (prefetch_count, emulated.hpp).
void prefetch_l2(const void* p);
// A kernel's stated precondition: throws std::logic_error("hkt_emu: " + what)
// when ok is false (a GPU would read or write the wrong bytes).
void expect(bool ok, const char* what);
// cp.async.cg.shared.global [dst], [src], 16, src_bytes: the calling thread's
// copy of src_bytes (the rest of the 16 zero-filled), read now and written to
// dst only when a cp_async_wait_group covers its commit group, so that a
// kernel that reads it earlier (or never waits) sees the old bytes.
// cp.async.commit_group closes the thread's current group;
// cp.async.wait_group n lands every committed group but the n newest.
void cp_async16(void* dst, const void* src, int src_bytes);
void cp_async_commit();
void cp_async_wait_group(int pending);
// wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 (kernels/cuda/wgmma.cuh),
// emulated per warp: warp w % 4 of its warpgroup computes its 16 rows of
// D = A B + (scale_d ? D : 0), A from the lane's 4 registers a (the fragment
// layout of mma.sync m16n8k8) or, when a is null, rows 16 (w % 4) .. of the
// 64 x 8 K-major matrix at desc_a, B the N x 8 K-major matrix at desc_b
// (descriptors without swizzle; anything else throws). The product is
// recorded, and done only at the wgmma_wait that covers its commit group: it
// reads a's registers, the shared memory and D then, so a kernel that reads D
// earlier, or changes them before the wait, gets wrong results, as on a GPU.
// wgmma_fence does nothing; shared_address is __cvta_generic_to_shared (the
// offset into the block's dynamic shared memory).
void wgmma_tf32(float* d, int n, const uint32_t* a, uint64_t desc_a, uint64_t desc_b, bool scale_d);
void wgmma_fence();
void wgmma_commit();
void wgmma_wait(int pending);
uint32_t shared_address(const void* p);

}  // namespace hkt_emu

inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

#define threadIdx (::hkt_emu::g_ctx->thread)
#define blockIdx (::hkt_emu::g_ctx->block)
#define blockDim (::hkt_emu::g_ctx->block_dim)
#define gridDim (::hkt_emu::g_ctx->grid_dim)

inline void __syncthreads() { ::hkt_emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::hkt_emu::warp_collective("__syncwarp", [](void* const*, int) {}, nullptr);
}
// Only full masks and width 32 are emulated (what the kernels use).
template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask, int = 32) {
  return ::hkt_emu::shfl("__shfl_xor_sync", v, int(::hkt_emu::lane_id()) ^ lane_mask);
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int = 32) {
  return ::hkt_emu::shfl("__shfl_down_sync", v, int(::hkt_emu::lane_id() + delta));
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int = 32) {
  return ::hkt_emu::shfl("__shfl_up_sync", v, int(::hkt_emu::lane_id()) - int(delta));
}
template <class T>
T __shfl_sync(unsigned, T v, int src, int = 32) {
  return ::hkt_emu::shfl("__shfl_sync", v, src & 31);
}

// CUDA's device overloads of min and max.
inline float max(float a, float b) { return fmaxf(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline int min(int a, int b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
// __expf as the GPU computes it: ex2.approx.ftz of x log2(e) rounded to float
// (the rounding is the approximation's main error: about |x| 2^-24 relative),
// subnormal results flushed to zero.
inline float __expf(float x) {
  const float y = exp2f(x * 1.44269504088896341f);
  return y < 1.17549435e-38f ? 0.0f : y;
}
inline float __logf(float x) { return logf(x); }
namespace hkt_emu {
// ex2.approx.ftz.f32: 2^y (exp2f stands in for the approximation, whose
// error, 2 ulp, is far below the kernels' tolerance), subnormal results
// flushed to zero.
inline float ex2_approx_ftz(float y) {
  const float r = exp2f(y);
  return r < 1.17549435e-38f ? 0.0f : r;
}
}  // namespace hkt_emu
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

// Atomics: the threads of a block run one at a time and never switch inside
// a plain function, so a read-modify-write is atomic as written.
template <class T>
T atomicMin(T* p, T v) {
  const T old = *p;
  if (v < old) *p = v;
  return old;
}
template <class T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
template <class T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}

// The stand-ins for kernels/cuda/ptx.cuh: the instructions and launch macros above.
#include "kernels/cuda_emu/ptx_emu.hpp"
