// clamp: y = min(max(x, lo), hi), one fused kernel per direction (formula,
// bounds and gradient in hkt/ops/elementwise.hpp; kernels on the op list as
// clamp and clamp_backward).
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"

namespace hkt {
namespace {

// Saves x.
class ClampFn final : public Function {
 public:
  ClampFn(double lo, double hi) : lo_(lo), hi_(hi) {}
  const char* name() const override { return "clamp"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    HKT_CHECK(in[0].defined(), "clamp: x is undefined");
    HKT_CHECK(lo_ <= hi_, "clamp: lower bound ", lo_, " exceeds upper bound ", hi_);
    return {in[0].meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor& x = in[0];
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    kernels::tables().clamp.get(x.device(), x.dtype())(x.raw_data(), x.strides(), y.raw_data(), y.shape(), lo_, hi_);
    x_ = x;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor x = contiguous(x_.get(name())), gc = contiguous(g[0]);
    Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
    kernels::tables().clamp_backward.get(x.device(), x.dtype())(x.raw_data(), gc.raw_data(), gx.raw_data(),
                                                                x.numel(), lo_, hi_);
    return {gx};
  }

 private:
  double lo_, hi_;
  SavedTensor x_;
};

}  // namespace

Tensor clamp(const Tensor& x, double lo, double hi) { return apply_op<ClampFn>({x}, lo, hi); }

}  // namespace hkt
