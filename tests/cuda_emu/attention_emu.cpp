// kernels/cuda/attention*.cu, compiled as C++ for the
// emulator (hkt_cuda_emu.hpp).
#include "cuda_emu/hkt_cuda_emu.hpp"

#include "kernels/cuda/attention.cu"
#include "kernels/cuda/attention_tune.cu"
#include "kernels/cuda/attention_fwd_mma.cu"
#include "kernels/cuda/attention_bwd_mma.cu"
#include "kernels/cuda/attention_bwd_fused.cu"
#include "kernels/cuda/sm90a/attention_fwd_wgmma.cu"
#include "kernels/cuda/sm90a/attention_bwd_wgmma.cu"

// common.cuh declares these; runtime.cu defines them in a real (or the
// emulated) backend. Here the attention files run alone, on host memory.
namespace hkt::cuda {
cudaStream_t stream() { return nullptr; }
cublasHandle_t cublas() { throw std::logic_error("hkt_emu: cuBLAS is not part of the attention-only emulation"); }
}  // namespace hkt::cuda
