// argmax: the index of the maximum along a dim, or over every element (formula
// and ties in hkt/ops/reduce.hpp; kernels on the op list as argmax). Int64
// output, no gradient.
#include <optional>

#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/reduce.hpp"

namespace hkt {
namespace {

class ArgmaxFn final : public Function {
 public:
  ArgmaxFn(std::optional<int64_t> dim, bool keepdim) : dim_(dim), keepdim_(keepdim) {}
  const char* name() const override { return "argmax"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const Tensor& x = in[0];
    HKT_CHECK(x.defined(), "argmax: x is undefined");
    HKT_CHECK(x.dtype() != DType::Bool, "argmax: x is bool", shape_str(x.shape()), "; convert it with to_dtype");
    const std::vector<bool> red = reduced(x);
    Shape out;
    for (size_t d = 0; d < red.size(); ++d) {
      HKT_CHECK(!red[d] || x.size(static_cast<int64_t>(d)) > 0, "argmax: dim ", d, " of x ", shape_str(x.shape()),
                " is empty (no maximum)");
      if (!red[d] || keepdim_) out.push_back(red[d] ? 1 : x.size(static_cast<int64_t>(d)));
    }
    return {{out, DType::Int64, x.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor& x = in[0];
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    kernels::tables().argmax.get(x.device(), x.dtype())(x.raw_data(), x.shape(), x.strides(), reduced(x),
                                                        y.data<int64_t>());
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>&) override { return {Tensor()}; }
  bool differentiable(size_t) const override { return false; }

 private:
  // The dims reduced: dim_ (checked), or every dim.
  std::vector<bool> reduced(const Tensor& x) const {
    std::vector<bool> red(static_cast<size_t>(x.dim()), !dim_);
    const int64_t d = dim_ ? wrap_dim(*dim_, x.dim(), "argmax") : 0;
    if (dim_ && x.dim() > 0) red[static_cast<size_t>(d)] = true;
    return red;
  }
  std::optional<int64_t> dim_;
  bool keepdim_;
};

}  // namespace

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return apply_op<ArgmaxFn>({x}, dim, keepdim); }
Tensor argmax(const Tensor& x) { return apply_op<ArgmaxFn>({x}, std::nullopt, false); }

}  // namespace hkt
