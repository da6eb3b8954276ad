// The CUDA runtime seen from plain C++ (ops/, tools): device detection, the
// caching allocator's statistics, host <-> device copies, synchronisation.
// Implemented in runtime.cu; no CUDA header is needed to include this one.
// Internal: included as "kernels/cuda/runtime.hpp" by the library's sources.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "hkt/kernels/device_comm.hpp"

namespace hkt::cuda {

// Number of usable CUDA devices (0 when there is no GPU or no driver);
// never throws. The reason for 0 is in no_device_reason().
int device_count();
std::string no_device_reason();
// Throws hkt::Error with a clear message unless device `index` exists.
void require_device(int index, const char* what);

// A copy of nbytes from a buffer of device 0 to a host buffer, ordered on the
// backend's stream; it returns once the copy is complete. The host-to-device and
// device-to-device copies are declared in <hkt/kernels/device_comm.hpp>.
void copy_device_to_host(void* dst, const void* src, size_t nbytes);
// Waits for all work queued on the backend's stream.
void synchronize();

struct MemoryStats {
  size_t allocated_bytes = 0;  // in live tensors (rounded to the size class)
  size_t cached_bytes = 0;     // freed, kept for reuse
  size_t peak_allocated_bytes = 0;
  uint64_t device_mallocs = 0;  // cudaMalloc calls so far
  uint64_t cache_hits = 0;      // allocations served from the cache
};
MemoryStats memory_stats();
// Returns every cached block to the driver (cudaFree).
void empty_cache();

}  // namespace hkt::cuda
