// The CUDA backend: every CUDA kernel of the op list (hkt/kernels/op_list.hpp),
// each registered by its own kernel file (HKT_CUDA_KERNEL, kernels/backends.hpp)
// for the dtypes the list gives; this calls them all, generated from the list.
// Plain C++ (no launch here).
#include "kernels/backends.hpp"

namespace hkt::kernels {

void register_cuda_kernels(Tables& t) {
#define HKT_REGISTER(id, name, Sig, cpu_set, cuda_set) \
  if constexpr (cuda_set != kNone) cuda::register_##id(t);
  HKT_KERNEL_OPS(HKT_REGISTER)
#undef HKT_REGISTER
  cuda::register_elementwise(t);
}

}  // namespace hkt::kernels
