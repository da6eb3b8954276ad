// layer_norm: one fused op with its own forward and backward kernels
// (kernels/cpu/layer_norm.cpp).
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"

namespace hkt {
namespace {

const void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }
void* data_or_null_mut(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// Inputs: x [..., D], weight [D] or undefined, bias [D] or undefined.
// Saves x, weight, and the per-row mean and rstd [rows].
class LayerNormFn final : public Function {
 public:
  explicit LayerNormFn(double eps) : eps_(eps) {}
  const char* name() const override { return "layer_norm"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const Tensor& x = in[0];
    HKT_CHECK(is_floating(x.dtype()), "layer_norm: expected a floating input, got ", x.dtype(),
              shape_str(x.shape()));
    HKT_CHECK(x.dim() >= 1, "layer_norm: expected an input with at least 1 dim, got a 0-dim tensor");
    const int64_t D = x.size(-1);
    HKT_CHECK(D > 0, "layer_norm: the normalised (last) dim is empty in input ", shape_str(x.shape()));
    HKT_CHECK(eps_ >= 0, "layer_norm: eps must be >= 0, got ", eps_);
    const char* which[] = {"input", "weight", "bias"};
    for (size_t i = 1; i < 3; ++i) {
      if (!in[i].defined()) continue;
      HKT_CHECK(in[i].shape() == Shape{D}, "layer_norm: ", which[i], " must have shape [", D,
                "] (the last dim of input ", shape_str(x.shape()), "), got ", shape_str(in[i].shape()));
      HKT_CHECK(in[i].dtype() == x.dtype(), "layer_norm: ", which[i], " is ", in[i].dtype(), " but the input is ",
                x.dtype());
      HKT_CHECK(in[i].device() == x.device(), "layer_norm: ", which[i], " is on ", in[i].device().str(),
                " but the input is on ", x.device().str());
    }
    return {x.meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor x = contiguous(in[0]);
    const Tensor w = in[1].defined() ? contiguous(in[1]) : Tensor();
    const Tensor b = in[2].defined() ? contiguous(in[2]) : Tensor();
    const int64_t D = x.size(-1), rows = x.numel() / D;
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());
    Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());
    kernels::tables().layer_norm.get(x.device(), x.dtype())(
        x.raw_data(), data_or_null(w), data_or_null(b), y.raw_data(), mean.raw_data(), rstd.raw_data(), rows, D, eps_);
    x_ = x;
    w_ = w;
    mean_ = mean;
    rstd_ = rstd;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor x = x_.get(name()), w = w_.get(name()), mean = mean_.get(name()), rstd = rstd_.get(name());
    const Tensor g = contiguous(grads[0]);
    const int64_t D = x.size(-1), rows = x.numel() / D;
    Tensor dx, dw, db;
    if (needs_input_grad(0)) dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (needs_input_grad(1)) dw = Tensor::empty({D}, x.dtype(), x.device());
    if (needs_input_grad(2)) db = Tensor::empty({D}, x.dtype(), x.device());
    kernels::tables().layer_norm_backward.get(x.device(), x.dtype())(
        x.raw_data(), g.raw_data(), data_or_null(w), mean.raw_data(), rstd.raw_data(), rows, D, data_or_null_mut(dx),
        data_or_null_mut(dw), data_or_null_mut(db));
    return {dx, dw, db};
  }

 private:
  double eps_;
  SavedTensor x_, w_, mean_, rstd_;
};

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  return apply_op<LayerNormFn>({x, weight, bias}, eps);
}

}  // namespace hkt
