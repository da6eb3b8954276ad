// Asynchronous global-to-shared copies (PTX cp.async, sm_80 and later), so
// that a kernel can fetch its next tile while it computes on the current one.
// A thread's copies land in shared memory once it waits for them
// (cp_async_wait_all); a barrier after that makes every thread's copies
// visible to the block. kernels/cuda_emu emulates the instructions, copies
// landing only at the wait.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_common.cuh"

namespace hkt::cuda {
namespace {

// cp_async16, cp_async_commit, cp_async_wait_all: ptx.cuh.

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
