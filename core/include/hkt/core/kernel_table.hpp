// KernelTable: per-op dispatch of a kernel by device type and dtype.
//
//   inline KernelTable<void(const float*, float*, int64_t)> my_kernels{"my_op"};
//   my_kernels.set(DeviceType::CPU, DType::Float32, &my_cpu_kernel);
//   my_kernels.get(t.device(), t.dtype())(...);   // throws if missing
//
// Backends register their kernels into the tables of the ops they support;
// a missing entry raises an hkt::Error naming the op, device and dtype.
#pragma once
#include <array>
#include <string>

#include "hkt/core/dtype.hpp"

namespace hkt {

template <class Sig>
class KernelTable {
 public:
  explicit KernelTable(std::string op) : op_(std::move(op)) { table_.fill(nullptr); }
  void set(DeviceType dev, DType dt, Sig* fn) { table_[slot(dev, dt)] = fn; }
  bool has(DeviceType dev, DType dt) const { return table_[slot(dev, dt)] != nullptr; }
  Sig* get(Device dev, DType dt) const {
    Sig* f = table_[slot(dev.type, dt)];
    HKT_CHECK(f, op_, ": no kernel for ", dtype_name(dt), " on ", dev.str());
    return f;
  }
  const std::string& op() const { return op_; }

 private:
  static size_t slot(DeviceType dev, DType dt) {
    return static_cast<size_t>(dev) * kNumDTypes + static_cast<size_t>(dt);
  }
  std::string op_;
  std::array<Sig*, kNumDeviceTypes * kNumDTypes> table_;
};

}  // namespace hkt
