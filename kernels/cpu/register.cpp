// The CPU backend: every CPU kernel of the op list (hkt/kernels/op_list.hpp),
// each registered by its own kernel file (HKT_CPU_KERNEL, kernels/backends.hpp)
// for the dtypes the list gives; this calls them all, generated from the list.
#include "kernels/backends.hpp"

namespace hkt::kernels {

void register_cpu_kernels(Tables& t) {
#define HKT_REGISTER(id, name, Sig, cpu_set, cuda_set) \
  if constexpr (cpu_set != kNone) cpu::register_##id(t);
  HKT_KERNEL_OPS(HKT_REGISTER)
#undef HKT_REGISTER
  cpu::register_elementwise(t);
}

}  // namespace hkt::kernels
