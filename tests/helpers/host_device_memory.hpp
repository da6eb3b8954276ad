// For suites that run CUDA kernels in the emulator (tests/cuda_emu) on their
// own, without the emulated backend: host memory standing in for device
// memory, so that the kernels' Scratch buffers and the CPU tensors' memory
// can be handed to the kernels.
#pragma once
#include <cstdlib>
#include <new>

#include "cuda_emu/emulated.hpp"
#include "hkt/core/storage.hpp"

namespace hkt::test {

struct HostAllocator : Allocator {
  void* allocate(size_t nbytes, Device) override {
    void* p = std::aligned_alloc(256, (nbytes + 255) / 256 * 256 + 256);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, size_t, Device) override { std::free(p); }
};
// The emulator's device-memory checks (tests/cuda_emu/include/cuda_runtime.h)
// are off while it is installed.
inline void install_host_allocator() {
  static HostAllocator a;
  set_allocator(DeviceType::CUDA, &a);
  hkt_emu::set_strict_device_memory(false);
}

}  // namespace hkt::test
