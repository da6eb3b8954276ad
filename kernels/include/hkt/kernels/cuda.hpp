// The CUDA backend from user code: is it built, is a GPU there, memory
// statistics of the caching allocator, synchronisation. Every function works
// in a CPU-only build too (nothing is available there).
//
//   if (hkt::cuda_is_available()) x = hkt::to_device(x, hkt::Device::cuda());
//   else std::cout << hkt::cuda_unavailable_reason() << "\n";
#pragma once
#include <cstddef>
#include <cstdint>
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

// The fused attention on the GPU runs the library's default kernels (float32
// and float64; docs/cuda.md). The switches HKT_CUDA_ATTN_FWD / _BWD (and
// _BWD_ACC=regs) name the kernel variants of tools/cuda-lab, which only a
// program built with the lab (-DHKT_CUDA_LAB=ON) has installed: elsewhere a
// switch naming one is an error saying so. This returns what they name:
// "forward mma", "backward fused8", "forward mma, backward fused8", or ""
// when neither pass is fixed (or without CUDA). Throws hkt::Error for a value
// that names no kernel, listing the names.
std::string cuda_attention_kernel_knobs();

}  // namespace hkt
