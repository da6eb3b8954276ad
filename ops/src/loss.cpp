// cross_entropy: fused log-softmax + NLL (kernels/cpu/loss.cpp).
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/reduce.hpp"

namespace hkt {
namespace {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
    case Reduction::None: return "none";
  }
  return "?";
}

// Inputs: logits [N, C] (floating), targets [N] (int64, no gradient).
// Saves the logits, the targets and the per-row log-sum-exp [N].
class CrossEntropyFn final : public Function {
 public:
  CrossEntropyFn(int64_t ignore_index, Reduction reduction) : ignore_(ignore_index), reduction_(reduction) {}
  const char* name() const override { return "cross_entropy"; }
  bool differentiable(size_t i) const override { return i == 0; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const Tensor &x = in[0], &t = in[1];
    HKT_CHECK(x.dim() == 2, "cross_entropy: expected logits of shape [N, C], got ", shape_str(x.shape()));
    HKT_CHECK(is_floating(x.dtype()), "cross_entropy: expected floating logits, got ", x.dtype(),
              shape_str(x.shape()));
    const int64_t N = x.size(0), C = x.size(1);
    HKT_CHECK(C > 0, "cross_entropy: logits ", shape_str(x.shape()), " have no classes");
    HKT_CHECK(t.dim() == 1 && t.size(0) == N, "cross_entropy: expected targets of shape [", N,
              "] (one per row of logits ", shape_str(x.shape()), "), got ", shape_str(t.shape()));
    HKT_CHECK(t.dtype() == DType::Int64, "cross_entropy: expected int64 targets, got ", t.dtype(),
              shape_str(t.shape()));
    HKT_CHECK(t.device() == x.device(), "cross_entropy: targets are on ", t.device().str(), " but logits on ",
              x.device().str());
    return {{reduction_ == Reduction::None ? Shape{N} : Shape{}, x.dtype(), x.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor x = contiguous(in[0]), t = contiguous(in[1]);
    const int64_t N = x.size(0), C = x.size(1);
    int64_t bad_row = -1, bad_value = 0, count = 0;
    kernels::tables().ce_check.get(t.device(), t.dtype())(t.data<int64_t>(), N, C, ignore_, &bad_row, &bad_value,
                                                          &count);
    HKT_CHECK(bad_row < 0, "cross_entropy: target ", bad_value, " at row ", bad_row, " is outside [0, ", C,
              ") and is not ignore_index (", ignore_, ")");
    HKT_CHECK(reduction_ != Reduction::Mean || count > 0, "cross_entropy: reduction 'mean' with all ", N,
              " targets equal to ignore_index (", ignore_, "): nothing to average");
    count_ = count;
    Tensor rows = Tensor::empty({N}, x.dtype(), x.device());
    Tensor lse = Tensor::empty({N}, x.dtype(), x.device());
    kernels::tables().cross_entropy.get(x.device(), x.dtype())(x.raw_data(), t.data<int64_t>(), N, C, ignore_,
                                                               rows.raw_data(), lse.raw_data());
    x_ = x;
    t_ = t;
    lse_ = lse;
    Tensor y;
    switch (reduction_) {
      case Reduction::None: y = rows; break;
      case Reduction::Sum: y = sum(rows); break;
      case Reduction::Mean: y = sum(rows) / static_cast<double>(count); break;
    }
    HKT_CHECK(y.meta() == out[0], "cross_entropy: internal error, reduction '", reduction_name(reduction_),
              "' gave ", meta_str(y.meta()), ", expected ", meta_str(out[0]));
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor x = x_.get(name()), t = t_.get(name()), lse = lse_.get(name());
    const Tensor g = contiguous(grads[0]);
    const int64_t N = x.size(0), C = x.size(1);
    const double scale = reduction_ == Reduction::Mean ? 1.0 / static_cast<double>(count_) : 1.0;
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    kernels::tables().cross_entropy_backward.get(x.device(), x.dtype())(
        x.raw_data(), t.data<int64_t>(), N, C, ignore_, lse.raw_data(), g.raw_data(),
        reduction_ == Reduction::None ? 1 : 0, scale, dx.raw_data());
    return {dx, Tensor()};
  }

 private:
  int64_t ignore_;
  Reduction reduction_;
  int64_t count_ = 0;
  SavedTensor x_, t_, lse_;
};

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, Reduction reduction) {
  return apply_op<CrossEntropyFn>({logits, targets}, ignore_index, reduction);
}

}  // namespace hkt
