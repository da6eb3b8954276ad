// The built-in backends' registration entry points (internal): each fills the
// tables of every op on the list that it implements, in one file
// (kernels/cpu/register.cpp, kernels/cuda/register.cu).
#pragma once
#include "hkt/kernels/registry.hpp"

namespace hkt::kernels {

void register_cpu_kernels(Tables& t);
#if HKT_WITH_CUDA
void register_cuda_kernels(Tables& t);
#endif

}  // namespace hkt::kernels
