// bwd 1 (HKT_CUDA_ATTN_BWD_ACC=regs, "general-regs"): the library's two-kernel
// backward (kernels/cuda/attention_bwd.cuh) with the level-0 accumulators
// (dK_0, dV; dQ_0) in WMMA register fragments instead of shared memory: 2
// fragments per warp for the variants' head dims (dh <= 64, 64-row tiles, so
// that the dlambda partials come per kMmaTile rows as attention_variants.hpp
// says). The library instantiates only the shared-memory accumulators (NF = 0).
#include <cstdint>
#include <vector>

#include "kernels/cuda/attention_bwd.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "tools/cuda-lab/attention_mma.hpp"

namespace hkt::cuda {

bool attention_backward_regs(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                             const void* v, const void* lambda, const bool* valid, const float* dout,
                             const float* lse, const float* D, const std::vector<void*>& dq,
                             const std::vector<void*>& dk, float* dv, double* part) {
  constexpr int BT = kMmaTile;
  if (s.dh > kMmaMaxDh || (int64_t{1} << (s.L - 1)) > BT) return false;
  const Layout lay(BT, int(s.dh), int(s.L), false);
  const size_t bytes = static_cast<size_t>(lay.bwd_elems()) * sizeof(float);
  // 1 KiB of headroom for the kernels' static shared memory (block_reduce), as attention.cu's pick_tile.
  if (bytes + 1024 > static_cast<size_t>(max_smem_optin())) return false;
  const Params P = make_params(s, q, k, v, lambda, valid, BT);
  launch_bwd_nf<float, BT, 2>(P, bytes, dout, lse, D, level_ptrs<float>(dk), dv, level_ptrs<float>(dq), part);
  return true;
}

}  // namespace hkt::cuda
