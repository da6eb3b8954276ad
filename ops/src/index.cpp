// Joining, indexing and selection ops: cat, stack, index_select, embedding,
// gather, where, masked_fill.
//
// Forward kernels read their inputs through strides (no copies). Backwards are
// themselves ops (slices, scatter-adds, where), so they are differentiable too:
// index_select/embedding's backward is an index-add whose backward is
// index_select again, gather's is a scatter-add whose backward is gather.
#include "hkt/ops/index.hpp"

#include <string>

#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"

namespace hkt {
namespace {

// y[...] = x[..., idx[...], ...] along dim d: xs are x's strides laid out over
// y's dims (0 where y walks the index), is the index's strides likewise.
void run_gather(const Tensor& x, int64_t d, const Tensor& idx, const Strides& xs, const Strides& is, Tensor& y) {
  if (y.numel() > 0)
    kernels::tables().gather.get(x.device(), x.dtype())(x.raw_data(), xs, x.strides()[d], idx.data<int64_t>(), is,
                                              y.raw_data(), y.shape());
}

// --- helpers -------------------------------------------------------------------

void* byte_offset(void* p, int64_t elems, DType dt) {
  return static_cast<char*>(p) + elems * static_cast<int64_t>(dtype_size(dt));
}

template <class V>
V erase_at(V v, int64_t i) {
  v.erase(v.begin() + i);
  return v;
}

// Whether `s` broadcasts to exactly `target`.
bool broadcasts_to(const Shape& s, const Shape& target) {
  if (s.size() > target.size()) return false;
  const size_t lead = target.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != 1 && s[i] != target[lead + i]) return false;
  return true;
}

void check_defined(const Tensor& t, const char* op, const char* what) {
  HKT_CHECK(t.defined(), op, ": ", what, " is undefined");
}

void check_index_dtype(const Tensor& idx, const char* op, const char* what) {
  HKT_CHECK(idx.dtype() == DType::Int64, op, ": ", what, " must be int64, got ", idx.dtype(), " (shape ",
            shape_str(idx.shape()), ")");
}

void check_same_device(const Tensor& x, const Tensor& other, const char* op, const char* xname, const char* oname) {
  HKT_CHECK(x.device() == other.device(), op, ": ", xname, " is on ", x.device().str(), " but ", oname, " is on ",
            other.device().str());
}

// Throws if an index lies outside [0, size).
void check_range(const Tensor& idx, int64_t size, const char* op, const std::string& what) {
  int64_t bad = 0;
  const int64_t pos = kernels::tables().index_check.get(idx.device(), idx.dtype())(idx.data<int64_t>(), idx.strides(),
                                                                                   idx.shape(), size, &bad);
  HKT_CHECK(pos < 0, op, ": index ", bad, " (at position ", pos, " of the index, shape ", shape_str(idx.shape()),
            ") is out of range for ", what, " of size ", size,
            size > 0 ? str_cat(" (valid range 0 .. ", size - 1, ")") : std::string(" (no valid index)"));
}

// --- cat / stack ---------------------------------------------------------------------

class JoinFn final : public Function {
 public:
  JoinFn(bool stack, int64_t dim) : stack_(stack), dim_(dim) {}
  const char* name() const override { return stack_ ? "stack" : "cat"; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    HKT_CHECK(!in.empty(), op, ": expected a non-empty list of tensors");
    for (size_t i = 0; i < in.size(); ++i) HKT_CHECK(in[i].defined(), op, ": tensor ", i, " is undefined");
    const Tensor& ref = in[0];
    HKT_CHECK(stack_ || ref.dim() >= 1, op, ": tensor 0 is 0-dim (shape []); cat needs at least 1 dim (use stack)");
    const int64_t d = wrap_dim(dim_, ref.dim() + (stack_ ? 1 : 0), op);
    Shape shape = ref.shape();
    int64_t total = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const Tensor& t = in[i];
      HKT_CHECK(t.dtype() == ref.dtype(), op, ": tensor ", i, " is ", t.dtype(), " but tensor 0 is ", ref.dtype());
      HKT_CHECK(t.device() == ref.device(), op, ": tensor ", i, " is on ", t.device().str(), " but tensor 0 is on ",
                ref.device().str());
      HKT_CHECK(t.dim() == ref.dim(), op, ": tensor ", i, " has ", t.dim(), " dims (shape ", shape_str(t.shape()),
                ") but tensor 0 has ", ref.dim(), " (shape ", shape_str(ref.shape()), ")");
      if (stack_) {
        HKT_CHECK(t.shape() == ref.shape(), op, ": tensor ", i, " has shape ", shape_str(t.shape()), ", expected ",
                  shape_str(ref.shape()), " (the shape of tensor 0)");
      } else {
        for (int64_t k = 0; k < ref.dim(); ++k)
          HKT_CHECK(k == d || t.shape()[k] == ref.shape()[k], op, ": tensor ", i, " has shape ",
                    shape_str(t.shape()), " but tensor 0 has shape ", shape_str(ref.shape()),
                    "; they must match in every dim except dim ", d, " (mismatch at dim ", k, ")");
        total += t.shape()[d];
      }
    }
    if (stack_) {
      shape.insert(shape.begin() + d, static_cast<int64_t>(in.size()));
    } else {
      shape[d] = total;
    }
    return {{shape, ref.dtype(), ref.device()}};
  }

  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    d_ = wrap_dim(dim_, in[0].dim() + (stack_ ? 1 : 0), name());
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    auto* kernel = kernels::tables().cat.get(y.device(), y.dtype());
    const Strides dst_strides = stack_ ? erase_at(y.strides(), d_) : y.strides();
    int64_t pos = 0;
    sizes_.clear();
    for (const Tensor& x : in) {
      const int64_t n = stack_ ? 1 : x.shape()[d_];
      if (x.numel() > 0)
        kernel(x.raw_data(), x.strides(), byte_offset(y.raw_data(), pos * y.strides()[d_], y.dtype()), dst_strides,
               x.shape());
      sizes_.push_back(n);
      pos += n;
    }
    return {y};
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    std::vector<Tensor> gx(sizes_.size());
    int64_t pos = 0;
    for (size_t i = 0; i < sizes_.size(); ++i) {
      if (needs_input_grad(i))
        gx[i] = stack_ ? select(g[0], d_, static_cast<int64_t>(i)) : slice(g[0], d_, pos, pos + sizes_[i]);
      pos += sizes_[i];
    }
    return gx;
  }

 private:
  bool stack_;
  int64_t dim_;
  int64_t d_ = 0;
  std::vector<int64_t> sizes_;
};

// --- index_select / embedding ----------------------------------------------------------

class IndexAddFn;

// out = x.shape[:d] + index.shape + x.shape[d+1:], out[o, j, i] = x[o, index[j], i].
// kind: index_select (1-D index), embedding (2-D weight, dim 0, ids of any
// shape) or the backward of index_add (no extra rule).
enum class IndexKind { Select, Embedding, Any };

class IndexSelectFn final : public Function {
 public:
  IndexSelectFn(std::string name, int64_t dim, IndexKind kind) : name_(std::move(name)), dim_(dim), kind_(kind) {}
  const char* name() const override { return name_.c_str(); }
  bool differentiable(size_t i) const override { return i == 0; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    const bool emb = kind_ == IndexKind::Embedding;
    const char* xname = emb ? "weight" : "x";
    const char* iname = emb ? "ids" : "index";
    check_defined(in[0], op, xname);
    check_defined(in[1], op, iname);
    const Tensor &x = in[0], &idx = in[1];
    if (emb)
      HKT_CHECK(x.dim() == 2, op, ": weight must be 2-D [num_embeddings, dim], got shape ", shape_str(x.shape()));
    HKT_CHECK(x.dim() >= 1, op, ": cannot index a 0-dim tensor (shape [])");
    check_index_dtype(idx, op, iname);
    if (kind_ == IndexKind::Select)
      HKT_CHECK(idx.dim() == 1, op, ": index must be 1-D, got shape ", shape_str(idx.shape()));
    check_same_device(idx, x, op, iname, xname);
    const int64_t d = wrap_dim(dim_, x.dim(), op);
    Shape s(x.shape().begin(), x.shape().begin() + d);
    s.insert(s.end(), idx.shape().begin(), idx.shape().end());
    s.insert(s.end(), x.shape().begin() + d + 1, x.shape().end());
    return {{s, x.dtype(), x.device()}};
  }

  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor &x = in[0], &idx = in[1];
    d_ = wrap_dim(dim_, x.dim(), name());
    check_range(idx, x.shape()[d_], name(),
                kind_ == IndexKind::Embedding ? std::string("the embedding table (dim 0 of weight)")
                                              : str_cat("dim ", d_, " of x (shape ", shape_str(x.shape()), ")"));
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const int64_t k = idx.dim();
    Strides xs(x.strides().begin(), x.strides().begin() + d_), is(static_cast<size_t>(d_), 0);
    xs.insert(xs.end(), static_cast<size_t>(k), 0);
    is.insert(is.end(), idx.strides().begin(), idx.strides().end());
    xs.insert(xs.end(), x.strides().begin() + d_ + 1, x.strides().end());
    is.insert(is.end(), static_cast<size_t>(x.dim() - d_ - 1), 0);
    run_gather(x, d_, idx, xs, is, y);
    if (is_floating(x.dtype())) {
      x_shape_ = x.shape();
      idx_ = idx;
    }
    return {y};
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& g) override;

 private:
  std::string name_;
  int64_t dim_;
  IndexKind kind_;
  int64_t d_ = 0;
  Shape x_shape_;
  SavedTensor idx_;
};

// gx [x_shape] with gx[o, index[j], i] = sum of g[o, j, i] over repeated j.
class IndexAddFn final : public Function {
 public:
  // `base` names the forward op ("index_select" or "embedding").
  IndexAddFn(const std::string& base, int64_t dim, Shape x_shape)
      : base_(base), name_(base + "_backward"), dim_(dim), x_shape_(std::move(x_shape)) {}
  const char* name() const override { return name_.c_str(); }
  bool differentiable(size_t i) const override { return i == 0; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    return {{x_shape_, in[0].dtype(), in[0].device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor g = contiguous(in[0]), idx = contiguous(in[1]);
    Tensor gx = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < dim_; ++k) outer *= x_shape_[k];
    for (size_t k = static_cast<size_t>(dim_) + 1; k < x_shape_.size(); ++k) inner *= x_shape_[k];
    if (gx.numel() > 0)
      kernels::tables().index_add.get(gx.device(), gx.dtype())(g.raw_data(), idx.data<int64_t>(), outer, idx.numel(),
                                                               inner, gx.raw_data(), x_shape_[dim_]);
    idx_ = in[1];
    return {gx};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    return {apply_op<IndexSelectFn>({g[0], idx_.get(name())}, base_, dim_, IndexKind::Any), Tensor()};
  }

 private:
  std::string base_, name_;
  int64_t dim_;
  Shape x_shape_;
  SavedTensor idx_;
};

std::vector<Tensor> IndexSelectFn::backward(const std::vector<Tensor>& g) {
  return {apply_op<IndexAddFn>({g[0], idx_.get(name())}, name_, d_, x_shape_), Tensor()};
}

// --- gather ----------------------------------------------------------------------------

class ScatterAddFn;

class GatherFn final : public Function {
 public:
  GatherFn(std::string name, int64_t dim) : name_(std::move(name)), dim_(dim) {}
  const char* name() const override { return name_.c_str(); }
  bool differentiable(size_t i) const override { return i == 0; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    check_defined(in[0], op, "x");
    check_defined(in[1], op, "index");
    const Tensor &x = in[0], &idx = in[1];
    HKT_CHECK(x.dim() >= 1, op, ": cannot gather from a 0-dim tensor (shape [])");
    check_index_dtype(idx, op, "index");
    check_same_device(idx, x, op, "index", "x");
    const int64_t d = wrap_dim(dim_, x.dim(), op);
    HKT_CHECK(idx.dim() == x.dim(), op, ": index must have the same number of dims as x (", x.dim(), ", shape ",
              shape_str(x.shape()), "), got ", idx.dim(), " (shape ", shape_str(idx.shape()), ")");
    for (int64_t k = 0; k < x.dim(); ++k)
      HKT_CHECK(k == d || idx.shape()[k] <= x.shape()[k], op, ": index shape ", shape_str(idx.shape()),
                " exceeds x shape ", shape_str(x.shape()), " at dim ", k, " (", idx.shape()[k], " > ", x.shape()[k],
                "); only dim ", d, " may be larger");
    return {{idx.shape(), x.dtype(), x.device()}};
  }

  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor &x = in[0], &idx = in[1];
    d_ = wrap_dim(dim_, x.dim(), name());
    check_range(idx, x.shape()[d_], name(), str_cat("dim ", d_, " of x (shape ", shape_str(x.shape()), ")"));
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    Strides xs = x.strides();
    xs[d_] = 0;
    run_gather(x, d_, idx, xs, idx.strides(), y);
    if (is_floating(x.dtype())) {
      x_shape_ = x.shape();
      idx_ = idx;
    }
    return {y};
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& g) override;

 private:
  std::string name_;
  int64_t dim_;
  int64_t d_ = 0;
  Shape x_shape_;
  SavedTensor idx_;
};

// gx = zeros(x_shape); gx[..., index[e], ...] += g[e] along dim.
class ScatterAddFn final : public Function {
 public:
  ScatterAddFn(int64_t dim, Shape x_shape) : dim_(dim), x_shape_(std::move(x_shape)) {}
  const char* name() const override { return "gather_backward"; }
  bool differentiable(size_t i) const override { return i == 0; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    return {{x_shape_, in[0].dtype(), in[0].device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor &g = in[0], &idx = in[1];
    Tensor gx = zeros(out[0].shape, {out[0].dtype, out[0].device});
    if (g.numel() > 0)
      kernels::tables().scatter_add.get(gx.device(), gx.dtype())(
          g.raw_data(), erase_at(g.strides(), dim_), g.strides()[dim_], idx.data<int64_t>(),
          erase_at(idx.strides(), dim_), idx.strides()[dim_], gx.raw_data(), erase_at(gx.strides(), dim_),
          gx.strides()[dim_], erase_at(idx.shape(), dim_), idx.shape()[dim_]);
    idx_ = idx;
    return {gx};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    return {apply_op<GatherFn>({g[0], idx_.get(name())}, "gather", dim_), Tensor()};
  }

 private:
  int64_t dim_;
  Shape x_shape_;
  SavedTensor idx_;
};

std::vector<Tensor> GatherFn::backward(const std::vector<Tensor>& g) {
  return {apply_op<ScatterAddFn>({g[0], idx_.get(name())}, d_, x_shape_), Tensor()};
}

// --- where / masked_fill -----------------------------------------------------------------

void run_where(const Tensor& c, const Tensor& a, const Tensor& b, Tensor& y) {
  if (y.numel() == 0) return;
  kernels::tables().where.get(y.device(), y.dtype())(
      c.raw_data(), broadcast_strides(c.shape(), c.strides(), y.shape()), a.raw_data(),
      broadcast_strides(a.shape(), a.strides(), y.shape()), b.raw_data(),
      broadcast_strides(b.shape(), b.strides(), y.shape()), y.raw_data(), y.shape());
}

class WhereFn final : public Function {
 public:
  const char* name() const override { return "where"; }
  bool differentiable(size_t i) const override { return i != 0; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    check_defined(in[0], "where", "cond");
    check_defined(in[1], "where", "a");
    check_defined(in[2], "where", "b");
    const Tensor &c = in[0], &a = in[1], &b = in[2];
    HKT_CHECK(c.dtype() == DType::Bool, "where: cond must be bool, got ", c.dtype(), " (shape ",
              shape_str(c.shape()), ")");
    HKT_CHECK(a.dtype() == b.dtype(), "where: dtype mismatch: a is ", a.dtype(), shape_str(a.shape()), " but b is ",
              b.dtype(), shape_str(b.shape()));
    check_same_device(a, b, "where", "a", "b");
    check_same_device(c, a, "where", "cond", "a");
    const Shape s = broadcast_shapes(broadcast_shapes(c.shape(), a.shape(), "where"), b.shape(), "where");
    return {{s, a.dtype(), a.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    run_where(in[0], in[1], in[2], y);
    if (is_floating(y.dtype())) {
      c_ = in[0];
      a_shape_ = in[1].shape();
      b_shape_ = in[2].shape();
    }
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor c = c_.get("where");
    const Tensor zero = scalar_tensor(0.0, g[0].dtype(), g[0].device());
    Tensor ga, gb;
    if (needs_input_grad(1)) ga = sum_to(where(c, g[0], zero), a_shape_);
    if (needs_input_grad(2)) gb = sum_to(where(c, zero, g[0]), b_shape_);
    return {Tensor(), ga, gb};
  }

 private:
  SavedTensor c_;
  Shape a_shape_, b_shape_;
};

class MaskedFillFn final : public Function {
 public:
  explicit MaskedFillFn(double value) : value_(value) {}
  const char* name() const override { return "masked_fill"; }
  bool differentiable(size_t i) const override { return i == 0; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    check_defined(in[0], "masked_fill", "x");
    check_defined(in[1], "masked_fill", "mask");
    const Tensor &x = in[0], &m = in[1];
    HKT_CHECK(m.dtype() == DType::Bool, "masked_fill: mask must be bool, got ", m.dtype(), " (shape ",
              shape_str(m.shape()), ")");
    check_same_device(m, x, "masked_fill", "mask", "x");
    HKT_CHECK(broadcasts_to(m.shape(), x.shape()), "masked_fill: mask shape ", shape_str(m.shape()),
              " does not broadcast to x shape ", shape_str(x.shape()));
    return {x.meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor &x = in[0], &m = in[1];
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const Tensor v = scalar_tensor(value_, x.dtype(), x.device());
    run_where(m, v, x, y);
    if (is_floating(x.dtype())) m_ = m;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    return {masked_fill(g[0], m_.get("masked_fill"), 0.0), Tensor()};
  }

 private:
  double value_;
  SavedTensor m_;
};

}  // namespace

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) { return apply_op<JoinFn>(xs, false, dim); }

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) { return apply_op<JoinFn>(xs, true, dim); }

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return apply_op<IndexSelectFn>({x, index}, "index_select", dim, IndexKind::Select);
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  return apply_op<IndexSelectFn>({weight, ids}, "embedding", 0, IndexKind::Embedding);
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return apply_op<GatherFn>({x, index}, "gather", dim);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return apply_op<WhereFn>({cond, a, b}); }

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return apply_op<MaskedFillFn>({x, mask}, value);
}

}  // namespace hkt
