// For programs that run CUDA kernels in the emulator (kernels/cuda_emu) on their
// own, without the emulated backend: host memory standing in for device
// memory, so that the kernels' Scratch buffers and the CPU tensors' memory
// can be handed to the kernels.
#pragma once
#include <cstdlib>
#include <new>

#include "kernels/cuda_emu/emulated.hpp"
#include "hkt/core/storage.hpp"

namespace hkt_emu {

struct HostAllocator : hkt::Allocator {
  void* allocate(size_t nbytes, hkt::Device) override {
    void* p = std::aligned_alloc(256, (nbytes + 255) / 256 * 256 + 256);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, size_t, hkt::Device) override { std::free(p); }
};
// The emulator's device-memory checks (kernels/cuda_emu/include/cuda_runtime.h)
// are off while it is installed.
inline void install_host_allocator() {
  static HostAllocator a;
  hkt::set_allocator(hkt::DeviceType::CUDA, &a);
  set_strict_device_memory(false);
}

}  // namespace hkt_emu
