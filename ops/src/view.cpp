// View ops: outputs alias the input's storage.
#include "hkt/ops/view.hpp"

#include <numeric>
#include <optional>

#include "hkt/core/function.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/reduce.hpp"

namespace hkt {
namespace {

Shape infer_shape(const Shape& req, int64_t numel, const char* op) {
  Shape s = req;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      HKT_CHECK(infer_at < 0, op, ": only one dim may be -1 in ", shape_str(req));
      infer_at = static_cast<int64_t>(i);
    } else {
      HKT_CHECK(s[i] >= 0, op, ": invalid size ", s[i], " in ", shape_str(req));
      known *= s[i];
    }
  }
  if (infer_at >= 0) {
    HKT_CHECK(known > 0 && numel % known == 0, op, ": cannot infer the -1 in ", shape_str(req), " for ", numel,
              " elements");
    s[infer_at] = numel / known;
  }
  HKT_CHECK(numel_of(s) == numel, op, ": shape ", shape_str(req), " does not hold ", numel, " elements");
  return s;
}

// Strides that let a tensor of (shape, strides) be viewed as new_shape
// without a copy, if any exist (the rule of PyTorch's computeStride).
std::optional<Strides> view_strides(const Shape& shape, const Strides& strides, const Shape& new_shape) {
  Strides out(new_shape.size(), 0);
  if (shape.empty() || numel_of(shape) == 0) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base = strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// A view with explicit geometry; backward is given by the subclass.
class ViewFn : public Function {
 public:
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    return {{out_shape_, in[0].dtype(), in[0].device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>&) override {
    in_shape_ = in[0].shape();
    return {Tensor::view_of(in[0], out_shape_, out_strides_, out_offset_)};
  }

 protected:
  Shape out_shape_;
  Strides out_strides_;
  int64_t out_offset_ = 0;
  Shape in_shape_;
};

class ReshapeFn final : public ViewFn {
 public:
  ReshapeFn(const Tensor& x, const Shape& s, Strides st) {
    out_shape_ = s;
    out_strides_ = std::move(st);
    out_offset_ = x.offset();
  }
  const char* name() const override { return "reshape"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override { return {reshape(g[0], in_shape_)}; }
};

class PermuteFn final : public ViewFn {
 public:
  PermuteFn(const Tensor& x, std::vector<int64_t> dims) : dims_(std::move(dims)) {
    for (size_t i = 0; i < dims_.size(); ++i) {
      out_shape_.push_back(x.shape()[dims_[i]]);
      out_strides_.push_back(x.strides()[dims_[i]]);
    }
    out_offset_ = x.offset();
  }
  const char* name() const override { return "permute"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    std::vector<int64_t> inv(dims_.size());
    for (size_t i = 0; i < dims_.size(); ++i) inv[dims_[i]] = static_cast<int64_t>(i);
    return {permute(g[0], inv)};
  }

 private:
  std::vector<int64_t> dims_;
};

class ExpandFn final : public ViewFn {
 public:
  ExpandFn(const Tensor& x, const Shape& s) {
    out_shape_ = s;
    out_strides_ = broadcast_strides(x.shape(), x.strides(), s);
    out_offset_ = x.offset();
  }
  const char* name() const override { return "expand"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override { return {sum_to(g[0], in_shape_)}; }
};

class SliceFn final : public ViewFn {
 public:
  SliceFn(const Tensor& x, int64_t dim, int64_t start, int64_t n, int64_t step)
      : dim_(dim), start_(start), step_(step) {
    out_shape_ = x.shape();
    out_shape_[dim] = n;
    out_strides_ = x.strides();
    out_strides_[dim] *= step;
    out_offset_ = x.offset() + start * x.strides()[dim];
  }
  const char* name() const override { return "slice"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    Tensor gx = zeros(in_shape_, {g[0].dtype(), g[0].device()});
    Tensor region = Tensor::view_of(gx, out_shape_, slice_strides(gx), start_ * gx.strides()[dim_]);
    copy_(region, g[0]);
    return {gx};
  }

 private:
  Strides slice_strides(const Tensor& gx) const {
    Strides s = gx.strides();
    s[dim_] *= step_;
    return s;
  }
  int64_t dim_, start_, step_;
};

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  const Shape s = infer_shape(shape, x.numel(), "reshape");
  if (s == x.shape()) return x;
  if (auto st = view_strides(x.shape(), x.strides(), s)) return apply_op<ReshapeFn>({x}, x, s, *st);
  const Tensor c = contiguous(x);
  return apply_op<ReshapeFn>({c}, c, s, contiguous_strides(s));
}

Tensor view(const Tensor& x, const Shape& shape) {
  const Shape s = infer_shape(shape, x.numel(), "view");
  HKT_CHECK(view_strides(x.shape(), x.strides(), s).has_value(), "view: a tensor of shape ", shape_str(x.shape()),
            " and strides ", shape_str(x.strides()), " cannot be viewed as ", shape_str(s),
            " without a copy; use reshape()");
  return reshape(x, s);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  const int64_t a = wrap_dim(start_dim, x.dim(), "flatten"), b = wrap_dim(end_dim, x.dim(), "flatten");
  HKT_CHECK(a <= b, "flatten: start_dim ", start_dim, " is after end_dim ", end_dim);
  Shape s(x.shape().begin(), x.shape().begin() + a);
  int64_t n = 1;
  for (int64_t d = a; d <= b; ++d) n *= x.shape()[d];
  s.push_back(n);
  s.insert(s.end(), x.shape().begin() + b + 1, x.shape().end());
  return reshape(x, s);
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  const int64_t d = wrap_dim(dim, x.dim() + 1, "unsqueeze");
  Shape s = x.shape();
  s.insert(s.begin() + d, 1);
  return reshape(x, s);
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  const int64_t d = wrap_dim(dim, x.dim(), "squeeze");
  HKT_CHECK(x.shape()[d] == 1, "squeeze: dim ", dim, " has size ", x.shape()[d], " in shape ",
            shape_str(x.shape()), ", expected 1");
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return reshape(x, s);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  HKT_CHECK(static_cast<int64_t>(dims.size()) == x.dim(), "permute: got ", dims.size(),
            " dims for a tensor of shape ", shape_str(x.shape()));
  std::vector<int64_t> d(dims.size());
  std::vector<bool> seen(dims.size(), false);
  bool identity = true;
  for (size_t i = 0; i < dims.size(); ++i) {
    d[i] = wrap_dim(dims[i], x.dim(), "permute");
    HKT_CHECK(!seen[d[i]], "permute: dim ", dims[i], " repeated in ", shape_str(dims));
    seen[d[i]] = true;
    identity = identity && d[i] == static_cast<int64_t>(i);
  }
  if (identity) return x;
  return apply_op<PermuteFn>({x}, x, d);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  std::vector<int64_t> p(x.dim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[wrap_dim(d0, x.dim(), "transpose")], p[wrap_dim(d1, x.dim(), "transpose")]);
  return permute(x, p);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  HKT_CHECK(shape.size() >= x.shape().size(), "expand: cannot expand shape ", shape_str(x.shape()), " to ",
            shape_str(shape), " (fewer dims)");
  Shape s = shape;
  const size_t lead = s.size() - x.shape().size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      HKT_CHECK(i >= lead, "expand: -1 is not allowed for a new leading dim in ", shape_str(shape));
      s[i] = x.shape()[i - lead];
    }
    if (i >= lead)
      HKT_CHECK(x.shape()[i - lead] == s[i] || x.shape()[i - lead] == 1, "expand: cannot expand shape ",
                shape_str(x.shape()), " to ", shape_str(shape), " (dim ", i, ")");
  }
  if (s == x.shape()) return x;
  return apply_op<ExpandFn>({x}, x, s);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  const int64_t d = wrap_dim(dim, x.dim(), "slice");
  const int64_t n = x.shape()[d];
  HKT_CHECK(step >= 1, "slice: step must be >= 1, got ", step);
  const int64_t s = start < 0 ? start + n : start, e = end < 0 ? end + n : end;
  HKT_CHECK(s >= 0 && s <= n && e >= s && e <= n, "slice: range [", start, ", ", end, ") is out of bounds for dim ",
            dim, " of size ", n, " (shape ", shape_str(x.shape()), ")");
  const int64_t len = (e - s + step - 1) / step;
  if (s == 0 && len == n && step == 1) return x;
  return apply_op<SliceFn>({x}, x, d, s, len, step);
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  HKT_CHECK(length >= 0, "narrow: negative length ", length);
  const int64_t d = wrap_dim(dim, x.dim(), "narrow");
  const int64_t s = start < 0 ? start + x.shape()[d] : start;
  return slice(x, d, s, s + length);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  const int64_t d = wrap_dim(dim, x.dim(), "select");
  const int64_t n = x.shape()[d];
  HKT_CHECK(index >= -n && index < n, "select: index ", index, " is out of range for dim ", dim, " of size ", n);
  const int64_t i = index < 0 ? index + n : index;
  return squeeze(slice(x, d, i, i + 1), d);
}

}  // namespace hkt
