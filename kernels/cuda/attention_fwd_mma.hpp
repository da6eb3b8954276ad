// The register-resident forward of the fused attention (attention_fwd_mma.cu),
// float32 only; attention.cu calls it when HKT_CUDA_ATTN_FWD=mma. Plain C++.
#pragma once
#include <vector>

#include "kernels/cuda/attention.hpp"

namespace hkt::cuda {

// Launches the kernel and returns true, or returns false when the shape needs
// the general kernel (head dim above 64). Same arguments as attention_forward.
bool attention_forward_mma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                           const void* v, const void* lambda, const bool* valid, float* o, float* lse);

}  // namespace hkt::cuda
