// kernels/cuda/attention_tune.cu (the autotuner, and its comparison kernel)
// compiled as C++ for the emulator (hkt_cuda_emu.hpp), for test_attention_tune.
#include "cuda_emu/hkt_cuda_emu.hpp"

#include "kernels/cuda/attention_tune.cu"

// common.cuh declares it; runtime.cu defines it in a real (or the emulated) backend.
namespace hkt::cuda {
cudaStream_t stream() { return nullptr; }
}  // namespace hkt::cuda
