#include "hkt/core/storage.hpp"

#include <array>
#include <cstdlib>
#include <new>

namespace hkt {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override {
    const size_t n = ((nbytes + 63) / 64) * 64;
    void* p = std::aligned_alloc(64, n == 0 ? 64 : n);
    if (!p) throw Error(str_cat("out of memory: could not allocate ", nbytes, " bytes on cpu"));
    return p;
  }
  void deallocate(void* p, size_t, Device) override { std::free(p); }
};

std::array<Allocator*, kNumDeviceTypes>& allocators() {
  static CpuAllocator cpu;
  static std::array<Allocator*, kNumDeviceTypes> a{&cpu, nullptr};
  return a;
}

}  // namespace

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
