// What a test needs to call emulated kernels (hkt_cuda_emu.hpp): include this,
// then the kernels' host headers (e.g. kernels/cuda/attention.hpp); and the
// emulator's switches.
//
// Next to a real libhkt (test_emulated_attention), what the emulated .cu files
// define in hkt::cuda lands in hkt::cuda_emulated::cuda (a namespace
// definition of `cuda` in hkt reopens the inline namespace's), so it cannot
// clash with the real kernels of a libhkt built with CUDA. The emulated
// backend (hkt_emulated, tests/cuda_emu/CMakeLists.txt) is a whole library of
// its own and defines HKT_EMULATED_BACKEND: its names are the real ones.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#ifndef HKT_EMULATED_BACKEND
namespace hkt {
inline namespace cuda_emulated {
namespace cuda {}
}  // namespace cuda_emulated
}  // namespace hkt
#endif

namespace hkt_emu {
// Runs the threads of a block, and the blocks of a grid, in reverse order
// (true) or in order (false, the default).
void set_reverse_order(bool reverse);
// The device-memory checks of include/cuda_runtime.h: on by default. A test
// that hands host memory straight to the kernels turns them off.
void set_strict_device_memory(bool on);
bool is_strict_device_memory();
// True when [p, p + n) lies inside one live cudaMalloc block.
bool is_device_memory(const void* p, size_t n);
// What an API call that wants device memory at [p, p + n) accepts: p not null,
// and inside one live block unless the strict checks are off.
bool device_ok(const void* p, size_t n);
// cudaMalloc fails with cudaErrorMemoryAllocation once the live blocks would
// exceed this many bytes (default: an H200's 141 GiB).
void set_device_memory_limit(size_t bytes);
size_t device_memory_in_use();
// The warp-wide mma.sync products run since the process started (a test
// tells from it whether a knob's mma kernel ran or the general one took over).
uint64_t mma_sync_count();
// cp.async copies land when the thread waits for them (false, the default:
// a tile read before its wait shows) or as they are issued (true: a copy
// issued into a buffer that other threads still read shows). A GPU may land
// them anywhere between.
void set_cp_async_eager(bool eager);
// The prefetch.global.L2 hints run since the process started.
uint64_t prefetch_count();
// The warpgroup products (wgmma.mma_async, per warp) run since the process started.
uint64_t wgmma_count();
// The kernels launched since the last clear_launched_kernels (each template
// instantiation its own), for a test that tells which kernels a call ran.
std::set<const void*> launched_kernels();
void clear_launched_kernels();
// What the host asked of the device since the last clear_work_counts: each is
// a call a GPU pays for on the host (a launch, a cuBLAS product, a copy or a
// memset: a few microseconds each), and a copy to the host also waits for
// the work queued before it. hkt-bench-launches prints them per training step.
struct WorkCounts {
  uint64_t launches = 0;  // kernel launches (HKT_LAUNCH)
  uint64_t gemms = 0;     // cuBLAS products (one per call, batched or not)
  uint64_t copies = 0;    // cudaMemcpy(Async) calls, every direction
  uint64_t to_host = 0;   // of those, device to host
  uint64_t memsets = 0;   // cudaMemset(Async) calls
};
WorkCounts work_counts();
void clear_work_counts();
// The launches since clear_work_counts by kernel, named as HKT_LAUNCH names it.
std::map<std::string, uint64_t> launches_by_kernel();
// The emulator's own counting (runtime, cuBLAS, launches), thread-safe.
enum class Work { launch, gemm, copy, to_host, memset };
void count_work(Work w);
}  // namespace hkt_emu
