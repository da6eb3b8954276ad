// kernels/cuda/attention*.cu, compiled as C++ for the
// emulator (hkt_cuda_emu.hpp).
#include "cuda_emu/hkt_cuda_emu.hpp"

#include "kernels/cuda/attention.cu"
#include "kernels/cuda/attention_fwd_mma.cu"
#include "kernels/cuda/attention_bwd_mma.cu"
