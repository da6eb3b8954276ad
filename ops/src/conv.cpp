// causal_depthwise_conv1d: one op with its own forward and backward kernels
// (kernels/cpu/conv.cpp).
#include "hkt/ops/conv.hpp"

#include "hkt/core/function.hpp"
#include "hkt/core/profiler.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"

namespace hkt {
namespace {

const void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }
void* data_or_null_mut(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// Inputs: x [B, T, C], weight [C, k], bias [C] or undefined. Saves x and weight.
class CausalDepthwiseConv1dFn final : public Function {
 public:
  explicit CausalDepthwiseConv1dFn(int64_t stride) : stride_(stride) {}
  const char* name() const override { return "causal_depthwise_conv1d"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    HKT_CHECK(in[0].defined(), op, ": x is undefined");
    HKT_CHECK(in[1].defined(), op, ": weight is undefined");
    const Tensor& x = in[0];
    HKT_CHECK(x.dim() == 3, op, ": x must be 3-D [B, T, C], got ", shape_str(x.shape()));
    HKT_CHECK(is_floating(x.dtype()), op, ": expected a floating x, got ", x.dtype(), shape_str(x.shape()));
    HKT_CHECK(stride_ >= 1, op, ": stride must be >= 1, got ", stride_);
    const int64_t C = x.size(2);
    const Tensor& w = in[1];
    HKT_CHECK(w.dim() == 2 && w.size(0) == C && w.size(1) >= 1, op, ": weight must have shape [C, k] with C = ", C,
              " (the last dim of x ", shape_str(x.shape()), ") and k >= 1, got ", shape_str(w.shape()));
    if (in[2].defined())
      HKT_CHECK(in[2].shape() == Shape{C}, op, ": bias must have shape [", C, "] (the last dim of x ",
                shape_str(x.shape()), "), got ", shape_str(in[2].shape()));
    const char* which[] = {"x", "weight", "bias"};
    for (size_t i = 1; i < 3; ++i) {
      if (!in[i].defined()) continue;
      HKT_CHECK(in[i].dtype() == x.dtype(), op, ": ", which[i], " is ", in[i].dtype(), " but x is ", x.dtype());
      HKT_CHECK(in[i].device() == x.device(), op, ": ", which[i], " is on ", in[i].device().str(),
                " but x is on ", x.device().str());
    }
    const int64_t T_out = (x.size(1) + stride_ - 1) / stride_;  // ceil(T / s)
    return {{Shape{x.size(0), T_out, C}, x.dtype(), x.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor x = contiguous(in[0]);
    const Tensor w = contiguous(in[1]);
    const Tensor b = in[2].defined() ? contiguous(in[2]) : Tensor();
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    kernels::tables().conv.get(x.device(), x.dtype())(x.raw_data(), w.raw_data(), data_or_null(b), y.raw_data(),
                                                      x.size(0), x.size(1), x.size(2), w.size(1), stride_);
    profiler::count(2.0 * static_cast<double>(y.numel()) * static_cast<double>(w.size(1)));  // 2 k per output
    x_ = x;
    w_ = w;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor x = x_.get(name()), w = w_.get(name());
    const Tensor g = contiguous(grads[0]);
    const int64_t C = x.size(2), k = w.size(1);
    Tensor dx, dw, db;
    if (needs_input_grad(0)) dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (needs_input_grad(1)) dw = Tensor::empty({C, k}, x.dtype(), x.device());
    if (needs_input_grad(2)) db = Tensor::empty({C}, x.dtype(), x.device());
    if (!dx.defined() && !dw.defined() && !db.defined()) return {dx, dw, db};
    kernels::tables().conv_backward.get(x.device(), x.dtype())(x.raw_data(), w.raw_data(), g.raw_data(), x.size(0),
                                                               x.size(1), C, k, stride_, data_or_null_mut(dx),
                                                               data_or_null_mut(dw), data_or_null_mut(db));
    // dx and dw: 2 k per output element each (the forward's count twice).
    profiler::count(4.0 * static_cast<double>(g.numel()) * static_cast<double>(k));
    return {dx, dw, db};
  }

 private:
  int64_t stride_;
  SavedTensor x_, w_;
};

}  // namespace

Tensor causal_depthwise_conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride) {
  return apply_op<CausalDepthwiseConv1dFn>({x, weight, bias}, stride);
}

}  // namespace hkt
