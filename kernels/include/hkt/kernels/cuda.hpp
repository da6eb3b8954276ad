// The CUDA backend from user code: is it built, is a GPU there, memory
// statistics of the caching allocator, synchronisation. Every function works
// in a CPU-only build too (nothing is available there).
//
//   if (hkt::cuda_is_available()) x = hkt::to_device(x, hkt::Device::cuda());
//   else std::cout << hkt::cuda_unavailable_reason() << "\n";
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hkt {

bool cuda_is_built();         // the library was built with HKT_CUDA=ON
int cuda_device_count();      // 0 without backend, driver or GPU; never throws
bool cuda_is_available();     // cuda_device_count() > 0
// Why CUDA is not available ("" when it is): not built, no driver, no device...
std::string cuda_unavailable_reason();
// Throws hkt::Error, naming `what`, with the reason, unless CUDA is available.
void require_cuda(const char* what);
// Waits for all queued GPU work (no-op without a GPU). Needed only for timing:
// every copy to the host already waits for the work it depends on.
void cuda_synchronize();

struct CudaMemoryStats {
  size_t allocated_bytes = 0;       // held by live tensors (rounded to size classes)
  size_t cached_bytes = 0;          // freed blocks kept for reuse
  size_t peak_allocated_bytes = 0;
  uint64_t device_mallocs = 0;      // cudaMalloc calls so far
  uint64_t cache_hits = 0;          // allocations served from the cache
};
CudaMemoryStats cuda_memory_stats();
// Returns the cached blocks to the driver.
void cuda_empty_cache();

// Which kernel computes fused attention on the GPU (float32; docs/cuda.md,
// "Choosing the kernel"). By default the general kernels. With autotuning on,
// the first call of each shape (and pass, mask, gradients asked for) runs every
// kernel variant the build and the device have, compares each one's results
// with the general kernel's on that call's inputs (1e-4 relative), times the
// ones that match and keeps the fastest for the later calls, as cuDNN's
// benchmark mode does. HKT_CUDA_ATTN_AUTOTUNE=1 (or verbose: a line per
// decision on stderr) turns it on without code; this call wins over it.
// HKT_CUDA_ATTN_FWD / _BWD, when set, name the kernel and win over both.
void cuda_attention_autotune(bool on, bool verbose = false);
// The kernels that HKT_CUDA_ATTN_FWD / _BWD (or _BWD_ACC=regs) name, which
// win over the tuner: "forward mma", "backward fused8", "forward mma,
// backward fused8", or "" when neither pass is fixed (or without CUDA).
// Throws hkt::Error for a value that names no kernel, listing the names.
std::string cuda_attention_kernel_knobs();
// Whether HKT_CUDA_ATTN_AUTOTUNE_SKIP names kernel `name`, which the tuner
// then never tries (false without CUDA). Throws hkt::Error when the list
// names something that is no kernel's.
bool cuda_attention_kernel_skipped(const std::string& name);
// Whether the tuner is on now: the last cuda_attention_autotune call's
// setting, else the variable's (false in a build without CUDA). Throws
// hkt::Error for a value of HKT_CUDA_ATTN_AUTOTUNE other than 0, 1, verbose.
bool cuda_attention_autotune_enabled();
// Turns the tuner on or off for its lifetime, then restores the setting
// before it: an earlier cuda_attention_autotune call's, or none (the variable
// decides again). A training run with cuda_autotune holds one, so the process
// goes on as it was after the run. Scopes nest; end them in reverse order.
class CudaAttentionAutotuneScope {
 public:
  explicit CudaAttentionAutotuneScope(bool on, bool verbose = false);
  ~CudaAttentionAutotuneScope();
  CudaAttentionAutotuneScope(const CudaAttentionAutotuneScope&) = delete;
  CudaAttentionAutotuneScope& operator=(const CudaAttentionAutotuneScope&) = delete;

 private:
  int previous_;  // the setting before (-1: none)
};
struct CudaAttentionTrial {
  std::string kernel;   // "general", "mma", "wgmma", ...
  double ms = -1;       // best time; -1 when not timed
  std::string outcome;  // "chosen", "slower", "not applicable", "wrong results", "failed: ..."
};
struct CudaAttentionChoice {
  std::string call;    // "forward B=16 H=8 T=1024 dh=64 L=3 causal"
  std::string kernel;  // the one chosen
  std::vector<CudaAttentionTrial> trials;
  bool preset = false;  // from cuda_attention_autotune_from_json, not tuned (no trials)
};
// The autotuner's decisions so far, oldest first (empty without a GPU).
std::vector<CudaAttentionChoice> cuda_attention_autotune_choices();
// Forgets them: the next call of each shape is tuned again.
void cuda_attention_autotune_reset();
// The decisions as JSON, so that a later process runs the same kernels (the
// tuner's picks depend on timing): {"format": "hkt-attention-kernels",
// "version": 1, "decisions": [{"pass": "forward", "B": 16, "H": 8, "T": 1024,
// "dh": 64, "L": 3, "causal": false, "masked": false, "aligned": true,
// "grads": [], "kernel": "wgmma"}, ...]} ("grads": those a backward computes,
// of "dq", "dk", "dv", "dlambda").
std::string cuda_attention_autotune_to_json();
// Presets the decisions of such a text: calls of those kinds run the kernels
// it names, without trials (a kernel this build lacks is tuned again).
// Throws hkt::Error naming what is wrong in the text; presets nothing then.
void cuda_attention_autotune_from_json(const std::string& text);
// Calls f after each new decision (e.g. to save them); an empty f stops that.
void cuda_attention_autotune_on_decision(std::function<void()> f);

}  // namespace hkt
