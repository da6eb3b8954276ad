// The register-resident fused attention kernels (attention_fwd_mma.cu,
// attention_bwd_mma.cu, attention_bwd_fused.cu): float32, head dims up to 64,
// 64-row tiles. attention.cu calls them when HKT_CUDA_ATTN_FWD=mma /
// HKT_CUDA_ATTN_BWD=mma or fused.
// Plain C++; device pointers.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cuda/attention.hpp"

namespace hkt::cuda {

constexpr int kMmaTile = 64;     // their query and key tile (Params::nt counts these)
constexpr int kMmaThreads = 128;  // 4 warps of 16 rows
constexpr int64_t kMmaMaxDh = 64;
// The leading dimension of their shared tiles: conflict-free fragment reads
// (rows 4 banks apart) for padded head dims dhp = 32 or 64.
constexpr int mma_ld(int dhp) { return dhp + 4; }

// The mma kernels read and write rows as whole float4s and float2s, with no
// single-value path (expect_rows_aligned, attention_common.cuh): they take a
// call when dh % 4 == 0 and every tensor is 16-byte aligned. Our allocator's
// blocks are 256-byte aligned; a view at an odd offset is not, and the
// general kernels take it. Arguments: pointers and lists of them (null is
// aligned: an output not asked for).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
template <class P>
bool aligned16(const std::vector<P>& ps) {
  for (const void* p : ps)
    if (!aligned16(p)) return false;
  return true;
}
template <class... A>
bool mma_rows_aligned(int64_t dh, const A&... a) {
  return dh % 4 == 0 && (aligned16(a) && ...);
}

// The forward's variants (HKT_CUDA_ATTN_FWD=mma, mma-async, mma-lean;
// attention_fwd_mma.cu): K and V split once per tile into pair tiles, Q's
// fragments in registers; async: the next key tile fetched with cp.async
// meanwhile; lean: Q and K plain in shared memory, split as read, for 3
// blocks per SM.
enum class FwdMma { plain, async, lean };
// Launches the forward and returns true, or returns false when the call
// needs the general kernel (dh > 64, or not mma_rows_aligned). Same
// arguments as attention_forward.
bool attention_forward_mma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                           const void* v, const void* lambda, const bool* valid, float* o, float* lse,
                           FwdMma variant = FwdMma::plain);

// The forward on Hopper's warpgroup products (HKT_CUDA_ATTN_FWD=wgmma, and
// wgmma2 with 2 warpgroups per block sharing each key tile;
// sm90a/attention_fwd_wgmma.cu, built for sm_90a only): returns false, for
// the general kernel, where attention_forward_mma would, and on a device that
// is not compute capability 9.0.
bool attention_forward_wgmma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                             const void* v, const void* lambda, const bool* valid, float* o, float* lse,
                             int warpgroups = 1);

// The backward's two kernels (key side: dv, dk[l]; query side: dq[l] and the
// dlambda partials part[(bh * nt + tile) * L + l], nt = tiles of kMmaTile),
// for dh <= 64 and mma_rows_aligned (checked; attention_backward calls the
// general kernels otherwise). D[i] = rowsum(dout * o); dq, dk empty and dv,
// part null when not wanted. attention_backward does the rest (zeroing, D,
// the dlambda sum).
void attention_backward_mma(const AttnShape& s, const std::vector<const void*>& q,
                            const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                            const float* dout, const float* lse, const float* D, const std::vector<void*>& dq,
                            const std::vector<void*>& dk, float* dv, double* part);

// The two-kernel backward on Hopper's warpgroup products
// (HKT_CUDA_ATTN_BWD=wgmma; sm90a/attention_bwd_wgmma.cu, built for sm_90a
// only): the same arguments and results as attention_backward_mma. Returns
// false, having launched nothing, where attention_backward_mma could not run
// (dh > 64, rows not aligned), on a device that is not compute capability
// 9.0, and where its shared memory would not fit.
bool attention_backward_wgmma(const AttnShape& s, const std::vector<const void*>& q,
                              const std::vector<const void*>& k, const void* v, const void* lambda,
                              const bool* valid, const float* dout, const float* lse, const float* D,
                              const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv, double* part);

// The single pass's variants (HKT_CUDA_ATTN_BWD=fused, fused8, fused8-async):
// blocks of 4 warps; of 8 warps; of 8 warps with each tile pair's Q and dO
// fetched with cp.async a tile pair ahead.
enum class FusedBwd { warps4, warps8, warps8_async };
// The single-pass backward (attention_bwd_fused.cu): the same arguments and
// results as attention_backward_mma, dh <= 64 and mma_rows_aligned.
void attention_backward_fused(const AttnShape& s, const std::vector<const void*>& q,
                              const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                              const float* dout, const float* lse, const float* D, const std::vector<void*>& dq,
                              const std::vector<void*>& dk, float* dv, double* part,
                              FusedBwd variant = FusedBwd::warps4);

}  // namespace hkt::cuda
