// KernelTable: per-op dispatch of a kernel by device type and dtype.
//
//   hkt::KernelTable<void(const void*, void*, int64_t)> my_kernels{"my_op"};
//   my_kernels.set(DeviceType::CPU, DType::Float32, &my_cpu_kernel);
//   my_kernels.get(t.device(), t.dtype())(...);   // throws if missing
//
// The built-in ops' tables are generated from one list
// (<hkt/kernels/op_list.hpp>) and filled by the backends' registration files;
// an op defined outside the library declares its own tables and registers them
// with hkt::register_op (<hkt/kernels/registry.hpp>) so that supports() and the
// completeness check see it. A missing entry raises an hkt::Error naming the
// op, the device and the dtype.
#pragma once
#include <array>
#include <string>

#include "hkt/core/dtype.hpp"

namespace hkt {

// What a table is, whatever its kernels' signature: its op name and which
// (device type, dtype) slots are filled.
class KernelTableBase {
 public:
  explicit KernelTableBase(std::string op) : op_(std::move(op)) {}
  virtual ~KernelTableBase() = default;
  virtual bool has(DeviceType dev, DType dt) const = 0;
  const std::string& op() const { return op_; }

 protected:
  static size_t slot(DeviceType dev, DType dt) {
    return static_cast<size_t>(dev) * kNumDTypes + static_cast<size_t>(dt);
  }

 private:
  std::string op_;
};

template <class Sig>
class KernelTable final : public KernelTableBase {
 public:
  explicit KernelTable(std::string op) : KernelTableBase(std::move(op)) { table_.fill(nullptr); }
  void set(DeviceType dev, DType dt, Sig* fn) { table_[slot(dev, dt)] = fn; }
  bool has(DeviceType dev, DType dt) const override { return table_[slot(dev, dt)] != nullptr; }
  Sig* get(Device dev, DType dt) const {
    Sig* f = table_[slot(dev.type, dt)];
    HKT_CHECK(f, op(), ": no kernel for ", dtype_name(dt), " on ", dev.str());
    return f;
  }

 private:
  std::array<Sig*, kNumDeviceTypes * kNumDTypes> table_;
};

}  // namespace hkt
