// local_attention: the fused sliding-window op (kernels on the op list as
// local_attention and local_attention_backward, CPU only) and its composite
// reference.
#include "hkt/ops/local_attention.hpp"

#include <cmath>
#include <limits>

#include "hkt/core/function.hpp"
#include "hkt/core/profiler.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"

namespace hkt {
namespace {

void check_window(int64_t w, double scale, const char* op) {
  HKT_CHECK(w >= 0, op, ": window must be >= 0, got ", w);
  HKT_CHECK(std::isfinite(scale), op, ": scale must be finite, got ", scale);
}

// Inputs: q, k, v [B, H, T, dh], valid (may be undefined). Saves them, O and LSE [B, H, T].
class LocalAttentionFn final : public Function {
 public:
  LocalAttentionFn(int64_t w, bool causal, double scale) : w_(w), causal_(causal), scale_(scale) {}
  const char* name() const override { return "local_attention"; }
  bool differentiable(size_t i) const override { return i != 3; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    check_window(w_, scale_, op);
    const char* names[3] = {"q", "k", "v"};
    for (size_t i = 0; i < 3; ++i) HKT_CHECK(in[i].defined(), op, ": ", names[i], " is undefined");
    const Tensor& v = in[2];
    HKT_CHECK(v.dim() == 4, op, ": v must be [B, H, T, dh], got ", shape_str(v.shape()));
    HKT_CHECK(is_floating(v.dtype()), op, ": expected floating inputs, got v ", v.dtype(), shape_str(v.shape()));
    HKT_CHECK(v.size(2) >= 1, op, ": the sequence is empty (T = 0) in v ", shape_str(v.shape()));
    HKT_CHECK(v.size(3) >= 1, op, ": the head dim is empty in v ", shape_str(v.shape()));
    for (size_t i = 0; i < 2; ++i) {
      HKT_CHECK(in[i].shape() == v.shape(), op, ": ", names[i], " must have v's shape ", shape_str(v.shape()),
                ", got ", shape_str(in[i].shape()));
      HKT_CHECK(in[i].dtype() == v.dtype(), op, ": ", names[i], " is ", in[i].dtype(), " but v is ", v.dtype());
      HKT_CHECK(in[i].device() == v.device(), op, ": ", names[i], " is on ", in[i].device().str(), " but v is on ",
                v.device().str());
    }
    const Tensor& valid = in[3];
    if (valid.defined()) {
      HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{v.size(0), v.size(2)}), op,
                ": valid must be Bool [", v.size(0), ", ", v.size(2), "], got ", valid.dtype(),
                shape_str(valid.shape()));
      HKT_CHECK(valid.device() == v.device(), op, ": valid is on ", valid.device().str(), " but v is on ",
                v.device().str());
    }
    HKT_CHECK(v.device().type == DeviceType::CPU, op, ": there is no kernel on ", v.device().str(),
              " (local attention is CPU-only)");
    return {v.meta()};
  }

  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor q = contiguous(in[0]), k = contiguous(in[1]), v = contiguous(in[2]);
    const Tensor valid = in[3].defined() ? contiguous(in[3]) : Tensor();
    Tensor o = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    Tensor lse = Tensor::empty({v.size(0), v.size(1), v.size(2)}, v.dtype(), v.device());
    kernels::tables().local_attention.get(v.device(), v.dtype())(
        q.raw_data(), k.raw_data(), v.raw_data(), valid.defined() ? valid.data<bool>() : nullptr, o.raw_data(),
        lse.raw_data(), v.size(0), v.size(1), v.size(2), v.size(3), w_, causal_, scale_);
    profiler::count(flops(v));
    q_ = q;
    k_ = k;
    v_ = v;
    valid_ = valid;
    o_ = o;
    lse_ = lse;
    return {o};
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const char* op = name();
    const Tensor q = q_.get(op), k = k_.get(op), v = v_.get(op), o = o_.get(op), lse = lse_.get(op);
    const Tensor valid = valid_.defined() ? valid_.get(op) : Tensor();
    const Tensor g = contiguous(grads[0]);
    std::vector<Tensor> res(4);
    if (!needs_input_grad(0) && !needs_input_grad(1) && !needs_input_grad(2)) return res;
    for (size_t i = 0; i < 3; ++i) res[i] = Tensor::empty(v.shape(), v.dtype(), v.device());
    kernels::tables().local_attention_backward.get(v.device(), v.dtype())(
        q.raw_data(), k.raw_data(), v.raw_data(), valid.defined() ? valid.data<bool>() : nullptr, o.raw_data(),
        lse.raw_data(), g.raw_data(), v.size(0), v.size(1), v.size(2), v.size(3), w_, causal_, scale_,
        res[0].raw_data(), res[1].raw_data(), res[2].raw_data());
    profiler::count(2 * flops(v));  // twice the forward's products, as nn::model_flops counts a backward
    for (size_t i = 0; i < 3; ++i)
      if (!needs_input_grad(i)) res[i] = Tensor();
    return res;
  }

 private:
  // The forward's products: 2 dh per visible (query, key) pair for the scores and 2 dh for P V.
  double flops(const Tensor& v) const {
    if (!profiler::enabled()) return 0;
    const int64_t T = v.size(2);
    double pairs = 0;
    for (int64_t i = 0; i < T; ++i)
      pairs += static_cast<double>((causal_ ? i : std::min(T - 1, i + w_)) - std::max<int64_t>(0, i - w_) + 1);
    return 4.0 * static_cast<double>(v.size(0)) * static_cast<double>(v.size(1)) * pairs * static_cast<double>(v.size(3));
  }
  int64_t w_;
  bool causal_;
  double scale_;
  SavedTensor q_, k_, v_, valid_, o_, lse_;
};

}  // namespace

Tensor local_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, int64_t window,
                       bool causal, double scale) {
  return apply_op<LocalAttentionFn>({q, k, v, valid}, window, causal, scale);
}

Tensor local_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid,
                                 int64_t window, bool causal, double scale) {
  const char* op = "local_attention_reference";
  check_window(window, scale, op);
  HKT_CHECK(v.defined() && v.dim() == 4, op, ": v must be [B, H, T, dh]");
  const int64_t T = v.size(2);
  // hidden[i, j]: j outside the band of i (causal: or j > i), or j padded.
  std::vector<int64_t> band(static_cast<size_t>(T * T));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) band[static_cast<size_t>(i * T + j)] = (j < i - window || j > i + window ||
                                                                            (causal && j > i));
  // 1 where hidden, as a float mask (broadcast to [B, 1, T, T] with valid).
  Tensor hidden_f = from_vector(band, {1, 1, T, T}, {DType::Int64, v.device()});
  hidden_f = to_dtype(hidden_f, v.dtype());
  if (valid.defined()) hidden_f = hidden_f + reshape(1.0 - to_dtype(valid, v.dtype()), {valid.size(0), 1, 1, T});
  const Tensor hidden = gt(hidden_f, 0.5);
  const Tensor s = masked_fill(matmul(q, transpose(k, -2, -1)) * scale, hidden,
                               -std::numeric_limits<double>::infinity());
  // softmax of a row with every key hidden is NaN: those rows give 0.
  const Tensor all_hidden = eq(sum(to_dtype(le(hidden_f, 0.5), v.dtype()), {-1}, true), 0.0);
  const Tensor zero_row = gt(hidden_f + to_dtype(all_hidden, v.dtype()), 0.5);
  const Tensor p = masked_fill(softmax(masked_fill(s, all_hidden, 0.0), -1), zero_row, 0.0);
  return matmul(p, v);
}

}  // namespace hkt
