// bias_gelu: y = gelu(x + b), the fused epilogue of a linear layer (formula
// and gradient in hkt/ops/nn.hpp; kernels on the op list as bias_gelu and
// bias_gelu_backward).
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/reduce.hpp"

namespace hkt {
namespace {

// Inputs: x [..., C], b [C]. Saves x and b.
class BiasGeluFn final : public Function {
 public:
  explicit BiasGeluFn(bool approximate) : approximate_(approximate) {}
  const char* name() const override { return "bias_gelu"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    HKT_CHECK(in[0].defined() && in[1].defined(), op, ": x and b must be defined");
    const Tensor &x = in[0], &b = in[1];
    HKT_CHECK(x.dim() >= 1, op, ": x must have at least one dim (the channels), got a scalar");
    HKT_CHECK(is_floating(x.dtype()), op, ": expected a floating x, got ", x.dtype(), shape_str(x.shape()));
    HKT_CHECK(b.shape() == Shape{x.size(-1)}, op, ": b must have shape [", x.size(-1), "] (the last dim of x ",
              shape_str(x.shape()), "), got ", shape_str(b.shape()));
    HKT_CHECK(b.dtype() == x.dtype(), op, ": b is ", b.dtype(), " but x is ", x.dtype());
    HKT_CHECK(b.device() == x.device(), op, ": b is on ", b.device().str(), " but x is on ", x.device().str());
    return {x.meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor x = contiguous(in[0]), b = contiguous(in[1]);
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const int64_t C = x.size(-1), rows = C > 0 ? x.numel() / C : 0;
    kernels::tables().bias_gelu.get(x.device(), x.dtype())(x.raw_data(), b.raw_data(), y.raw_data(), rows, C,
                                                           approximate_);
    x_ = x;
    b_ = b;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor x = x_.get(name()), b = b_.get(name()), g = contiguous(grads[0]);
    const int64_t C = x.size(-1), rows = C > 0 ? x.numel() / C : 0;
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    kernels::tables().bias_gelu_backward.get(x.device(), x.dtype())(x.raw_data(), b.raw_data(), g.raw_data(),
                                                                    dx.raw_data(), rows, C, approximate_);
    const Tensor db = needs_input_grad(1) ? sum_to(dx, b.shape()) : Tensor();
    return {needs_input_grad(0) ? dx : Tensor(), db};
  }

 private:
  bool approximate_;
  SavedTensor x_, b_;
};

}  // namespace

Tensor bias_gelu(const Tensor& x, const Tensor& b, bool approximate) {
  return apply_op<BiasGeluFn>({x, b}, approximate);
}

}  // namespace hkt
