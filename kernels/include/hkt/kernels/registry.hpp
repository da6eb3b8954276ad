// The kernel tables of every op on the list (hkt/kernels/op_list.hpp and the
// elementwise lists of hkt/kernels/elementwise_defs.hpp), generated from it,
// and the registry that answers which kernels exist.
//
//   hkt::kernels::tables().softmax.get(x.device(), x.dtype())(...);
//   hkt::supports("softmax", DeviceType::CUDA, DType::Float64);
//   hkt::missing_kernels();   // the completeness check: empty when complete
//
// The tables are filled on first use by each backend built into the library:
// every kernel file registers its kernels for the dtypes the list gives
// (kernels/backends.hpp), with the list's signatures (hkt/kernels/op_list.hpp).
// An op defined outside the library keeps its own KernelTable and registers it
// with register_op, stating the dtypes each backend must provide; it is then
// known to supports(), missing_kernels() and the op-test harness.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "hkt/core/kernel_table.hpp"
#include "hkt/kernels/elementwise_defs.hpp"
#include "hkt/kernels/op_list.hpp"

namespace hkt {
namespace kernels {

struct Tables {
#define HKT_TABLE(id, name, Sig, cpu, cuda) KernelTable<sig::Sig> id{name};
  HKT_KERNEL_OPS(HKT_TABLE)
#undef HKT_TABLE
#define HKT_TABLE(name, S, D)          \
  KernelTable<sig::Unary> name{#name}; \
  KernelTable<sig::UnaryGrad> name##_backward{#name "_backward"};
  HKT_UNARY_OPS(HKT_TABLE)
#undef HKT_TABLE
#define HKT_TABLE(name, S, D) KernelTable<sig::Binary> name{#name};
  HKT_BINARY_OPS(HKT_TABLE)
  HKT_COMPARE_OPS(HKT_TABLE)
#undef HKT_TABLE
};

// The library's tables, filled by every built-in backend on first use.
Tables& tables();

// The tables of an elementwise functor (ew::Exp -> tables().exp, ...).
template <class Op>
struct EwTable;
#define HKT_EW_TABLE(name, S, D)                                                  \
  template <>                                                                     \
  struct EwTable<ew::S> {                                                         \
    static KernelTable<sig::Unary>& fwd() { return tables().name; }               \
    static KernelTable<sig::UnaryGrad>& bwd() { return tables().name##_backward; } \
  };
HKT_UNARY_OPS(HKT_EW_TABLE)
#undef HKT_EW_TABLE
#define HKT_EW_TABLE(name, S, D) \
  template <>                 \
  struct EwTable<ew::S> {     \
    static KernelTable<sig::Binary>& fwd() { return tables().name; } \
  };
HKT_BINARY_OPS(HKT_EW_TABLE)
HKT_COMPARE_OPS(HKT_EW_TABLE)
#undef HKT_EW_TABLE

}  // namespace kernels

// One op known to the registry: its table and the dtypes each backend must have.
struct OpSpec {
  const KernelTableBase* table = nullptr;
  kernels::DTypeSet cpu = kernels::kFloat;   // required of the CPU backend
  kernels::DTypeSet cuda = kernels::kF32;    // required of the CUDA backend, where built
  const std::string& name() const { return table->op(); }
};

// Adds an op (a table that outlives the program's use of it: a static).
// Throws if an op of that name is already registered.
void register_op(const OpSpec& spec);
// Every registered op: the library's list first, in its order, then the outside ones.
std::vector<OpSpec> registered_ops();
// Whether the op has a kernel for that device type and dtype; throws naming
// the op when no op of that name is registered.
bool supports(std::string_view op, DeviceType dev, DType dt);
// Whether this build of the library has the backend (CPU always; CUDA when
// built with it, or with the tests' emulated device).
bool backend_built(DeviceType dev);
// The completeness check: one line "<op>: no kernel for <dtype> on <device>"
// per kernel that an op's spec requires of a built backend and that is missing.
std::vector<std::string> missing_kernels();

}  // namespace hkt
