// The fused attention's float32 kernel variants that live outside the
// library, in tools/cuda-lab (docs/cuda.md, "The lab"): kernels not measured
// to beat the defaults of attention.cu. The library holds only their names,
// the switches that name them (HKT_CUDA_ATTN_FWD / _BWD / _BWD_ACC) and their
// entry points, null until the lab's hkt::cuda::install_lab_variants() fills
// them; a switch that names a kernel that is not installed is an error saying
// where it is. The lab may also install a chooser (its autotuner) that picks
// the kernel of a call no switch fixes. Plain C++; device pointers.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cuda/attention.hpp"

namespace hkt::cuda {

// The values of HKT_CUDA_ATTN_FWD and HKT_CUDA_ATTN_BWD (general: the
// library's default kernels of attention.cu; the others are the lab's;
// general-regs is also HKT_CUDA_ATTN_BWD_ACC=regs).
enum class FwdKernel { general, mma, mma_async, mma_lean, wgmma, wgmma2 };
enum class BwdKernel { general, general_regs, mma, fused, fused8, fused8_async, wgmma };
inline constexpr int kFwdKernels = 6, kBwdKernels = 7;
const char* kernel_name(FwdKernel k);
const char* kernel_name(BwdKernel k);
// The kernel a switch names; `set` tells whether the variable is set at all.
// Throws hkt::Error naming the variable and the accepted values for any other value.
FwdKernel fwd_kernel_knob(bool* set);
BwdKernel bwd_kernel_knob(bool* set);

// The variants' query and key tile (their dlambda partials come per tile of
// kMmaTile rows), block size, and largest head dim.
constexpr int kMmaTile = 64;
constexpr int kMmaThreads = 128;  // 4 warps of 16 rows
constexpr int64_t kMmaMaxDh = 64;
// The leading dimension of their shared tiles: conflict-free fragment reads
// (rows 4 banks apart) for padded head dims dhp = 32 or 64.
constexpr int mma_ld(int dhp) { return dhp + 4; }

// The variants read and write rows as whole float4s and float2s, with no
// single-value path: they take a call when dh % 4 == 0 and every tensor is
// 16-byte aligned. Our allocator's blocks are 256-byte aligned; a view at an
// odd offset is not, and the default kernels take it. Arguments: pointers and
// lists of them (null is aligned: an output not asked for).
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

// A forward: returns false, having launched nothing, when it cannot take the
// call (the default kernel then does). Same arguments as attention_forward.
using AttnForwardVariant = bool (*)(const AttnShape& s, const std::vector<const void*>& q,
                                    const std::vector<const void*>& k, const void* v, const void* lambda,
                                    const bool* valid, float* o, float* lse);
// A backward's kernels alone (attention_backward zeroes dq and dk, computes
// D[i] = rowsum(dout * o) and sums the dlambda partials
// part[(bh * nt + tile) * L + l], nt = tiles of kMmaTile rows): dq, dk empty
// and dv, part null when not wanted. Returns false when it cannot take the
// call (it may have written the outputs; the caller runs another kernel).
using AttnBackwardVariant = bool (*)(const AttnShape& s, const std::vector<const void*>& q,
                                     const std::vector<const void*>& k, const void* v, const void* lambda,
                                     const bool* valid, const float* dout, const float* lse, const float* D,
                                     const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv,
                                     double* part);

// The kernel for a float32 call that no switch fixes (the arguments of
// attention_forward / attention_backward); it may run kernels on the call's
// own buffers (attention_forward_with / _backward_with) before answering.
using AttnForwardChooser = FwdKernel (*)(const AttnShape& s, const std::vector<const void*>& q,
                                         const std::vector<const void*>& k, const void* v, const void* lambda,
                                         const bool* valid, float* o, float* lse);
using AttnBackwardChooser = BwdKernel (*)(const AttnShape& s, const std::vector<const void*>& q,
                                          const std::vector<const void*>& k, const void* v, const void* lambda,
                                          const bool* valid, const float* o, const float* lse, const float* dout,
                                          const std::vector<void*>& dq, const std::vector<void*>& dk, float* dv,
                                          float* dlambda);

// Indexed by FwdKernel / BwdKernel; null: not installed (general is the
// library's and never read from here). choose_*: null runs general.
struct AttentionVariants {
  AttnForwardVariant forward[kFwdKernels] = {};
  AttnBackwardVariant backward[kBwdKernels] = {};
  AttnForwardChooser choose_forward = nullptr;
  AttnBackwardChooser choose_backward = nullptr;
};
AttentionVariants& attention_variants();  // attention.cu

// The whole float32 forward / backward with kernel `kern` (general or an
// installed variant), as attention_forward / _backward run it; false when
// `kern` cannot take the call (nothing launched for a forward; a backward's
// outputs may have been zeroed). For a chooser's trials.
bool attention_forward_with(FwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                            const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                            float* o, float* lse);
bool attention_backward_with(BwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                             const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                             const float* o, const float* lse, const float* dout, const std::vector<void*>& dq,
                             const std::vector<void*>& dk, float* dv, float* dlambda);
// Elements of level l of q, k and their gradients: [B, H, T_l, dh].
int64_t level_elems(const AttnShape& s, int64_t l);

}  // namespace hkt::cuda
