// softmax / log_softmax: one fused kernel per direction (kernels/cpu/softmax.cpp).
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"

namespace hkt {
namespace {

struct RowGeometry {
  int64_t outer = 1, D = 1, inner = 1;
};

// A 0-dim tensor is treated as one row of one element.
RowGeometry geometry(const Shape& shape, int64_t dim, const char* op) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t d = wrap_dim(dim, nd == 0 ? 1 : nd, op);
  RowGeometry g;
  if (nd == 0) return g;
  for (int64_t i = 0; i < d; ++i) g.outer *= shape[i];
  g.D = shape[d];
  for (int64_t i = d + 1; i < nd; ++i) g.inner *= shape[i];
  return g;
}

// Saves only the output y: both backward formulas are written in y.
class SoftmaxFn final : public Function {
 public:
  SoftmaxFn(int64_t dim, bool log) : dim_(dim), log_(log) {}
  const char* name() const override { return log_ ? "log_softmax" : "softmax"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    HKT_CHECK(is_floating(in[0].dtype()), name(), ": expected a floating tensor, got ", in[0].dtype(),
              shape_str(in[0].shape()));
    geometry(in[0].shape(), dim_, name());  // validates dim
    return {in[0].meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor x = contiguous(in[0]);
    geo_ = geometry(x.shape(), dim_, name());
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    (log_ ? kernels::tables().log_softmax : kernels::tables().softmax)
        .get(x.device(), x.dtype())(x.raw_data(), y.raw_data(), geo_.outer, geo_.D, geo_.inner);
    y_ = y;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor y = y_.get(name()), gc = contiguous(g[0]);
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    (log_ ? kernels::tables().log_softmax_backward : kernels::tables().softmax_backward)
        .get(y.device(), y.dtype())(y.raw_data(), gc.raw_data(), dx.raw_data(), geo_.outer, geo_.D, geo_.inner);
    return {dx};
  }

 private:
  int64_t dim_;
  bool log_;
  RowGeometry geo_;
  SavedTensor y_;
};

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return apply_op<SoftmaxFn>({x}, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return apply_op<SoftmaxFn>({x}, dim, true); }

}  // namespace hkt
