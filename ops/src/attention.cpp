// hkt_attention: fused multi-scale attention, one op with its own forward and
// backward kernels (the op list's hkt_attention and hkt_attention_backward;
// CPU: kernels/cpu/hkt_attention.cpp, which states the formula and its gradient).
//   S = sum_l lambda[h, l] scale Q_l K_l^T (level rows repeated 2^l times),
//   O = softmax(S + mask) V
#include "hkt/ops/attention.hpp"

#include <cmath>

#include "hkt/core/function.hpp"
#include "hkt/core/profiler.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/kernels/shared_rules.hpp"
#include "hkt/ops/factory.hpp"

namespace hkt {
namespace {

// Inputs: q_0..q_{L-1}, k_0..k_{L-1}, v, lambda, valid (may be undefined).
// Saves the inputs, O and LSE [B, H, T].
class HKTAttentionFn final : public Function {
 public:
  HKTAttentionFn(int64_t L, bool causal, double scale) : L_(L), causal_(causal), scale_(scale) {}
  const char* name() const override { return "hkt_attention"; }
  bool differentiable(size_t i) const override { return i != valid_index(); }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    const Tensor& v = in[static_cast<size_t>(2 * L_)];
    HKT_CHECK(v.defined(), op, ": v is undefined");
    HKT_CHECK(v.dim() == 4, op, ": v must be [B, H, T, dh], got ", shape_str(v.shape()));
    HKT_CHECK(is_floating(v.dtype()), op, ": expected floating inputs, got v ", v.dtype(), shape_str(v.shape()));
    const int64_t B = v.size(0), H = v.size(1), T = v.size(2), dh = v.size(3);
    HKT_CHECK(T >= 1, op, ": the sequence is empty (T = 0) in v ", shape_str(v.shape()));
    HKT_CHECK(dh >= 1, op, ": the head dim is empty in v ", shape_str(v.shape()));
    HKT_CHECK(L_ <= 30, op, ": too many levels (", L_, ")");
    HKT_CHECK(std::isfinite(scale_), op, ": scale must be finite, got ", scale_);
    auto same = [&](const Tensor& t, const std::string& what) {
      HKT_CHECK(t.dtype() == v.dtype(), op, ": ", what, " is ", t.dtype(), " but v is ", v.dtype());
      HKT_CHECK(t.device() == v.device(), op, ": ", what, " is on ", t.device().str(), " but v is on ",
                v.device().str());
    };
    for (int64_t l = 0; l < L_; ++l) {
      const Shape want{B, H, rules::attn_level_len(T, l), dh};
      for (int side = 0; side < 2; ++side) {
        const std::string what = std::string(side ? "k[" : "q[") + std::to_string(l) + "]";
        const Tensor& t = in[static_cast<size_t>(side * L_ + l)];
        HKT_CHECK(t.defined(), op, ": ", what, " is undefined");
        HKT_CHECK(t.shape() == want, op, ": ", what, " must be ", shape_str(want), " (T_", l, " = ceil(", T,
                  " / 2^", l, ") with v ", shape_str(v.shape()), "), got ", shape_str(t.shape()));
        same(t, what);
      }
    }
    const Tensor& lam = in[static_cast<size_t>(2 * L_ + 1)];
    HKT_CHECK(lam.defined(), op, ": lambda is undefined");
    HKT_CHECK((lam.shape() == Shape{H, L_}), op, ": lambda must be [H, L] = [", H, ", ", L_, "], got ",
              shape_str(lam.shape()));
    same(lam, "lambda");
    const Tensor& valid = in[valid_index()];
    if (valid.defined()) {
      HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{B, T}), op, ": valid must be Bool [", B,
                ", ", T, "], got ", valid.dtype(), shape_str(valid.shape()));
      HKT_CHECK(valid.device() == v.device(), op, ": valid is on ", valid.device().str(), " but v is on ",
                v.device().str());
    }
    return {v.meta()};
  }

  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    std::vector<Tensor> q, k;
    for (int64_t l = 0; l < L_; ++l) {
      q.push_back(contiguous(in[static_cast<size_t>(l)]));
      k.push_back(contiguous(in[static_cast<size_t>(L_ + l)]));
    }
    const Tensor v = contiguous(in[static_cast<size_t>(2 * L_)]);
    const Tensor lam = contiguous(in[static_cast<size_t>(2 * L_ + 1)]);
    const Tensor valid = in[valid_index()].defined() ? contiguous(in[valid_index()]) : Tensor();
    Tensor o = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    Tensor lse = Tensor::empty({v.size(0), v.size(1), v.size(2)}, v.dtype(), v.device());
    kernels::tables().attention.get(v.device(), v.dtype())(dims(v), ptrs(q), ptrs(k), v.raw_data(), lam.raw_data(),
                                                 valid.defined() ? valid.data<bool>() : nullptr, o.raw_data(),
                                                 lse.raw_data());
    profiler::count(flops(v));
    for (int64_t l = 0; l < L_; ++l) {
      q_.emplace_back(q[static_cast<size_t>(l)]);
      k_.emplace_back(k[static_cast<size_t>(l)]);
    }
    v_ = v;
    lam_ = lam;
    valid_ = valid;
    o_ = o;
    lse_ = lse;
    return {o};
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const char* op = name();
    std::vector<Tensor> q, k;
    for (int64_t l = 0; l < L_; ++l) {
      q.push_back(q_[static_cast<size_t>(l)].get(op));
      k.push_back(k_[static_cast<size_t>(l)].get(op));
    }
    const Tensor v = v_.get(op), lam = lam_.get(op), o = o_.get(op), lse = lse_.get(op);
    const Tensor valid = valid_.defined() ? valid_.get(op) : Tensor();
    const Tensor g = contiguous(grads[0]);
    std::vector<Tensor> res(static_cast<size_t>(2 * L_ + 3));
    bool want_q = false, want_k = false;
    for (int64_t l = 0; l < L_; ++l) {
      want_q = want_q || needs_input_grad(static_cast<size_t>(l));
      want_k = want_k || needs_input_grad(static_cast<size_t>(L_ + l));
    }
    const bool want_v = needs_input_grad(static_cast<size_t>(2 * L_));
    const bool want_lam = needs_input_grad(static_cast<size_t>(2 * L_ + 1));
    std::vector<void*> dq, dk;
    for (int64_t l = 0; l < L_; ++l) {
      if (want_q) {
        res[static_cast<size_t>(l)] = Tensor::empty(q[static_cast<size_t>(l)].shape(), v.dtype(), v.device());
        dq.push_back(res[static_cast<size_t>(l)].raw_data());
      }
      if (want_k) {
        res[static_cast<size_t>(L_ + l)] = Tensor::empty(k[static_cast<size_t>(l)].shape(), v.dtype(), v.device());
        dk.push_back(res[static_cast<size_t>(L_ + l)].raw_data());
      }
    }
    Tensor& dv = res[static_cast<size_t>(2 * L_)];
    Tensor& dlam = res[static_cast<size_t>(2 * L_ + 1)];
    if (want_v) dv = Tensor::empty(v.shape(), v.dtype(), v.device());
    if (want_lam) dlam = Tensor::empty(lam.shape(), v.dtype(), v.device());
    if (!want_q && !want_k && !want_v && !want_lam) return res;
    kernels::tables().attention_backward.get(v.device(), v.dtype())(
        dims(v), ptrs(q), ptrs(k), v.raw_data(), lam.raw_data(), valid.defined() ? valid.data<bool>() : nullptr,
        o.raw_data(), lse.raw_data(), g.raw_data(), dq, dk, want_v ? dv.raw_data() : nullptr,
        want_lam ? dlam.raw_data() : nullptr);
    profiler::count(2 * flops(v));  // a backward: twice the forward's products, as nn::model_flops counts
    // Levels whose inputs need no gradient still got one computed; drop them.
    for (size_t i = 0; i < static_cast<size_t>(2 * L_); ++i)
      if (!needs_input_grad(i)) res[i] = Tensor();
    return res;
  }

 private:
  size_t valid_index() const { return static_cast<size_t>(2 * L_ + 2); }
  sig::AttnShape dims(const Tensor& v) const { return {v.size(0), v.size(1), v.size(2), v.size(3), L_, causal_, scale_}; }
  // The forward's products (nn::score_flops and the P V product; causal: the pairs at or below
  // the diagonal): 2 dh per score of every level, 2 dv per weight of the fine map.
  double flops(const Tensor& v) const {
    if (!profiler::enabled()) return 0;
    const double bh = static_cast<double>(v.size(0)) * static_cast<double>(v.size(1));
    const double dh = static_cast<double>(v.size(3));
    auto pairs = [&](int64_t t) { return causal_ ? 0.5 * double(t) * double(t + 1) : double(t) * double(t); };
    double f = 2.0 * bh * pairs(v.size(2)) * dh;
    for (int64_t l = 0; l < L_; ++l) f += 2.0 * bh * pairs(rules::attn_level_len(v.size(2), l)) * dh;
    return f;
  }
  static std::vector<const void*> ptrs(const std::vector<Tensor>& ts) {
    std::vector<const void*> p;
    for (const Tensor& t : ts) p.push_back(t.raw_data());
    return p;
  }

  int64_t L_;
  bool causal_;
  double scale_;
  std::vector<SavedTensor> q_, k_;
  SavedTensor v_, lam_, valid_, o_, lse_;
};

}  // namespace

Tensor hkt_attention(const std::vector<Tensor>& q, const std::vector<Tensor>& k, const Tensor& v,
                     const Tensor& lambda, const Tensor& valid, bool causal, double scale) {
  HKT_CHECK(!q.empty(), "hkt_attention: q is empty (need one tensor per level, L >= 1)");
  HKT_CHECK(q.size() == k.size(), "hkt_attention: q has ", q.size(), " levels but k has ", k.size());
  std::vector<Tensor> in(q);
  in.insert(in.end(), k.begin(), k.end());
  in.push_back(v);
  in.push_back(lambda);
  in.push_back(valid);
  return apply_op<HKTAttentionFn>(in, static_cast<int64_t>(q.size()), causal, scale);
}

Tensor mha_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, bool causal,
                     double scale) {
  HKT_CHECK(v.defined() && v.dim() == 4, "mha_attention: v must be [B, H, T, dh], got ",
            v.defined() ? shape_str(v.shape()) : std::string("undefined"));
  return hkt_attention({q}, {k}, v, ones({v.size(1), 1}, {v.dtype(), v.device()}), valid, causal, scale);
}

}  // namespace hkt
