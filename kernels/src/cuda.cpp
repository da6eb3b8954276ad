// <hkt/kernels/cuda.hpp>: the backend's runtime functions, or their CPU-only stand-ins.
#include "hkt/kernels/cuda.hpp"

#include "hkt/core/error.hpp"
#if HKT_WITH_CUDA
#include "kernels/cuda/attention_variants.hpp"
#include "kernels/cuda/runtime.hpp"
#endif

namespace hkt {

#if HKT_WITH_CUDA
bool cuda_is_built() { return true; }
int cuda_device_count() { return cuda::device_count(); }
std::string cuda_unavailable_reason() { return cuda::device_count() > 0 ? "" : cuda::no_device_reason(); }
void cuda_synchronize() { cuda::synchronize(); }
CudaMemoryStats cuda_memory_stats() {
  const cuda::MemoryStats s = cuda::memory_stats();
  return {s.allocated_bytes, s.cached_bytes, s.peak_allocated_bytes, s.device_mallocs, s.cache_hits};
}
void cuda_empty_cache() { cuda::empty_cache(); }
std::string cuda_attention_kernel_knobs() {
  bool fwd = false, bwd = false;
  const cuda::FwdKernel f = cuda::fwd_kernel_knob(&fwd);
  const cuda::BwdKernel b = cuda::bwd_kernel_knob(&bwd);
  std::string s = fwd ? str_cat("forward ", cuda::kernel_name(f)) : "";
  if (bwd) s += str_cat(fwd ? ", " : "", "backward ", cuda::kernel_name(b));
  return s;
}
#else
bool cuda_is_built() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() {
  return "this build of hkt has no CUDA backend (configure with -DHKT_CUDA=ON where nvcc is installed)";
}
void cuda_synchronize() {}
CudaMemoryStats cuda_memory_stats() { return {}; }
void cuda_empty_cache() {}
std::string cuda_attention_kernel_knobs() { return ""; }
#endif

bool cuda_is_available() { return cuda_device_count() > 0; }

void require_cuda(const char* what) {
  HKT_CHECK(cuda_is_available(), what, ": CUDA was requested but is not available: ", cuda_unavailable_reason());
}

}  // namespace hkt
