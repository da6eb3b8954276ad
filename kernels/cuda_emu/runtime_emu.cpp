// The emulated device's runtime API (include/cuda_runtime.h): device memory
// as host blocks, synchronous copies and memsets, error names.
#include "kernels/cuda_emu/hkt_cuda_emu.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace hkt_emu {
namespace {

struct Memory {
  std::mutex mu;
  std::map<uintptr_t, size_t> blocks;  // start -> bytes, every live cudaMalloc block
  size_t in_use = 0;
  size_t limit = size_t{141} << 30;
  bool strict = true;
};
Memory& memory() {
  static Memory* m = new Memory();  // never destroyed: frees may come during static destruction
  return *m;
}

// f(memory()) under its lock.
template <class F>
auto with_memory(F f) {
  Memory& m = memory();
  const std::lock_guard<std::mutex> lock(m.mu);
  return f(m);
}

bool inside_locked(const Memory& m, const void* p, size_t n) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.blocks.upper_bound(a);
  if (it == m.blocks.begin()) return false;
  --it;
  return a - it->first <= it->second && n <= it->second - (a - it->first);
}

// Where a copy's pointers must be for its kind (false: not allowed).
bool copy_ok(const void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (!is_strict_device_memory()) return true;
  const bool d = is_device_memory(dst, n), s = is_device_memory(src, n);
  switch (kind) {
    case cudaMemcpyHostToHost: return !d && !s;
    case cudaMemcpyHostToDevice: return d && !s;
    case cudaMemcpyDeviceToHost: return !d && s;
    case cudaMemcpyDeviceToDevice: return d && s;
    case cudaMemcpyDefault: return true;
  }
  return false;
}

}  // namespace

void set_strict_device_memory(bool on) {
  with_memory([&](Memory& m) { m.strict = on; });
}
bool is_strict_device_memory() {
  return with_memory([](Memory& m) { return m.strict; });
}
bool is_device_memory(const void* p, size_t n) {
  return with_memory([&](Memory& m) { return inside_locked(m, p, n); });
}
bool device_ok(const void* p, size_t n) {
  return p && with_memory([&](Memory& m) { return !m.strict || inside_locked(m, p, n); });
}
void set_device_memory_limit(size_t bytes) {
  with_memory([&](Memory& m) { m.limit = bytes; });
}
size_t device_memory_in_use() {
  return with_memory([](Memory& m) { return m.in_use; });
}

}  // namespace hkt_emu

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return cudaErrorInvalidValue;
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t n) {
  if (!p) return cudaErrorInvalidValue;
  *p = nullptr;
  hkt_emu::Memory& m = hkt_emu::memory();
  const std::lock_guard<std::mutex> lock(m.mu);
  const size_t bytes = n == 0 ? 256 : (n + 255) / 256 * 256;
  if (bytes > m.limit - m.in_use || m.in_use > m.limit) return cudaErrorMemoryAllocation;
  void* q = std::aligned_alloc(256, bytes);
  if (!q) return cudaErrorMemoryAllocation;
  std::memset(q, 0xFF, bytes);
  m.blocks[reinterpret_cast<uintptr_t>(q)] = bytes;
  m.in_use += bytes;
  *p = q;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  hkt_emu::Memory& m = hkt_emu::memory();
  const std::lock_guard<std::mutex> lock(m.mu);
  const auto it = m.blocks.find(reinterpret_cast<uintptr_t>(p));
  if (it == m.blocks.end()) return cudaErrorInvalidValue;
  m.in_use -= it->second;
  m.blocks.erase(it);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t) {
  hkt_emu::count_work(hkt_emu::Work::copy);
  if (kind == cudaMemcpyDeviceToHost) hkt_emu::count_work(hkt_emu::Work::to_host);
  if (n == 0) return cudaSuccess;
  if (!dst || !src || !hkt_emu::copy_ok(dst, src, n, kind)) return cudaErrorInvalidValue;
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, n, kind);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t) {
  hkt_emu::count_work(hkt_emu::Work::memset);
  if (n == 0) return cudaSuccess;
  if (!hkt_emu::device_ok(p, n)) return cudaErrorInvalidValue;
  std::memset(p, value, n);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  if (!s || flags > cudaStreamNonBlocking) return cudaErrorInvalidValue;
  static char token;  // every emulated stream is the same synchronous queue
  *s = reinterpret_cast<cudaStream_t>(&token);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
  }
  return "unknown error";
}
