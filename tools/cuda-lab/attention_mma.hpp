// The register-resident fused attention kernels (attention_fwd_mma.cu,
// attention_bwd_mma.cu, attention_bwd_fused.cu): float32, head dims up to 64,
// 64-row tiles. install_lab_variants (variants.cpp) hands them to the library
// (attention_variants.hpp), which runs them when HKT_CUDA_ATTN_FWD=mma /
// HKT_CUDA_ATTN_BWD=mma or fused, or the lab's autotuner picks them.
// Plain C++; device pointers.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/attention_variants.hpp"

namespace hkt::cuda {

// kMmaTile, kMmaThreads, kMmaMaxDh, mma_ld, mma_rows_aligned: the library's
// attention_variants.hpp (its contract with the lab).

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

// bwd 1 (HKT_CUDA_ATTN_BWD_ACC=regs; attention_bwd_regs.cu): the library's
// general backward kernels with their level-0 accumulators in registers.
// The arguments of an AttnBackwardVariant; false where it cannot take the
// call (dh > 64, or a 64-row tile that does not fit in shared memory).
bool attention_backward_regs(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                             const void* v, const void* lambda, const bool* valid, const float* dout,
                             const float* lse, const float* D, const std::vector<void*>& dq,
                             const std::vector<void*>& dk, float* dv, double* part);

}  // namespace hkt::cuda
