// <hkt/kernels/cuda.hpp>: the backend's runtime functions, or their CPU-only stand-ins.
#include "hkt/kernels/cuda.hpp"

#include "hkt/core/error.hpp"
#if HKT_WITH_CUDA
#include "kernels/cuda/attention_tune.hpp"
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
void cuda_attention_autotune(bool on, bool verbose) { cuda::set_attention_autotune(on ? (verbose ? 2 : 1) : 0); }
bool cuda_attention_autotune_enabled() { return cuda::attention_autotune_mode() > 0; }
bool cuda_attention_kernel_skipped(const std::string& name) { return !cuda::autotune_may_try(name); }
std::string cuda_attention_kernel_knobs() {
  bool fwd = false, bwd = false;
  const cuda::FwdKernel f = cuda::fwd_kernel_knob(&fwd);
  const cuda::BwdKernel b = cuda::bwd_kernel_knob(&bwd);
  std::string s = fwd ? str_cat("forward ", cuda::kernel_name(f)) : "";
  if (bwd) s += str_cat(fwd ? ", " : "", "backward ", cuda::kernel_name(b));
  return s;
}
CudaAttentionAutotuneScope::CudaAttentionAutotuneScope(bool on, bool verbose)
    : previous_(cuda::attention_autotune_setting()) {
  cuda_attention_autotune(on, verbose);
}
CudaAttentionAutotuneScope::~CudaAttentionAutotuneScope() { cuda::set_attention_autotune(previous_); }
std::vector<CudaAttentionChoice> cuda_attention_autotune_choices() {
  std::vector<CudaAttentionChoice> out;
  for (const cuda::TuneResult& r : cuda::attention_autotune_results()) {
    CudaAttentionChoice c{cuda::describe(r.key), r.chosen, {}, r.preset};
    for (const cuda::TuneTrial& t : r.trials) c.trials.push_back({t.kernel, t.ms, t.outcome});
    out.push_back(std::move(c));
  }
  return out;
}
void cuda_attention_autotune_reset() { cuda::clear_attention_autotune(); }
#else
bool cuda_is_built() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() {
  return "this build of hkt has no CUDA backend (configure with -DHKT_CUDA=ON where nvcc is installed)";
}
void cuda_synchronize() {}
CudaMemoryStats cuda_memory_stats() { return {}; }
void cuda_empty_cache() {}
void cuda_attention_autotune(bool, bool) {}
bool cuda_attention_autotune_enabled() { return false; }
bool cuda_attention_kernel_skipped(const std::string&) { return false; }
std::string cuda_attention_kernel_knobs() { return ""; }
CudaAttentionAutotuneScope::CudaAttentionAutotuneScope(bool, bool) : previous_(-1) {}
CudaAttentionAutotuneScope::~CudaAttentionAutotuneScope() = default;
std::vector<CudaAttentionChoice> cuda_attention_autotune_choices() { return {}; }
void cuda_attention_autotune_reset() {}
#endif

bool cuda_is_available() { return cuda_device_count() > 0; }

void require_cuda(const char* what) {
  HKT_CHECK(cuda_is_available(), what, ": CUDA was requested but is not available: ", cuda_unavailable_reason());
}

}  // namespace hkt
