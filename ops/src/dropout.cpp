// dropout: a Philox keep-mask (kernels/cpu/random.cpp), saved for backward.
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/nn.hpp"

namespace hkt {
namespace {

// y = x * mask, with the mask (already scaled by 1 / (1 - p)) saved for backward.
// The mask is laid out in x's logical row-major order, so it does not depend
// on x's strides.
class DropoutFn final : public Function {
 public:
  DropoutFn(double p, Generator* gen) : p_(p), gen_(gen) {}
  const char* name() const override { return "dropout"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    HKT_CHECK(is_floating(in[0].dtype()), "dropout: expected a floating tensor, got ", in[0].dtype(),
              shape_str(in[0].shape()));
    return {in[0].meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor& x = in[0];
    Generator& g = gen_ ? *gen_ : default_generator();
    Tensor mask = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const auto kernel = kernels::tables().dropout.get(x.device(), x.dtype());
    const uint64_t first = g.reserve(static_cast<uint64_t>(mask.numel()));
    kernel(mask.raw_data(), mask.numel(), g.seed(), first, p_);
    mask_ = mask;
    return {mul(x, mask)};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override { return {g[0] * mask_.get(name())}; }

 private:
  double p_;
  Generator* gen_;
  SavedTensor mask_;
};

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  HKT_CHECK(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  return apply_op<DropoutFn>({x}, p, gen);
}

}  // namespace hkt
