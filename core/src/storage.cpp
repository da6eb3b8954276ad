#include "hkt/core/storage.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace hkt {
namespace {

// CPU buffers are 64-byte aligned. Large blocks (>= 1 MiB) are cached by
// size class after they are freed: glibc serves them with a fresh mmap each
// time, and the page faults of first touch then cost more than the op itself.
// The cache holds at most HKT_CPU_CACHE_MB (default: a quarter of the
// memory this process can have, at least 1 GiB; 0 disables it, as do
// sanitizer builds, so that use-after-free stays detectable). A cap below a
// step's working set sends the rest back to the kernel at every step:
// performer-small at T = 512, B = 32 (2.6 GiB) took 6.9 s a step with a
// 1 GiB cap and 2.5 s without.
std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / double(1 << 30));
  return buf;
}

// The most memory this process can have: physical memory, or the cgroup's
// limit (v2 memory.max, v1 memory.limit_in_bytes) when smaller.
uint64_t memory_limit() {
  static const uint64_t limit = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    uint64_t m = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
    for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
      std::ifstream in(f);
      unsigned long long v = 0;
      if (in >> v && v > 0 && v < m) m = v;  // "max" (no limit) does not parse
    }
    return m;
  }();
  return limit;
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() {
#if defined(__SANITIZE_ADDRESS__)
    limit_ = 0;
#else
    const char* env = std::getenv("HKT_CPU_CACHE_MB");
    limit_ = env ? std::strtoull(env, nullptr, 10) << 20 : std::max<uint64_t>(uint64_t{1} << 30, memory_limit() / 4);
#endif
  }
  ~CpuAllocator() override {
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) std::free(p);
  }
  void* allocate(size_t nbytes, Device) override {
    // Refuse what can never fit, before trying: Linux would often promise the
    // memory and kill the process when it is touched.
    const uint64_t limit = memory_limit();
    if (nbytes > limit)
      throw Error(str_cat("out of memory: cannot allocate ", nbytes, " bytes (", gib(nbytes),
                          " GiB) on cpu: more than this machine's memory (", gib(limit),
                          " GiB, the smaller of physical memory and the cgroup limit)"));
    const size_t n = size_class(nbytes);
    if (n >= kCacheMin && limit_ > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(n);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= n;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, n);
    if (!p)
      throw Error(str_cat("out of memory: could not allocate ", nbytes, " bytes (", gib(nbytes), " GiB) on cpu"));
    return p;
  }
  void deallocate(void* p, size_t nbytes, Device) override {
    const size_t n = size_class(nbytes);
    if (n >= kCacheMin && limit_ > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + n <= limit_) {
        free_[n].push_back(p);
        cached_ += n;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr size_t kCacheMin = size_t{1} << 20;
  // Multiples of 64 bytes; from 1 MiB up, rounded to 1/8 of the power of two
  // below, so that nearby sizes share a class (at most 12.5% waste).
  static size_t size_class(size_t nbytes) {
    size_t n = ((nbytes + 63) / 64) * 64;
    if (n == 0) n = 64;
    if (n < kCacheMin) return n;
    size_t p = size_t{1} << (63 - __builtin_clzll(n));
    const size_t step = p / 8;
    return (n + step - 1) / step * step;
  }
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0, limit_ = 0;
};

std::array<Allocator*, kNumDeviceTypes>& allocators() {
  static CpuAllocator cpu;
  static std::array<Allocator*, kNumDeviceTypes> a{&cpu, nullptr};
  return a;
}

}  // namespace

void Allocator::copy_to_host(void* dst, const void* src, size_t nbytes, Device) {
  if (nbytes > 0) std::memcpy(dst, src, nbytes);
}

void set_allocator(DeviceType type, Allocator* alloc) { allocators()[static_cast<size_t>(type)] = alloc; }

Allocator* get_allocator(DeviceType type) {
  Allocator* a = allocators()[static_cast<size_t>(type)];
  HKT_CHECK(a, "no backend for device ", Device{type, 0}.str(),
            " in this build (was it built with HKT_CUDA=ON, and is a GPU present?)");
  return a;
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = get_allocator(device.type)->allocate(nbytes, device);
}

Storage::~Storage() {
  if (data_) get_allocator(device_.type)->deallocate(data_, nbytes_, device_);
}

}  // namespace hkt
