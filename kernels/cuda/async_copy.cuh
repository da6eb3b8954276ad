// Asynchronous global-to-shared copies (PTX cp.async, sm_80 and later), so
// that a kernel can fetch its next tile while it computes on the current one.
// A thread's copies land in shared memory once it waits for them
// (cp_async_wait_all); a barrier after that makes every thread's copies
// visible to the block. tests/cuda_emu emulates the instructions, copies
// landing only at the wait (HKT_CUDA_EMULATED).
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_common.cuh"

namespace hkt::cuda {
namespace {

// 16 bytes to dst (shared memory): src_bytes from src, the rest zero.
__device__ __forceinline__ void cp_async16(float* dst, const float* src, int src_bytes) {
#ifdef HKT_CUDA_EMULATED
  ::hkt_emu::cp_async16(dst, src, src_bytes);
#else
  const auto d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
#endif
}
// Closes this thread's group of copies.
__device__ __forceinline__ void cp_async_commit() {
#ifdef HKT_CUDA_EMULATED
  ::hkt_emu::cp_async_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until every committed copy of this thread has landed.
__device__ __forceinline__ void cp_async_wait_all() {
#ifdef HKT_CUDA_EMULATED
  ::hkt_emu::cp_async_wait_group(0);
#else
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// load_rows (attention_common.cuh) with cp.async: N groups of count rows,
// dst[r * ld + d] = rows[first + r][d], zero outside [0, n) and in the
// padding columns dh <= d < dhp, then one commit. Needs dh % 4 == 0 and
// 16-byte aligned rows (mma_rows_aligned, checked by the host).
template <int N>
__device__ void load_rows_async(const RowCopy<float> (&c)[N], int ld, int count, int64_t n, int dh, int dhp) {
  const int per_row = dhp / 4, each = count * per_row, total = N * each;
  for (int e = threadIdx.x; e < total; e += blockDim.x) {
    const int which = e / each, x = e - which * each, r = x / per_row, col = x - r * per_row;
    const RowCopy<float> cw = pick(c, which);
    const int64_t src = cw.first + r;
    const bool live = 4 * col < dh && src >= 0 && src < n;
    cp_async16(cw.dst + r * ld + 4 * col, live ? cw.rows + src * dh + 4 * col : cw.rows, live ? 16 : 0);
  }
  cp_async_commit();
}

}  // namespace
}  // namespace hkt::cuda
