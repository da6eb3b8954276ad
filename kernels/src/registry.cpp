// The library's kernel tables, filled by the built-in backends on first use,
// and the registry of ops (the library's and the ones registered from outside).
#include "hkt/kernels/registry.hpp"

#include <algorithm>
#include <mutex>

#include "kernels/backends.hpp"

namespace hkt {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<OpSpec> ops;
};

Registry& registry_storage() {
  static Registry r;
  return r;
}

void add_locked(Registry& r, const OpSpec& spec) {
  HKT_CHECK(spec.table, "register_op: the spec has no kernel table");
  const std::string& name = spec.name();
  HKT_CHECK(!name.empty(), "register_op: the kernel table has no op name");
  const bool taken = std::any_of(r.ops.begin(), r.ops.end(), [&](const OpSpec& o) { return o.name() == name; });
  HKT_CHECK(!taken, "register_op: an op named '", name, "' is already registered");
  r.ops.push_back(spec);
}

// The library's list, in its order: every table with its spec.
void add_builtin_ops(Registry& r, kernels::Tables& t) {
  using namespace kernels;
#define HKT_ADD(id, name, Sig, cpu, cuda) add_locked(r, {&t.id, cpu, cuda});
  HKT_KERNEL_OPS(HKT_ADD)
#undef HKT_ADD
#define HKT_ADD(name, S, D)     \
  add_locked(r, {&t.name, D, D}); \
  add_locked(r, {&t.name##_backward, D, D});
  HKT_UNARY_OPS(HKT_ADD)
#undef HKT_ADD
#define HKT_ADD(name, S, D) add_locked(r, {&t.name, D, D});
  HKT_BINARY_OPS(HKT_ADD)
  HKT_COMPARE_OPS(HKT_ADD)
#undef HKT_ADD
}

Registry& registry() {
  kernels::tables();  // the built-in ops are registered with the tables
  return registry_storage();
}

}  // namespace

namespace kernels {

Tables& tables() {
  static Tables* const t = [] {
    auto* tab = new Tables;  // never destroyed: ops may run during static destruction
    register_cpu_kernels(*tab);
#if HKT_WITH_CUDA
    register_cuda_kernels(*tab);
#endif
    Registry& r = registry_storage();
    std::lock_guard lock(r.mu);
    add_builtin_ops(r, *tab);
    return tab;
  }();
  return *t;
}

}  // namespace kernels

void register_op(const OpSpec& spec) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  add_locked(r, spec);
}

std::vector<OpSpec> registered_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.ops;
}

bool supports(std::string_view op, DeviceType dev, DType dt) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const OpSpec& o : r.ops)
    if (o.name() == op) return o.table->has(dev, dt);
  throw Error(str_cat("supports: no op named '", op, "' is registered"));
}

bool backend_built(DeviceType dev) {
#if HKT_WITH_CUDA
  return dev == DeviceType::CPU || dev == DeviceType::CUDA;
#else
  return dev == DeviceType::CPU;
#endif
}

std::vector<std::string> missing_kernels() {
  std::vector<std::string> out;
  constexpr DType kAll[] = {DType::Float32, DType::Float64, DType::Int64, DType::Bool};
  for (const OpSpec& o : registered_ops()) {
    for (DeviceType dev : {DeviceType::CPU, DeviceType::CUDA}) {
      if (!backend_built(dev)) continue;
      const kernels::DTypeSet need = dev == DeviceType::CPU ? o.cpu : o.cuda;
      for (DType dt : kAll)
        if (kernels::contains(need, dt) && !o.table->has(dev, dt))
          out.push_back(str_cat(o.name(), ": no kernel for ", dtype_name(dt), " on ",
                                dev == DeviceType::CPU ? "cpu" : "cuda"));
    }
  }
  return out;
}

}  // namespace hkt
