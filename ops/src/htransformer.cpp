// htransformer_attention: H-Transformer-1D's hierarchical attention in the
// published layout (the math is in hkt/ops/htransformer.hpp), fused (one op
// with its own forward and backward kernels, kernels/cpu/htransformer.cpp) and
// as the composite of differentiable ops it is tested against
// (htransformer_attention_reference: per level [B, H, Tl, 3 Nr] scores at
// most, never T x T).
#include "hkt/ops/htransformer.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "hkt/core/error.hpp"
#include "hkt/core/function.hpp"
#include "hkt/core/profiler.hpp"
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
                  int64_t block, const Tensor& bias) {
  const char* op = "htransformer_attention";
  HKT_CHECK(q.defined() && k.defined() && v.defined(), op, ": q, k and v must be defined");
  HKT_CHECK(q.dim() == 4, op, ": q must be [B, H, T, dh], got ", shape_str(q.shape()));
  HKT_CHECK(is_floating(q.dtype()), op, ": expected float32 or float64 inputs, got q ", q.dtype());
  HKT_CHECK(k.shape() == q.shape(), op, ": k must have q's shape ", shape_str(q.shape()), ", got ",
            shape_str(k.shape()));
  HKT_CHECK(v.dim() == 4 && v.size(0) == q.size(0) && v.size(1) == q.size(1) && v.size(2) == q.size(2), op,
            ": v must be [B, H, T, dv] with q's B, H, T ", shape_str(q.shape()), ", got ", shape_str(v.shape()));
  for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{k, "k"}, {v, "v"}}) {
    HKT_CHECK(t.dtype() == q.dtype(), op, ": ", name, " is ", t.dtype(), " but q is ", q.dtype());
    HKT_CHECK(t.device() == q.device(), op, ": ", name, " is on ", t.device().str(), " but q is on ",
              q.device().str());
  }
  HKT_CHECK(q.size(2) >= 1, op, ": the sequence is empty (T = 0) in q ", shape_str(q.shape()));
  HKT_CHECK(q.size(3) >= 1 && v.size(3) >= 1, op, ": the head dim is empty in q ", shape_str(q.shape()), " or v ",
            shape_str(v.shape()));
  HKT_CHECK(block >= 2 && block % 2 == 0, op, ": block (Nr) must be even and >= 2, got ", block);
  HKT_CHECK(std::isfinite(scale), op, ": scale must be finite, got ", scale);
  if (valid.defined()) {
    HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{q.size(0), q.size(2)}), op,
              ": valid must be Bool [", q.size(0), ", ", q.size(2), "], got ", valid.dtype(),
              shape_str(valid.shape()));
    HKT_CHECK(valid.device() == q.device(), op, ": valid is on ", valid.device().str(), " but q is on ",
              q.device().str());
  }
  if (bias.defined()) {
    HKT_CHECK((bias.shape() == Shape{q.size(1), 4 * block - 1}), op, ": bias must be [H, 4 block - 1] = [",
              q.size(1), ", ", 4 * block - 1, "], got ", shape_str(bias.shape()));
    HKT_CHECK(bias.dtype() == q.dtype() && bias.device() == q.device(), op, ": bias must be ", q.dtype(), " on ",
              q.device().str(), ", got ", bias.dtype(), " on ", bias.device().str());
  }
}

// x [B, H', Tc, d] -> [B, H', Tc / 2, d]: the sums of adjacent pairs.
Tensor pair_sum(const Tensor& x) {
  return sum(reshape(x, {x.size(0), x.size(1), x.size(2) / 2, 2, x.size(3)}), {3});
}

// Repeats every row of x [B, H', Tc, d] g times: [B, H', Tc * g, d] (the interpolation).
Tensor repeat_rows(const Tensor& x, int64_t g) {
  if (g == 1) return x;
  const Shape s = x.shape();
  return reshape(expand(unsqueeze(x, 3), {s[0], s[1], s[2], g, s[3]}), {s[0], s[1], s[2] * g, s[3]});
}

// x [B, H', Tl, d] as blocks [B, H', nb, nr, d], and its blocks shifted: LEFT (block b sees
// block b - 1; a zero block for b = 0) and RIGHT (b + 1; zero for the last).
Tensor blocks(const Tensor& x, int64_t nr) { return reshape(x, {x.size(0), x.size(1), x.size(2) / nr, nr, x.size(3)}); }
Tensor shifted(const Tensor& xb, int64_t c) {
  const int64_t nb = xb.size(2);
  Shape z = xb.shape();
  z[2] = 1;
  const Tensor zero = zeros(z, {xb.dtype(), xb.device()});
  return c < 0 ? cat({zero, narrow(xb, 2, 0, nb - 1)}, 2) : cat({narrow(xb, 2, 1, nb - 1), zero}, 2);
}

// The fused op. Inputs q, k, v, valid, bias (the last two may be undefined); saves them, Y and lse [B, H, T].
class HTransformerFn final : public Function {
 public:
  HTransformerFn(bool causal, double scale, int64_t block) : causal_(causal), scale_(scale), block_(block) {}
  const char* name() const override { return "htransformer_attention"; }
  bool differentiable(size_t i) const override { return i != 3; }

  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    check_inputs(in[0], in[1], in[2], in[3], scale_, block_, in[4]);
    return {in[2].meta()};
  }

  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor q = contiguous(in[0]), k = contiguous(in[1]), v = contiguous(in[2]);
    const Tensor valid = in[3].defined() ? contiguous(in[3]) : Tensor();
    const Tensor bias = in[4].defined() ? contiguous(in[4]) : Tensor();
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    Tensor lse = Tensor::empty({q.size(0), q.size(1), q.size(2)}, q.dtype(), q.device());
    kernels::tables().htransformer.get(q.device(), q.dtype())(shape(q, v), q.raw_data(), k.raw_data(), v.raw_data(),
                                                              bool_ptr(valid), ptr(bias), y.raw_data(), lse.raw_data());
    profiler::count(flops(q, v));
    q_ = q, k_ = k, v_ = v, valid_ = valid, bias_ = bias, y_ = y, lse_ = lse;
    return {y};
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const char* op = name();
    const Tensor q = q_.get(op), k = k_.get(op), v = v_.get(op), y = y_.get(op), lse = lse_.get(op);
    const Tensor valid = valid_.defined() ? valid_.get(op) : Tensor();
    const Tensor bias = bias_.defined() ? bias_.get(op) : Tensor();
    const Tensor g = contiguous(grads[0]);
    std::vector<Tensor> res(5);
    for (const size_t i : {size_t{0}, size_t{1}, size_t{2}, size_t{4}}) {
      const Tensor& like = i == 4 ? bias : i == 2 ? v : q;
      if (needs_input_grad(i) && like.defined()) res[i] = Tensor::empty(like.shape(), like.dtype(), like.device());
    }
    if (!res[0].defined() && !res[1].defined() && !res[2].defined() && !res[4].defined()) return res;
    kernels::tables().htransformer_backward.get(q.device(), q.dtype())(
        shape(q, v), q.raw_data(), k.raw_data(), v.raw_data(), bool_ptr(valid), ptr(bias), y.raw_data(),
        lse.raw_data(), g.raw_data(), ptr(res[0]), ptr(res[1]), ptr(res[2]), ptr(res[4]));
    profiler::count(2 * flops(q, v));  // twice the forward's products, as nn::model_flops counts a backward
    return res;
  }

 private:
  // The forward's products: per head, 2 dh per computed score (htransformer_score_count) and 2 dv per weight.
  double flops(const Tensor& q, const Tensor& v) const {
    if (!profiler::enabled()) return 0;
    const double pairs = static_cast<double>(htransformer_score_count(q.size(2), block_, causal_));
    return 2.0 * static_cast<double>(q.size(0)) * static_cast<double>(q.size(1)) * pairs *
           static_cast<double>(q.size(3) + v.size(3));
  }
  sig::HtrShape shape(const Tensor& q, const Tensor& v) const {
    const HtrGeometry geo = htransformer_geometry(q.size(2), block_);
    return {q.size(0), q.size(1), q.size(2), q.size(3), v.size(3), block_, geo.Tp, geo.nr, geo.L, causal_, scale_};
  }
  static const bool* bool_ptr(const Tensor& t) { return t.defined() ? t.data<bool>() : nullptr; }
  static void* ptr(Tensor t) { return t.defined() ? t.raw_data() : nullptr; }

  bool causal_;
  double scale_;
  int64_t block_;
  SavedTensor q_, k_, v_, valid_, bias_, y_, lse_;
};

}  // namespace

HtrGeometry htransformer_geometry(int64_t T, int64_t block) {
  HKT_CHECK(T >= 1 && block >= 2 && block % 2 == 0, "htransformer_geometry: T must be >= 1 and block (Nr) even and >= 2, got T = ", T,
            ", block = ", block);
  if (T <= 2 * block) {
    const int64_t tp = std::max<int64_t>(2, T + (T & 1));
    return {tp, tp / 2, 1};
  }
  int64_t L = 1;
  while ((block << L) < T) ++L;
  return {block << L, block, L};
}

int64_t htransformer_levels(int64_t T, int64_t block) { return htransformer_geometry(T, block).L; }

int64_t htransformer_score_count(int64_t T, int64_t block, bool causal) {
  const HtrGeometry g = htransformer_geometry(T, block);
  const int64_t sq = g.nr * g.nr, nb0 = g.Tp / g.nr;
  int64_t n = nb0 * sq;
  for (int64_t l = 0; l < g.L; ++l) n += (causal ? 1 : 2) * ((nb0 >> l) - 1) * sq;
  return n;
}

Tensor htransformer_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, bool causal,
                              double scale, int64_t block, const Tensor& bias) {
  // No fused kernel on this device (CUDA): the composite, which runs wherever its plain ops do.
  if (q.defined() && !kernels::tables().htransformer.has(q.device().type, q.dtype()))
    return htransformer_attention_reference(q, k, v, valid, causal, scale, block, bias);
  return apply(std::make_shared<HTransformerFn>(causal, scale, block), {q, k, v, valid, bias})[0];
}

Tensor htransformer_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid,
                                        bool causal, double scale, int64_t block, const Tensor& bias) {
  check_inputs(q, k, v, valid, scale, block, bias);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), dh = q.size(3);
  const HtrGeometry geo = htransformer_geometry(T, block);
  const int64_t Tp = geo.Tp, nr = geo.nr, half = nr / 2;
  const TensorOptions opt{q.dtype(), q.device()};

  // The mask as 0/1 in q's dtype [B, 1, Tp, 1] (0 at the internal pad), and the masked, padded inputs.
  Tensor mask = valid.defined() ? to_dtype(valid, q.dtype()) : ones({B, T}, opt);
  auto pad = [&](const Tensor& x) {
    if (Tp == T) return x;
    Shape s = x.shape();
    s[2] = Tp - T;
    return cat({x, zeros(s, opt)}, 2);
  };
  mask = pad(reshape(mask, {B, 1, T, 1}));
  Tensor ql = pad(q) * mask, kl = pad(k) * mask, vl = pad(v) * mask, cl = mask, ne = mask;

  struct Partial {
    Tensor m, num, den;  // per fine query [B, H, Tp, .]
  };
  std::vector<Partial> parts;
  for (int64_t l = 0; l < geo.L; ++l) {
    if (l > 0) {  // coarsen: masked mean of the non-empty children (q causal: the first child)
      const Tensor kids = pair_sum(ne), div = clamp(kids, 1.0, 1e300);
      ql = causal ? narrow(reshape(ql, {B, H, ql.size(2) / 2, 2 * dh}), 3, 0, dh) : pair_sum(ql) / div;
      kl = pair_sum(kl) / div;
      vl = pair_sum(vl);
      cl = pair_sum(cl);
      ne = to_dtype(gt(kids, 0.0), q.dtype());
    }
    // The level's key blocks side by side: LEFT, ANCHOR (level 0), RIGHT (not causal).
    std::vector<int64_t> coords;
    coords.push_back(-1);
    if (l == 0) coords.push_back(0);
    if (!causal) coords.push_back(1);
    const Tensor qb = blocks(ql, nr), kb = blocks(kl, nr), vb = blocks(vl, nr), cb = blocks(cl, nr);
    std::vector<Tensor> ks, vs, cs;
    for (int64_t c : coords) {
      ks.push_back(c == 0 ? kb : shifted(kb, c));
      vs.push_back(c == 0 ? vb : shifted(vb, c));
      cs.push_back(c == 0 ? cb : shifted(cb, c));
    }
    const Tensor K = cat(ks, 3), V = cat(vs, 3), C = cat(cs, 3);  // [B, H|1, nb, W, .]
    const int64_t W = K.size(3);
    // The structural mask [nr, W] (causal anchor, correction quarters) and the bias indices.
    std::vector<double> st(static_cast<size_t>(nr * W), 1.0);
    std::vector<int64_t> idx(static_cast<size_t>(nr * W));
    for (int64_t a = 0; a < nr; ++a)
      for (size_t u = 0; u < coords.size(); ++u)
        for (int64_t j = 0; j < nr; ++j) {
          const int64_t c = coords[u], col = static_cast<int64_t>(u) * nr + j;
          const bool drop = (c == 0 && causal && j > a) || (l > 0 && c < 0 && a < half && j >= half) ||
                            (l > 0 && c > 0 && a >= half && j < half);
          st[static_cast<size_t>(a * W + col)] = drop ? 0.0 : 1.0;
          idx[static_cast<size_t>(a * W + col)] = c * nr + j - a + 2 * block - 1;
        }
    const Tensor structure = to_device(to_dtype(from_vector(st, {1, 1, 1, nr, W}), q.dtype()), q.device());
    const Tensor allowed = structure * to_dtype(gt(transpose(C, -1, -2), 0.0), q.dtype());  // [B, 1, nb, nr, W]
    Tensor s = matmul(qb, transpose(K, -1, -2)) * scale;
    if (bias.defined())
      s = s + reshape(index_select(bias, 1, to_device(from_vector(idx, {nr * W}), q.device())), {1, H, 1, nr, W});
    const Tensor ms = masked_fill(s, le(expand(allowed, s.shape()), 0.0), kMasked);
    const Tensor m = max(ms, {-1}, true).detach();  // any offset gives the same Y; none needs a gradient
    const Tensor w = exp(ms - m) * allowed;
    const int64_t Tl = ql.size(2), g = int64_t{1} << l;
    auto flat = [&](const Tensor& t) { return repeat_rows(reshape(t, {B, H, Tl, t.size(-1)}), g); };
    parts.push_back({flat(m), flat(matmul(w, V)), flat(matmul(w, C))});
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
