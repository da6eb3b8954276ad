// Elementwise ops: one Function per list entry of hkt/kernels/elementwise_defs.hpp.
#include "hkt/ops/elementwise.hpp"

#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/reduce.hpp"

namespace hkt {
namespace {

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
    kernels::EwTable<Op>::fwd().get(y.device(), y.dtype())(in[0].raw_data(), in[0].strides(), y.raw_data(),
                                                             y.shape());
    x_ = in[0];
    y_ = y;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor x = contiguous(x_.get(name_)), y = y_.get(name_), gc = contiguous(g[0]);
    Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
    kernels::EwTable<Op>::bwd().get(x.device(), x.dtype())(x.raw_data(), y.raw_data(), gc.raw_data(),
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
    kernels::EwTable<Op>::fwd().get(a.device(), a.dtype())(
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

}  // namespace

#define HKT_DEFINE_UNARY(name, S, D) \
  Tensor name(const Tensor& x) { return apply_op<UnaryFn<ew::S>>({x}, #name); }
HKT_UNARY_OPS(HKT_DEFINE_UNARY)
#undef HKT_DEFINE_UNARY

#define HKT_DEFINE_BINARY(name, S, D)                                                                      \
  Tensor name(const Tensor& a, const Tensor& b) { return apply_op<BinaryFn<ew::S, false>>({a, b}, #name); } \
  Tensor name(const Tensor& a, double b) { return name(a, scalar_like(b, a)); }                           \
  Tensor name(double a, const Tensor& b) { return name(scalar_like(a, b), b); }
HKT_BINARY_OPS(HKT_DEFINE_BINARY)
#undef HKT_DEFINE_BINARY

#define HKT_DEFINE_COMPARE(name, S, D)                                                                     \
  Tensor name(const Tensor& a, const Tensor& b) { return apply_op<BinaryFn<ew::S, true>>({a, b}, #name); } \
  Tensor name(const Tensor& a, double b) { return name(a, scalar_like(b, a)); }
HKT_COMPARE_OPS(HKT_DEFINE_COMPARE)
#undef HKT_DEFINE_COMPARE

Tensor gelu(const Tensor& x, bool approximate) { return approximate ? gelu_tanh(x) : gelu_erf(x); }
Tensor square(const Tensor& x) { return x * x; }

}  // namespace hkt
