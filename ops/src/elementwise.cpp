// Elementwise ops: one Function per list entry of hkt/kernels/elementwise_defs.hpp.
#include "hkt/ops/elementwise.hpp"

#include "hkt/core/function.hpp"
#include "hkt/core/kernel_table.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/reduce.hpp"
#include "kernels/cpu/elementwise.hpp"
#if HKT_WITH_CUDA
#include "kernels/cuda/kernels.hpp"
#endif

namespace hkt {
namespace {

using UnarySig = void(const void* x, const Strides& xs, void* y, const Shape& shape);
using UnaryGradSig = void(const void* x, const void* y, const void* g, void* gx, int64_t n);
using BinarySig = void(const void* a, const Strides& as, const void* b, const Strides& bs, void* out,
                       const Shape& shape);

template <class Op, class T>
void cpu_unary(const void* x, const Strides& xs, void* y, const Shape& shape) {
  cpu::unary<Op, T>(static_cast<const T*>(x), xs, static_cast<T*>(y), contiguous_strides(shape), shape);
}
template <class Op, class T>
void cpu_unary_grad(const void* x, const void* y, const void* g, void* gx, int64_t n) {
  cpu::unary_grad<Op, T>(static_cast<const T*>(x), static_cast<const T*>(y), static_cast<const T*>(g),
                         static_cast<T*>(gx), n);
}
template <class Op, class T, class R>
void cpu_binary(const void* a, const Strides& as, const void* b, const Strides& bs, void* out, const Shape& shape) {
  cpu::binary<Op, T, R>(static_cast<const T*>(a), as, static_cast<const T*>(b), bs, static_cast<R*>(out),
                        contiguous_strides(shape), shape);
}

struct UnaryKernels {
  KernelTable<UnarySig> fwd;
  KernelTable<UnaryGradSig> bwd;
};

template <class Op>
UnaryKernels& unary_kernels(const char* name) {
  static UnaryKernels k = [&] {
    UnaryKernels u{KernelTable<UnarySig>(name), KernelTable<UnaryGradSig>(std::string(name) + "_backward")};
    u.fwd.set(DeviceType::CPU, DType::Float32, &cpu_unary<Op, float>);
    u.fwd.set(DeviceType::CPU, DType::Float64, &cpu_unary<Op, double>);
    u.bwd.set(DeviceType::CPU, DType::Float32, &cpu_unary_grad<Op, float>);
    u.bwd.set(DeviceType::CPU, DType::Float64, &cpu_unary_grad<Op, double>);
#if HKT_WITH_CUDA
    u.fwd.set(DeviceType::CUDA, DType::Float32, &cuda::unary<Op, float>);
    u.fwd.set(DeviceType::CUDA, DType::Float64, &cuda::unary<Op, double>);
    u.bwd.set(DeviceType::CUDA, DType::Float32, &cuda::unary_grad<Op, float>);
    u.bwd.set(DeviceType::CUDA, DType::Float64, &cuda::unary_grad<Op, double>);
#endif
    return u;
  }();
  return k;
}

template <class Op, bool Compare>
KernelTable<BinarySig>& binary_kernels(const char* name) {
  static KernelTable<BinarySig> k = [&] {
    KernelTable<BinarySig> t(name);
    using C = std::integral_constant<DeviceType, DeviceType::CPU>;
    if constexpr (Compare) {
      t.set(C::value, DType::Float32, &cpu_binary<Op, float, bool>);
      t.set(C::value, DType::Float64, &cpu_binary<Op, double, bool>);
      t.set(C::value, DType::Int64, &cpu_binary<Op, int64_t, bool>);
      t.set(C::value, DType::Bool, &cpu_binary<Op, bool, bool>);
    } else {
      t.set(C::value, DType::Float32, &cpu_binary<Op, float, float>);
      t.set(C::value, DType::Float64, &cpu_binary<Op, double, double>);
      if constexpr (!std::is_same_v<Op, ew::Div> && !std::is_same_v<Op, ew::Pow>)
        t.set(C::value, DType::Int64, &cpu_binary<Op, int64_t, int64_t>);
    }
#if HKT_WITH_CUDA
    constexpr auto G = DeviceType::CUDA;
    if constexpr (Compare) {
      t.set(G, DType::Float32, &cuda::binary<Op, float, bool>);
      t.set(G, DType::Float64, &cuda::binary<Op, double, bool>);
      t.set(G, DType::Int64, &cuda::binary<Op, int64_t, bool>);
      t.set(G, DType::Bool, &cuda::binary<Op, bool, bool>);
    } else {
      t.set(G, DType::Float32, &cuda::binary<Op, float, float>);
      t.set(G, DType::Float64, &cuda::binary<Op, double, double>);
      if constexpr (!std::is_same_v<Op, ew::Div> && !std::is_same_v<Op, ew::Pow>)
        t.set(G, DType::Int64, &cuda::binary<Op, int64_t, int64_t>);
    }
#endif
    return t;
  }();
  return k;
}

template <class Op>
class UnaryFn final : public Function {
 public:
  explicit UnaryFn(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    HKT_CHECK(is_floating(in[0].dtype()), name_, ": expected a floating tensor, got ", in[0].dtype());
    return {in[0].meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    unary_kernels<Op>(name_).fwd.get(y.device(), y.dtype())(in[0].raw_data(), in[0].strides(), y.raw_data(),
                                                             y.shape());
    x_ = in[0];
    y_ = y;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor x = contiguous(x_.get(name_)), y = y_.get(name_), gc = contiguous(g[0]);
    Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
    unary_kernels<Op>(name_).bwd.get(x.device(), x.dtype())(x.raw_data(), y.raw_data(), gc.raw_data(),
                                                             gx.raw_data(), x.numel());
    return {gx};
  }

 private:
  const char* name_;
  SavedTensor x_, y_;
};

// Gradients of the binary ops, before summing back to the operand shapes.
template <class Op>
struct BinaryGrad;
template <> struct BinaryGrad<ew::Add> {
  static Tensor da(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return g; }
  static Tensor db(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return g; }
};
template <> struct BinaryGrad<ew::Sub> {
  static Tensor da(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return g; }
  static Tensor db(const Tensor& g, const Tensor&, const Tensor&, const Tensor&) { return neg(g); }
};
template <> struct BinaryGrad<ew::Mul> {  // y = a b
  static Tensor da(const Tensor& g, const Tensor&, const Tensor& b, const Tensor&) { return g * b; }
  static Tensor db(const Tensor& g, const Tensor& a, const Tensor&, const Tensor&) { return g * a; }
};
template <> struct BinaryGrad<ew::Div> {  // y = a / b: dy/da = 1/b, dy/db = -y/b
  static Tensor da(const Tensor& g, const Tensor&, const Tensor& b, const Tensor&) { return g / b; }
  static Tensor db(const Tensor& g, const Tensor&, const Tensor& b, const Tensor& y) { return neg(g * y / b); }
};
template <> struct BinaryGrad<ew::Pow> {  // y = a^b: dy/da = b a^(b-1), dy/db = y log(a)
  static Tensor da(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) {
    return g * b * pow(a, b - 1.0);
  }
  static Tensor db(const Tensor& g, const Tensor& a, const Tensor&, const Tensor& y) { return g * y * log(a); }
};
// max/min: the gradient goes to the selected operand, split evenly on ties.
template <> struct BinaryGrad<ew::Maximum> {
  static Tensor share(const Tensor& g, const Tensor& a, const Tensor& b) {
    return g * (to_dtype(gt(a, b), g.dtype()) + 0.5 * to_dtype(eq(a, b), g.dtype()));
  }
  static Tensor da(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) { return share(g, a, b); }
  static Tensor db(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) { return share(g, b, a); }
};
template <> struct BinaryGrad<ew::Minimum> {
  static Tensor da(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) {
    return BinaryGrad<ew::Maximum>::share(g, b, a);
  }
  static Tensor db(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor&) {
    return BinaryGrad<ew::Maximum>::share(g, a, b);
  }
};

template <class Op, bool Compare>
class BinaryFn final : public Function {
 public:
  explicit BinaryFn(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const Tensor &a = in[0], &b = in[1];
    HKT_CHECK(a.dtype() == b.dtype(), name_, ": dtype mismatch: ", a.dtype(), shape_str(a.shape()), " vs ",
              b.dtype(), shape_str(b.shape()));
    HKT_CHECK(a.device() == b.device(), name_, ": device mismatch: ", a.device().str(), " vs ", b.device().str());
    return {{broadcast_shapes(a.shape(), b.shape(), name_), Compare ? DType::Bool : a.dtype(), a.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor &a = in[0], &b = in[1];
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    binary_kernels<Op, Compare>(name_).get(a.device(), a.dtype())(
        a.raw_data(), broadcast_strides(a.shape(), a.strides(), y.shape()), b.raw_data(),
        broadcast_strides(b.shape(), b.strides(), y.shape()), y.raw_data(), y.shape());
    if constexpr (!Compare) {
      a_ = a;
      b_ = b;
      y_ = y;
    }
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    if constexpr (Compare) {
      return {Tensor(), Tensor()};
    } else {
      const Tensor a = a_.get(name_), b = b_.get(name_), y = y_.get(name_);
      Tensor ga, gb;
      if (needs_input_grad(0)) ga = sum_to(BinaryGrad<Op>::da(g[0], a, b, y), a.shape());
      if (needs_input_grad(1)) gb = sum_to(BinaryGrad<Op>::db(g[0], a, b, y), b.shape());
      return {ga, gb};
    }
  }
  bool differentiable(size_t) const override { return !Compare; }

 private:
  const char* name_;
  SavedTensor a_, b_, y_;
};

Tensor scalar_like(double v, const Tensor& t) { return scalar_tensor(v, t.dtype(), t.device()); }

// Clamp: y = min(max(x, lo), hi); gradient passes where lo <= x <= hi.
class ClampFn final : public Function {
 public:
  ClampFn(double lo, double hi) : lo_(lo), hi_(hi) {}
  const char* name() const override { return "clamp"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    HKT_CHECK(lo_ <= hi_, "clamp: lower bound ", lo_, " exceeds upper bound ", hi_);
    return {in[0].meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>&) override {
    x_ = in[0];
    return {minimum(maximum(in[0], lo_), hi_)};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor x = x_.get("clamp");
    const Tensor pass = to_dtype(ge(x, lo_), g[0].dtype()) * to_dtype(le(x, hi_), g[0].dtype());
    return {g[0] * pass};
  }

 private:
  double lo_, hi_;
  SavedTensor x_;
};

}  // namespace

#define HKT_DEFINE_UNARY(name, S) \
  Tensor name(const Tensor& x) { return apply_op<UnaryFn<ew::S>>({x}, #name); }
HKT_UNARY_OPS(HKT_DEFINE_UNARY)
#undef HKT_DEFINE_UNARY

#define HKT_DEFINE_BINARY(name, S)                                                                        \
  Tensor name(const Tensor& a, const Tensor& b) { return apply_op<BinaryFn<ew::S, false>>({a, b}, #name); } \
  Tensor name(const Tensor& a, double b) { return name(a, scalar_like(b, a)); }                           \
  Tensor name(double a, const Tensor& b) { return name(scalar_like(a, b), b); }
HKT_BINARY_OPS(HKT_DEFINE_BINARY)
#undef HKT_DEFINE_BINARY

#define HKT_DEFINE_COMPARE(name, S)                                                                      \
  Tensor name(const Tensor& a, const Tensor& b) { return apply_op<BinaryFn<ew::S, true>>({a, b}, #name); } \
  Tensor name(const Tensor& a, double b) { return name(a, scalar_like(b, a)); }
HKT_COMPARE_OPS(HKT_DEFINE_COMPARE)
#undef HKT_DEFINE_COMPARE

Tensor gelu(const Tensor& x, bool approximate) { return approximate ? gelu_tanh(x) : gelu_erf(x); }
Tensor square(const Tensor& x) { return x * x; }
Tensor clamp(const Tensor& x, double lo, double hi) { return apply_op<ClampFn>({x}, lo, hi); }

}  // namespace hkt
