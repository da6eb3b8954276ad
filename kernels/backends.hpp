// The built-in backends' registration (internal), generated from the op list
// (hkt/kernels/op_list.hpp). Each kernel file registers the kernels it
// defines, at the end of its namespace (hkt::cpu or hkt::cuda):
//
//   HKT_CPU_KERNEL(argmax)    // kernels/cpu/*.cpp: cpu::argmax<T> for every T of the list's CPU set
//   HKT_CUDA_KERNEL(argmax)   // kernels/cuda/*.cu: cuda::argmax<T> for every T of its CUDA set
//   HKT_CUDA_KERNEL_AS(softmax, softmax_forward<T, false>)   // a kernel named otherwise
//
// which defines <backend>::register_<id>(Tables&); the kernel must have the
// list's signature (a compile error otherwise). The backend's register file
// (kernels/cpu/register.cpp, kernels/cuda/register.cu) calls every op's, from
// the list, where the op's set there is not kNone. The elementwise family is
// registered by its kernel files' register_elementwise, from its lists.
#pragma once
#include <cstdint>
#include <type_traits>

#include "hkt/kernels/registry.hpp"

namespace hkt::kernels {

// Each op's signature and dtype sets: op_info::<id>::Sig, ::cpu, ::cuda.
namespace op_info {
#define HKT_OP_INFO(id, name, S, cpu_set, cuda_set) \
  struct id {                                       \
    using Sig = sig::S;                             \
    static constexpr DTypeSet cpu = cpu_set;        \
    static constexpr DTypeSet cuda = cuda_set;      \
  };
HKT_KERNEL_OPS(HKT_OP_INFO)
#undef HKT_OP_INFO
}  // namespace op_info

// A kernel's buffer as T: buf<T>(const void*) is const T*, buf<T>(void*) is T*.
template <class T>
const T* buf(const void* p) { return static_cast<const T*>(p); }
template <class T>
T* buf(void* p) { return static_cast<T*>(p); }

// Fills table's slots on dev for every dtype T of Set with make(std::type_identity<T>()),
// the kernel for T (a tag argument rather than make.operator()<T>(): nvcc warns of the latter).
template <DTypeSet Set, class Sig, class Make>
void set_dtypes(KernelTable<Sig>& table, DeviceType dev, Make make) {
  if constexpr (contains(Set, DType::Float32)) table.set(dev, DType::Float32, make(std::type_identity<float>()));
  if constexpr (contains(Set, DType::Float64)) table.set(dev, DType::Float64, make(std::type_identity<double>()));
  if constexpr (contains(Set, DType::Int64)) table.set(dev, DType::Int64, make(std::type_identity<int64_t>()));
  if constexpr (contains(Set, DType::Bool)) table.set(dev, DType::Bool, make(std::type_identity<bool>()));
}

void register_cpu_kernels(Tables& t);
#if HKT_WITH_CUDA
void register_cuda_kernels(Tables& t);
#endif

}  // namespace hkt::kernels

#define HKT_DECLARE_REGISTER(id, ...) void register_##id(kernels::Tables& t);
namespace hkt::cpu {
HKT_KERNEL_OPS(HKT_DECLARE_REGISTER)
void register_elementwise(kernels::Tables& t);
}  // namespace hkt::cpu
namespace hkt::cuda {
HKT_KERNEL_OPS(HKT_DECLARE_REGISTER)
void register_elementwise(kernels::Tables& t);
}  // namespace hkt::cuda
#undef HKT_DECLARE_REGISTER

// For set_dtypes: the address of the kernel expression (naming T) for the tag's T.
#define HKT_KERNEL_OF(...)                  \
  [](auto tag) {                            \
    using T = typename decltype(tag)::type; \
    return &__VA_ARGS__;                    \
  }
// register_<id>: the kernel for every dtype T of op id's set on the backend, as
// the list's signature (a kernel of another signature does not compile).
#define HKT_REGISTER_KERNEL(id, backend, dev, ...)                                                     \
  void register_##id(::hkt::kernels::Tables& t) {                                                      \
    using Sig = ::hkt::kernels::op_info::id::Sig;                                                      \
    ::hkt::kernels::set_dtypes<::hkt::kernels::op_info::id::backend>(t.id, dev, [](auto tag) -> Sig* { \
      using T = typename decltype(tag)::type;                                                          \
      return &__VA_ARGS__;                                                                             \
    });                                                                                                \
  }
// register_elementwise: the elementwise family from its lists, each op for the
// dtypes of its entry, with the backend's unary<Op, T>, unary_grad<Op, T> and
// binary<Op, T, R> (R: T, or bool for the comparisons).
#define HKT_EW_SET(D, table, ...) ::hkt::kernels::set_dtypes<::hkt::kernels::D>(table, dev, HKT_KERNEL_OF(__VA_ARGS__));
#define HKT_EW_UNARY(name, S, D) \
  HKT_EW_SET(D, t.name, unary<ew::S, T>) HKT_EW_SET(D, t.name##_backward, unary_grad<ew::S, T>)
#define HKT_EW_BINARY(name, S, D) HKT_EW_SET(D, t.name, binary<ew::S, T, T>)
#define HKT_EW_COMPARE(name, S, D) HKT_EW_SET(D, t.name, binary<ew::S, T, bool>)
#define HKT_REGISTER_ELEMENTWISE(device)                   \
  void register_elementwise(::hkt::kernels::Tables& t) { \
    constexpr ::hkt::DeviceType dev = device;            \
    HKT_UNARY_OPS(HKT_EW_UNARY)                          \
    HKT_BINARY_OPS(HKT_EW_BINARY)                        \
    HKT_COMPARE_OPS(HKT_EW_COMPARE)                      \
  }

#define HKT_CPU_KERNEL(id) HKT_REGISTER_KERNEL(id, cpu, ::hkt::DeviceType::CPU, id<T>)
#define HKT_CPU_KERNEL_AS(id, ...) HKT_REGISTER_KERNEL(id, cpu, ::hkt::DeviceType::CPU, __VA_ARGS__)
#define HKT_CUDA_KERNEL(id) HKT_REGISTER_KERNEL(id, cuda, ::hkt::DeviceType::CUDA, id<T>)
#define HKT_CUDA_KERNEL_AS(id, ...) HKT_REGISTER_KERNEL(id, cuda, ::hkt::DeviceType::CUDA, __VA_ARGS__)
