// Storage: one reference-counted device buffer, shared by every view of it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "hkt/core/dtype.hpp"

namespace hkt {

// A per-device allocator. The CPU one is built in; a backend (CUDA) installs
// its own with set_allocator(). Buffers are at least 64-byte aligned.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
  // Copies nbytes from `src`, memory of this allocator's device, to host memory
  // `dst`, and returns when they are there (the default: memcpy, for the CPU).
  virtual void copy_to_host(void* dst, const void* src, size_t nbytes, Device device);
};
void set_allocator(DeviceType type, Allocator* alloc);
Allocator* get_allocator(DeviceType type);  // throws if the device has no backend

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // Bumped by every in-place write, so that backward can detect that a tensor
  // saved for it was modified afterwards.
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  uint64_t version_ = 0;
};

}  // namespace hkt
