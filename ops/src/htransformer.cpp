// htransformer_attention: H-Transformer-1D's hierarchical attention (the math
// is in hkt/ops/htransformer.hpp), fused (one op with its own forward and
// backward kernels, kernels/cpu/htransformer.hpp) and as the composite of
// differentiable ops it is tested against (htransformer_attention_reference:
// every tensor at most [B, H, T', max(N, dh)] per level, never T x T).
#include "hkt/ops/htransformer.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "hkt/core/error.hpp"
#include "hkt/core/function.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"

namespace hkt {
namespace {

constexpr double kMasked = -1e30;  // a masked score: exp(kMasked - max) is 0 in float32 and float64

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, double scale,
                  int64_t block, int64_t levels) {
  const char* op = "htransformer_attention";
  HKT_CHECK(q.defined() && k.defined() && v.defined(), op, ": q, k and v must be defined");
  HKT_CHECK(q.dim() == 4, op, ": q must be [B, H, T, dh], got ", shape_str(q.shape()));
  HKT_CHECK(is_floating(q.dtype()), op, ": expected float32 or float64 inputs, got q ", q.dtype());
  for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{k, "k"}, {v, "v"}}) {
    HKT_CHECK(t.shape() == q.shape(), op, ": ", name, " must have q's shape ", shape_str(q.shape()), ", got ",
              shape_str(t.shape()));
    HKT_CHECK(t.dtype() == q.dtype(), op, ": ", name, " is ", t.dtype(), " but q is ", q.dtype());
    HKT_CHECK(t.device() == q.device(), op, ": ", name, " is on ", t.device().str(), " but q is on ",
              q.device().str());
  }
  HKT_CHECK(q.size(2) >= 1, op, ": the sequence is empty (T = 0) in q ", shape_str(q.shape()));
  HKT_CHECK(q.size(3) >= 1, op, ": the head dim is empty in q ", shape_str(q.shape()));
  HKT_CHECK(block >= 1, op, ": block must be >= 1, got ", block);
  HKT_CHECK(levels >= 0, op, ": levels must be >= 1 (or 0: as many as T needs), got ", levels);
  HKT_CHECK(std::isfinite(scale), op, ": scale must be finite, got ", scale);
  if (valid.defined()) {
    HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{q.size(0), q.size(2)}), op,
              ": valid must be Bool [", q.size(0), ", ", q.size(2), "], got ", valid.dtype(),
              shape_str(valid.shape()));
    HKT_CHECK(valid.device() == q.device(), op, ": valid is on ", valid.device().str(), " but q is on ",
              q.device().str());
  }
}

// x [B, H', Tc, d] -> [B, H', Tc / 2, d]: the sums of adjacent pairs.
Tensor pair_sum(const Tensor& x) {
  return sum(reshape(x, {x.size(0), x.size(1), x.size(2) / 2, 2, x.size(3)}), {3});
}

// x [B, H', Tc, d] in blocks of n tokens -> [B, H', Tc / n, n, d] with blocks 2m and
// 2m + 1 swapped: each block's sibling.
Tensor siblings(const Tensor& x, int64_t n) {
  const int64_t nb = x.size(2) / n;
  const Tensor swap = to_device(from_vector(std::vector<int64_t>{1, 0}, {2}), x.device());
  const Tensor pairs = reshape(x, {x.size(0), x.size(1), nb / 2, 2, n * x.size(3)});
  return reshape(index_select(pairs, 3, swap), {x.size(0), x.size(1), nb, n, x.size(3)});
}

// Repeats every row of x [B, H', Tc, d] g times: [B, H', Tc * g, d] (the prolongation).
Tensor repeat_rows(const Tensor& x, int64_t g) {
  if (g == 1) return x;
  const Shape s = x.shape();
  return reshape(expand(unsqueeze(x, 3), {s[0], s[1], s[2], g, s[3]}), {s[0], s[1], s[2] * g, s[3]});
}

// One level's blocks: queries qb [B, H, nb, R, dh] against keys kb [B, H, nb, N, dh]
// whose value sums are vb [B, H, nb, N, dh] and whose token counts are cb [B, 1, nb, N, 1];
// allowed (0/1, broadcast to [B, H, nb, R, N]) says which pairs are attended.
// Returns the rows' max score m, numerator sum exp(s - m) V and denominator sum exp(s - m) c,
// each flattened to [B, H, nb * R, .].
struct Partial {
  Tensor m, num, den;
};
Partial attend(const Tensor& qb, const Tensor& kb, const Tensor& vb, const Tensor& cb, const Tensor& allowed,
               double scale) {
  const Tensor s = matmul(qb, transpose(kb, -1, -2)) * scale;
  const Tensor blocked = le(expand(allowed, s.shape()), 0.0);
  const Tensor ms = masked_fill(s, blocked, kMasked);
  const Tensor m = max(ms, {-1}, true).detach();  // any shift gives the same Y; none needs a gradient
  const Tensor w = exp(ms - m) * allowed;
  const Shape f{qb.size(0), qb.size(1), qb.size(2) * qb.size(3)};
  auto flat = [&](const Tensor& t) { return reshape(t, {f[0], f[1], f[2], t.size(-1)}); };
  return {flat(m), flat(matmul(w, vb)), flat(matmul(w, cb))};
}

// The fused op. Inputs q, k, v, valid (may be undefined); saves them, Y and lse [B, H, T].
class HTransformerFn final : public Function {
 public:
  HTransformerFn(bool causal, double scale, int64_t block, int64_t levels)
      : causal_(causal), scale_(scale), block_(block), levels_(levels) {}
  const char* name() const override { return "htransformer_attention"; }
  bool differentiable(size_t i) const override { return i != 3; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    check_inputs(in[0], in[1], in[2], in[3], scale_, block_, levels_);
    return {in[0].meta()};
  }

  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor q = contiguous(in[0]), k = contiguous(in[1]), v = contiguous(in[2]);
    const Tensor valid = in[3].defined() ? contiguous(in[3]) : Tensor();
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    Tensor lse = Tensor::empty({q.size(0), q.size(1), q.size(2)}, q.dtype(), q.device());
    kernels::tables().htransformer.get(q.device(), q.dtype())(shape(q), q.raw_data(), k.raw_data(), v.raw_data(),
                                                              bool_ptr(valid), y.raw_data(), lse.raw_data());
    q_ = q, k_ = k, v_ = v, valid_ = valid, y_ = y, lse_ = lse;
    return {y};
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const char* op = name();
    const Tensor q = q_.get(op), k = k_.get(op), v = v_.get(op), y = y_.get(op), lse = lse_.get(op);
    const Tensor valid = valid_.defined() ? valid_.get(op) : Tensor();
    const Tensor g = contiguous(grads[0]);
    std::vector<Tensor> res(4);
    for (size_t i = 0; i < 3; ++i)
      if (needs_input_grad(i)) res[i] = Tensor::empty(q.shape(), q.dtype(), q.device());
    if (!res[0].defined() && !res[1].defined() && !res[2].defined()) return res;
    auto ptr = [](Tensor& t) { return t.defined() ? t.raw_data() : nullptr; };
    kernels::tables().htransformer_backward.get(q.device(), q.dtype())(
        shape(q), q.raw_data(), k.raw_data(), v.raw_data(), bool_ptr(valid), y.raw_data(), lse.raw_data(),
        g.raw_data(), ptr(res[0]), ptr(res[1]), ptr(res[2]));
    return res;
  }

 private:
  sig::HtrShape shape(const Tensor& q) const {
    const int64_t all = htransformer_levels(q.size(2), block_);
    const int64_t L = levels_ > 0 && levels_ < all ? levels_ : all;
    return {q.size(0), q.size(1), q.size(2), q.size(3), block_, L, causal_, scale_};
  }
  static const bool* bool_ptr(const Tensor& t) { return t.defined() ? t.data<bool>() : nullptr; }

  bool causal_;
  double scale_;
  int64_t block_, levels_;
  SavedTensor q_, k_, v_, valid_, y_, lse_;
};

}  // namespace

Tensor htransformer_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, bool causal,
                              double scale, int64_t block, int64_t levels) {
  // No fused kernel on this device (CUDA): the composite, which runs wherever its plain ops do.
  if (q.defined() && !kernels::tables().htransformer.has(q.device().type, q.dtype()))
    return htransformer_attention_reference(q, k, v, valid, causal, scale, block, levels);
  return apply(std::make_shared<HTransformerFn>(causal, scale, block, levels), {q, k, v, valid})[0];
}

int64_t htransformer_levels(int64_t T, int64_t block) {
  HKT_CHECK(T >= 1 && block >= 1, "htransformer_levels: T and block must be >= 1, got T = ", T, ", block = ",
            block);
  int64_t blocks = (T + block - 1) / block, L = 1;
  while ((int64_t{1} << (L - 1)) < blocks) ++L;
  return L;
}

Tensor htransformer_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid,
                                        bool causal, double scale, int64_t block, int64_t levels) {
  check_inputs(q, k, v, valid, scale, block, levels);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), N = block;
  const int64_t all = htransformer_levels(T, N);
  const int64_t L = levels > 0 && levels < all ? levels : all;
  const int64_t top = N << (L - 1);             // the largest diagonal block
  const int64_t Tp = (T + top - 1) / top * top;  // the padded length T'
  const TensorOptions opt{q.dtype(), q.device()};

  // The mask as 0/1 in q's dtype [B, 1, T', 1] (0 at the internal pad), and the padded inputs.
  Tensor mask = valid.defined() ? to_dtype(valid, q.dtype()) : ones({B, T}, opt);
  auto pad = [&](const Tensor& x, int64_t rows) {
    if (Tp == T) return x;
    Shape s = x.shape();
    s[2] = Tp - T;
    s[1] = rows;
    return cat({x, zeros(s, opt)}, 2);
  };
  mask = pad(reshape(mask, {B, 1, T, 1}), 1);
  const Tensor qp = pad(q, H) * mask, kp = pad(k, H) * mask, vp = pad(v, H) * mask;

  // Level 0: the diagonal blocks, exact.
  const int64_t nb0 = Tp / N;
  auto blocks = [](const Tensor& x, int64_t nb, int64_t n) {
    return reshape(x, {x.size(0), x.size(1), nb, n, x.size(3)});
  };
  Tensor allowed0 = reshape(mask, {B, 1, nb0, 1, N});  // key j is real
  if (causal) {
    const Tensor i = reshape(arange(N, opt), {N, 1}), j = reshape(arange(N, opt), {1, N});
    allowed0 = allowed0 * to_dtype(le(j - i, 0.0), q.dtype());
  }
  std::vector<Partial> parts;
  parts.push_back(attend(blocks(qp, nb0, N), blocks(kp, nb0, N), blocks(vp, nb0, N), blocks(mask, nb0, N), allowed0,
                         scale));

  // Levels l >= 1: sums over groups of g = 2^(l-1) tokens (restriction), the sibling blocks.
  Tensor qs = qp, ks = kp, vs = vp, cs = mask;
  for (int64_t l = 1; l < L; ++l) {
    const int64_t g = int64_t{1} << (l - 1);
    if (g > 1) {
      qs = pair_sum(qs);
      ks = pair_sum(ks);
      vs = pair_sum(vs);
      cs = pair_sum(cs);
    }
    const Tensor count = clamp(cs, 1.0, 1e300);  // a group without tokens: mean 0, masked below
    const int64_t nb = Tp / g / N;
    const Tensor kb = siblings(ks / count, N), vb = siblings(vs, N), cb = siblings(cs, N);
    Tensor allowed = to_dtype(gt(transpose(cb, -1, -2), 0.0), q.dtype());  // [B, 1, nb, 1, N]
    if (causal) {
      // Only a right block (odd) sees its sibling, which lies wholly before it; fine queries.
      std::vector<double> right(static_cast<size_t>(nb));
      for (int64_t n = 0; n < nb; ++n) right[static_cast<size_t>(n)] = static_cast<double>(n % 2);
      const Tensor odd = to_device(to_dtype(from_vector(right, {nb, 1, 1}), q.dtype()), q.device());
      parts.push_back(attend(blocks(qp, nb, N * g), kb, vb, cb, allowed * odd, scale));
    } else {
      Partial p = attend(blocks(qs / count, nb, N), kb, vb, cb, allowed, scale);
      parts.push_back({repeat_rows(p.m, g), repeat_rows(p.num, g), repeat_rows(p.den, g)});
    }
  }

  // One shared normalisation over the levels: Y = sum_l e^(m_l - M) num_l / sum_l e^(m_l - M) den_l.
  Tensor M = parts[0].m;
  for (size_t l = 1; l < parts.size(); ++l) M = maximum(M, parts[l].m);
  Tensor num, den;
  for (const Partial& p : parts) {
    const Tensor e = exp(p.m - M);
    num = num.defined() ? num + e * p.num : e * p.num;
    den = den.defined() ? den + e * p.den : e * p.den;
  }
  const Tensor safe = where(gt(den, 0.0), den, ones_like(den));  // no key at all: Y = 0 / 1
  Tensor y = num / safe * mask;
  return Tp == T ? y : contiguous(narrow(y, 2, 0, T));
}

}  // namespace hkt
