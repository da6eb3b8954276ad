// Reductions: sum and max have kernels; mean and var are built from them.
#include "hkt/ops/reduce.hpp"

#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/view.hpp"

namespace hkt {
namespace {

// Normalised reduction: which dims, and the output shapes with/without keepdim.
struct ReduceSpec {
  std::vector<bool> red;
  Shape keep_shape, out_shape;
  int64_t count = 1;  // elements reduced into each output
};

ReduceSpec make_spec(const Shape& shape, const Dims& dims, bool keepdim, const char* op) {
  ReduceSpec s;
  const int64_t nd = static_cast<int64_t>(shape.size());
  s.red.assign(shape.size(), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, op);
    HKT_CHECK(nd == 0 || !s.red[w], op, ": dim ", d, " given twice");
    if (nd > 0) s.red[w] = true;
  }
  for (int64_t d = 0; d < nd; ++d) {
    s.keep_shape.push_back(s.red[d] ? 1 : shape[d]);
    if (s.red[d]) s.count *= shape[d];
    if (!s.red[d] || keepdim) s.out_shape.push_back(s.keep_shape.back());
  }
  return s;
}

class ReduceFn final : public Function {
 public:
  ReduceFn(bool is_max, Dims dims, bool keepdim) : is_max_(is_max), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return is_max_ ? "max" : "sum"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const ReduceSpec s = make_spec(in[0].shape(), dims_, keepdim_, name());
    HKT_CHECK(!is_max_ || s.count > 0, "max: reducing ", shape_str(in[0].shape()), " over an empty dim");
    HKT_CHECK(in[0].dtype() != DType::Bool, name(), ": bool tensors cannot be reduced; convert with to_dtype");
    return {{s.out_shape, in[0].dtype(), in[0].device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor& x = in[0];
    spec_ = make_spec(x.shape(), dims_, keepdim_, name());
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    if (y.numel() > 0 && spec_.count == 0) {
      fill_(y, 0.0);
    } else {
      (is_max_ ? kernels::tables().max : kernels::tables().sum)
          .get(x.device(), x.dtype())(x.raw_data(), x.shape(), x.strides(), spec_.red, y.raw_data());
    }
    in_shape_ = x.shape();
    if (is_max_) {
      x_ = x;
      y_ = y;
    }
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor gk = reshape(g[0], spec_.keep_shape);
    if (!is_max_) return {expand(gk, in_shape_)};
    // max: share the gradient equally among the elements equal to the maximum.
    const Tensor x = x_.get("max"), y = reshape(y_.get("max"), spec_.keep_shape);
    const Tensor hit = to_dtype(eq(x, y), x.dtype());
    const Tensor count = sum(hit, dims_of(), true);
    return {hit * (gk / count)};
  }

 private:
  Dims dims_of() const {
    Dims d;
    for (size_t i = 0; i < spec_.red.size(); ++i)
      if (spec_.red[i]) d.push_back(static_cast<int64_t>(i));
    return d;
  }
  bool is_max_;
  Dims dims_;
  bool keepdim_;
  ReduceSpec spec_;
  Shape in_shape_;
  SavedTensor x_, y_;
};

}  // namespace

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) { return apply_op<ReduceFn>({x}, false, dims, keepdim); }
Tensor max(const Tensor& x, const Dims& dims, bool keepdim) { return apply_op<ReduceFn>({x}, true, dims, keepdim); }

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  HKT_CHECK(is_floating(x.dtype()), "mean: expected a floating tensor, got ", x.dtype());
  const ReduceSpec s = make_spec(x.shape(), dims, keepdim, "mean");
  HKT_CHECK(s.count > 0, "mean: reducing ", shape_str(x.shape()), " over an empty dim");
  return sum(x, dims, keepdim) / static_cast<double>(s.count);
}

Tensor var(const Tensor& x, const Dims& dims, int64_t correction, bool keepdim) {
  HKT_CHECK(is_floating(x.dtype()), "var: expected a floating tensor, got ", x.dtype());
  const ReduceSpec s = make_spec(x.shape(), dims, keepdim, "var");
  HKT_CHECK(s.count - correction > 0, "var: ", s.count, " elements per output with correction ", correction,
            " leave no degrees of freedom");
  const Tensor d = x - mean(x, dims, true);
  return sum(d * d, dims, keepdim) / static_cast<double>(s.count - correction);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  HKT_CHECK(x.shape().size() >= shape.size(), "sum_to: cannot reduce ", shape_str(x.shape()), " to ",
            shape_str(shape));
  const size_t lead = x.shape().size() - shape.size();
  Dims dims;
  for (size_t i = 0; i < x.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && x.shape()[i] != 1)) dims.push_back(static_cast<int64_t>(i));
    else
      HKT_CHECK(shape[i - lead] == x.shape()[i], "sum_to: cannot reduce ", shape_str(x.shape()), " to ",
                shape_str(shape));
  return reshape(sum(x, dims, true), shape);
}

}  // namespace hkt
