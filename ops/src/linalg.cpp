// matmul / bmm: one Function over batched, broadcast matrix products, computed
// by BLAS gemm (kernels/cpu/gemm.hpp).
//
// Layouts: the last two dims of each operand are handed to BLAS as they are
// when their strides are (ld, 1) (row-major, CblasNoTrans) or (1, ld) (a
// transpose view, CblasTrans); only other layouts are copied. Batch dims,
// broadcast ones included (stride 0), become per-entry pointer offsets.
#include "hkt/ops/linalg.hpp"

#include <algorithm>

#include "hkt/core/function.hpp"
#include "hkt/core/profiler.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"

namespace hkt {
namespace {

// How a rows x cols matrix with strides (rs, cs) is passed to BLAS.
struct MatLayout {
  bool ok = false;     // expressible without a copy
  bool trans = false;  // CblasTrans: stored as the row-major cols x rows matrix
  int64_t ld = 1;
};

MatLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (rows == 0 || cols == 0) return {true, false, std::max<int64_t>(1, cols)};
  // The stride of a size-1 dim is never used: pick the value BLAS accepts.
  {  // row-major: (i, j) at i * ld + j
    const int64_t r = rows == 1 ? cols : rs, c = cols == 1 ? 1 : cs;
    if (c == 1 && r >= cols) return {true, false, r};
  }
  {  // transposed: (i, j) at j * ld + i
    const int64_t r = rows == 1 ? 1 : rs, c = cols == 1 ? rows : cs;
    if (r == 1 && c >= rows) return {true, true, c};
  }
  return {};
}

MatLayout matrix_layout(const Tensor& t) {
  const int64_t d = t.dim();
  return blas_layout(t.shape()[d - 2], t.shape()[d - 1], t.strides()[d - 2], t.strides()[d - 1]);
}

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// Checks shared by matmul() (on the user's shapes) and the Function (on >= 2-D).
void check_pair(const char* op, const Tensor& a, const Tensor& b) {
  HKT_CHECK(a.defined() && b.defined(), op, ": undefined operand");
  HKT_CHECK(a.dim() >= 1 && b.dim() >= 1, op, ": operands must have at least 1 dim, got a ", shape_str(a.shape()),
            " and b ", shape_str(b.shape()), " (use mul() for scalars)");
  HKT_CHECK(is_floating(a.dtype()), op, ": expected float32 or float64 operands, got ", a.dtype());
  HKT_CHECK(a.dtype() == b.dtype(), op, ": dtype mismatch: a is ", a.dtype(), shape_str(a.shape()), ", b is ",
            b.dtype(), shape_str(b.shape()));
  HKT_CHECK(a.device() == b.device(), op, ": device mismatch: a is on ", a.device().str(), ", b on ",
            b.device().str());
  const int64_t ka = a.shape().back(), kb = b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2];
  HKT_CHECK(ka == kb, op, ": inner dimensions do not match: a ", shape_str(a.shape()), " @ b ",
            shape_str(b.shape()), " (", ka, " != ", kb, ")");
}

// NumPy broadcast of the batch dims, with an error naming both full shapes.
Shape broadcast_batch(const char* op, const Tensor& a, const Tensor& b) {
  const Shape ba = a.dim() > 2 ? batch_of(a) : Shape{}, bb = b.dim() > 2 ? batch_of(b) : Shape{};
  const size_t n = std::max(ba.size(), bb.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i + ba.size() >= n ? ba[i + ba.size() - n] : 1;
    const int64_t y = i + bb.size() >= n ? bb[i + bb.size() - n] : 1;
    HKT_CHECK(x == y || x == 1 || y == 1, op, ": batch dims are not broadcastable: a ", shape_str(a.shape()),
              " @ b ", shape_str(b.shape()));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Element offsets of each batch entry of t (row-major over `batch`, stride 0 on broadcast dims).
std::vector<int64_t> batch_offsets(const Tensor& t, const Shape& batch) {
  std::vector<int64_t> off(static_cast<size_t>(numel_of(batch)));
  const Strides st = broadcast_strides(batch_of(t), Strides(t.strides().begin(), t.strides().end() - 2), batch);
  for_each_offset(batch, st, [&](int64_t i, int64_t o) { off[static_cast<size_t>(i)] = o; });
  return off;
}

Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }

// a [..., M, K] @ b [..., K, N] -> [..., M, N]; both at least 2-D.
class MatmulFn final : public Function {
 public:
  const char* name() const override { return "matmul"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const Tensor &a = in[0], &b = in[1];
    check_pair("matmul", a, b);
    HKT_CHECK(a.dim() >= 2 && b.dim() >= 2, "matmul: internal: operands must be at least 2-D");
    Shape out = broadcast_batch("matmul", a, b);
    out.push_back(a.shape()[a.dim() - 2]);
    out.push_back(b.shape().back());
    return {{out, a.dtype(), a.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& outs) override {
    a_ = in[0];
    b_ = in[1];
    Tensor a = in[0], b = in[1];
    MatLayout la = matrix_layout(a), lb = matrix_layout(b);
    if (!la.ok) la = matrix_layout(a = contiguous(a));
    if (!lb.ok) lb = matrix_layout(b = contiguous(b));
    Tensor y = Tensor::empty(outs[0].shape, outs[0].dtype, outs[0].device);
    const Shape batch(outs[0].shape.begin(), outs[0].shape.end() - 2);
    const int64_t nb = numel_of(batch);
    if (y.numel() == 0) return {y};
    const std::vector<int64_t> ao = batch_offsets(a, batch), bo = batch_offsets(b, batch);
    const int64_t m = a.shape()[a.dim() - 2], k = a.shape().back(), n = b.shape().back();
    kernels::tables().matmul.get(a.device(), a.dtype())(la.trans, lb.trans, m, n, k, a.raw_data(), la.ld, ao.data(),
                                              b.raw_data(), lb.ld, bo.data(), y.raw_data(), nb);
    profiler::count(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                    static_cast<double>(nb));
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor a = a_.get("matmul"), b = b_.get("matmul"), &g = grads[0];
    Tensor ga, gb;
    // Transpose views reach BLAS as flags; sum_to folds broadcast batch dims.
    if (needs_input_grad(0)) ga = sum_to(matmul(g, mT(b)), a.shape());
    if (needs_input_grad(1)) {
      // b a transposed 2-D view (a Linear layer's weight^T): its gradient is
      // computed in the layout of the tensor b views, as (g^T a)^T, so that
      // the weight's gradient arrives contiguous and AccumulateGrad takes it
      // without a copy. The same sums, BLAS reading other flags.
      const bool bt = b.dim() == 2 && b.strides()[0] == 1 && b.strides()[1] == b.shape()[0] && b.shape()[0] > 1;
      if (b.dim() == 2 && a.dim() > 2) {
        // b shared by every batch entry: one product over all rows, no batched sum.
        const int64_t k = a.shape().back(), n = b.shape().back();
        const Tensor a2 = reshape(a, {-1, k}), g2 = reshape(g, {-1, n});
        gb = bt ? mT(matmul(mT(g2), a2)) : matmul(mT(a2), g2);
      } else if (bt && a.dim() == 2) {
        gb = mT(matmul(mT(g), a));
      } else {
        gb = sum_to(matmul(mT(a), g), b.shape());
      }
    }
    return {ga, gb};
  }

 private:
  SavedTensor a_, b_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_pair("matmul", a, b);
  if (a.dim() >= 2 && b.dim() >= 2) return apply_op<MatmulFn>({a, b});
  const Tensor a2 = a.dim() == 1 ? unsqueeze(a, 0) : a;
  const Tensor b2 = b.dim() == 1 ? unsqueeze(b, 1) : b;
  Tensor y = apply_op<MatmulFn>({a2, b2});
  if (b.dim() == 1) y = squeeze(y, -1);
  if (a.dim() == 1) y = squeeze(y, b.dim() == 1 ? -1 : -2);
  return y;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  HKT_CHECK(a.defined() && b.defined(), "bmm: undefined operand");
  HKT_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D operands [B, M, K] and [B, K, N], got a ",
            shape_str(a.shape()), " and b ", shape_str(b.shape()));
  HKT_CHECK(a.shape()[0] == b.shape()[0], "bmm: batch sizes differ: a ", shape_str(a.shape()), " and b ",
            shape_str(b.shape()));
  check_pair("bmm", a, b);
  return matmul(a, b);
}

}  // namespace hkt
