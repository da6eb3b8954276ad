// gated_mix: one op with its own forward and backward kernels
// (kernels/cpu/gated_mix.cpp, kernels/cuda/gated_mix.cu).
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"

namespace hkt {
namespace {

void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// Inputs: a, b [..., C] (same shape), w [C]. Saves a, b and w (a, b are read only for dw).
class GatedMixFn final : public Function {
 public:
  const char* name() const override { return "gated_mix"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    const char* which[] = {"a", "b", "w"};
    for (size_t i = 0; i < 3; ++i) HKT_CHECK(in[i].defined(), op, ": ", which[i], " is undefined");
    const Tensor& a = in[0];
    HKT_CHECK(a.dim() >= 1, op, ": a must have at least one dim (the channels), got a scalar");
    HKT_CHECK(is_floating(a.dtype()), op, ": expected a floating a, got ", a.dtype(), shape_str(a.shape()));
    HKT_CHECK(in[1].shape() == a.shape(), op, ": b must have the shape of a ", shape_str(a.shape()), ", got ",
              shape_str(in[1].shape()));
    const int64_t C = a.size(-1);
    HKT_CHECK(in[2].shape() == Shape{C}, op, ": w must have shape [", C, "] (the last dim of a ",
              shape_str(a.shape()), "), got ", shape_str(in[2].shape()));
    for (size_t i = 1; i < 3; ++i) {
      HKT_CHECK(in[i].dtype() == a.dtype(), op, ": ", which[i], " is ", in[i].dtype(), " but a is ", a.dtype());
      HKT_CHECK(in[i].device() == a.device(), op, ": ", which[i], " is on ", in[i].device().str(), " but a is on ",
                a.device().str());
    }
    return {{a.shape(), a.dtype(), a.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor a = contiguous(in[0]), b = contiguous(in[1]), w = contiguous(in[2]);
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const int64_t C = a.size(-1), rows = C > 0 ? a.numel() / C : 0;
    kernels::tables().gated_mix.get(a.device(), a.dtype())(a.raw_data(), b.raw_data(), w.raw_data(), y.raw_data(), rows,
                                                           C);
    a_ = a;
    b_ = b;
    w_ = w;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor w = w_.get(name());
    const Tensor g = contiguous(grads[0]);
    const bool want_w = needs_input_grad(2);
    const Tensor a = want_w ? a_.get(name()) : Tensor(), b = want_w ? b_.get(name()) : Tensor();
    const int64_t C = g.size(-1), rows = C > 0 ? g.numel() / C : 0;
    Tensor da, db, dw;
    if (needs_input_grad(0)) da = Tensor::empty(g.shape(), g.dtype(), g.device());
    if (needs_input_grad(1)) db = Tensor::empty(g.shape(), g.dtype(), g.device());
    if (want_w) dw = Tensor::empty({C}, g.dtype(), g.device());
    if (!da.defined() && !db.defined() && !dw.defined()) return {da, db, dw};
    kernels::tables().gated_mix_backward.get(g.device(), g.dtype())(data_or_null(a), data_or_null(b), w.raw_data(),
                                                                    g.raw_data(), rows, C, data_or_null(da),
                                                                    data_or_null(db), data_or_null(dw));
    return {da, db, dw};
  }

 private:
  SavedTensor a_, b_, w_;
};

}  // namespace

Tensor gated_mix(const Tensor& a, const Tensor& b, const Tensor& w) { return apply_op<GatedMixFn>({a, b, w}); }

}  // namespace hkt
