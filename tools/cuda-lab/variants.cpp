// The lab's kernels handed to the library (kernels/cuda/attention_variants.hpp):
// after install_lab_variants(), HKT_CUDA_ATTN_FWD / _BWD / _BWD_ACC name them
// and the lab's autotuner (attention_tune.hpp), installed as the library's
// chooser, tries them against the default kernels when it is on. Numbered as
// in README.md.
#include "tools/cuda-lab/variants.hpp"

#include "kernels/cuda/attention_variants.hpp"
#include "tools/cuda-lab/attention_mma.hpp"
#include "tools/cuda-lab/attention_tune.hpp"

namespace hkt::cuda {
namespace {

template <FwdMma V>
bool fwd_mma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
             const void* v, const void* lambda, const bool* valid, float* o, float* lse) {
  return attention_forward_mma(s, q, k, v, lambda, valid, o, lse, V);
}

// The backwards' precondition (attention_mma.hpp): dh <= 64 and aligned rows.
bool bwd_fits(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
              const void* v, const float* dout, const std::vector<void*>& dq, const std::vector<void*>& dk,
              const float* dv) {
  return s.dh <= kMmaMaxDh && mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv);
}

bool bwd_mma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k, const void* v,
             const void* lambda, const bool* valid, const float* dout, const float* lse, const float* D,
             const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv, double* part) {
  if (!bwd_fits(s, q, k, v, dout, dq, dk, dv)) return false;
  attention_backward_mma(s, q, k, v, lambda, valid, dout, lse, D, dq, dk, dv, part);
  return true;
}

template <FusedBwd V>
bool bwd_fused(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
               const void* v, const void* lambda, const bool* valid, const float* dout, const float* lse,
               const float* D, const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv, double* part) {
  if (!bwd_fits(s, q, k, v, dout, dq, dk, dv)) return false;
  attention_backward_fused(s, q, k, v, lambda, valid, dout, lse, D, dq, dk, dv, part, V);
  return true;
}

#if HKT_CUDA_LAB_SM90A
template <int Warpgroups>
bool fwd_wgmma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
               const void* v, const void* lambda, const bool* valid, float* o, float* lse) {
  return attention_forward_wgmma(s, q, k, v, lambda, valid, o, lse, Warpgroups);
}
bool bwd_wgmma(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
               const void* v, const void* lambda, const bool* valid, const float* dout, const float* lse,
               const float* D, const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv, double* part) {
  if (!bwd_fits(s, q, k, v, dout, dq, dk, dv)) return false;
  return attention_backward_wgmma(s, q, k, v, lambda, valid, dout, lse, D, dq, dk, dv, part);
}
#endif

}  // namespace

void install_lab_variants() {
  AttentionVariants& a = attention_variants();
  a.forward[int(FwdKernel::mma)] = &fwd_mma<FwdMma::plain>;       // fwd 1
  a.forward[int(FwdKernel::mma_async)] = &fwd_mma<FwdMma::async>;  // fwd 2
  a.forward[int(FwdKernel::mma_lean)] = &fwd_mma<FwdMma::lean>;    // fwd 3
  a.backward[int(BwdKernel::general_regs)] = &attention_backward_regs;          // bwd 1
  a.backward[int(BwdKernel::mma)] = &bwd_mma;                                   // bwd 2
  a.backward[int(BwdKernel::fused)] = &bwd_fused<FusedBwd::warps4>;             // bwd 3
  a.backward[int(BwdKernel::fused8)] = &bwd_fused<FusedBwd::warps8>;            // bwd 4
  a.backward[int(BwdKernel::fused8_async)] = &bwd_fused<FusedBwd::warps8_async>;  // bwd 5
#if HKT_CUDA_LAB_SM90A
  a.forward[int(FwdKernel::wgmma)] = &fwd_wgmma<1>;   // fwd 4
  a.forward[int(FwdKernel::wgmma2)] = &fwd_wgmma<2>;  // fwd 5
  a.backward[int(BwdKernel::wgmma)] = &bwd_wgmma;     // bwd 6
#endif
  a.choose_forward = &tuned_forward;  // the tuner: general unless it is on
  a.choose_backward = &tuned_backward;
}

}  // namespace hkt::cuda
