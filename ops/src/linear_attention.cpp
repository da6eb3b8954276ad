// Linear attention (Performer's FAVOR+ and the elu + 1 map): composites of
// plain ops, no T x T tensor (hkt/ops/linear_attention.hpp).
#include "hkt/ops/linear_attention.hpp"

#include <cmath>
#include <vector>

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/random.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"

namespace hkt {
namespace {

constexpr double kTiny = 1e-30;  // floor of the denominator (only a row without keys reaches it)

void check_phi(const Tensor& pq, const Tensor& pk, const Tensor& v, const Tensor& valid, const char* op) {
  HKT_CHECK(pq.defined() && pk.defined() && v.defined(), op, ": phi_q, phi_k and v must be defined");
  HKT_CHECK(v.dim() == 4 && v.size(2) >= 1, op, ": v must be [B, H, T, dh] with T >= 1, got ", shape_str(v.shape()));
  const Shape want{v.size(0), v.size(1), v.size(2), pq.dim() == 4 ? pq.size(3) : -1};
  HKT_CHECK(pq.shape() == want && pk.shape() == want, op, ": phi_q and phi_k must be [B, H, T, m] with v's B, H, T (",
            shape_str(v.shape()), "), got ", shape_str(pq.shape()), " and ", shape_str(pk.shape()));
  if (valid.defined())
    HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{v.size(0), v.size(2)}), op,
              ": valid must be Bool [", v.size(0), ", ", v.size(2), "], got ", valid.dtype(),
              shape_str(valid.shape()));
}

// phi_k with padded keys zeroed.
Tensor mask_keys(const Tensor& pk, const Tensor& valid) {
  if (!valid.defined()) return pk;
  return pk * reshape(to_dtype(valid, pk.dtype()), {valid.size(0), 1, valid.size(1), 1});
}

// Bool [n, n], true above the diagonal (j > i).
Tensor upper(int64_t n, Device dev) {
  const Tensor i = arange(n, {DType::Int64, dev});
  return gt(reshape(i, {1, n}), reshape(i, {n, 1}));
}

}  // namespace

Tensor favor_features(const Tensor& x, const Tensor& w, bool is_query, const Tensor& valid, double eps, bool causal) {
  HKT_CHECK(x.defined() && x.dim() == 4, "favor_features: x must be [B, H, T, dh], got ",
            x.defined() ? shape_str(x.shape()) : std::string("undefined"));
  HKT_CHECK(w.defined() && w.dim() == 2 && w.size(1) == x.size(3), "favor_features: w must be [m, ", x.size(3),
            "], got ", w.defined() ? shape_str(w.shape()) : std::string("undefined"));
  HKT_CHECK(std::isfinite(eps) && eps >= 0, "favor_features: eps must be finite and >= 0, got ", eps);
  if (valid.defined())
    HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{x.size(0), x.size(2)}),
              "favor_features: valid must be Bool [", x.size(0), ", ", x.size(2), "], got ", valid.dtype(),
              shape_str(valid.shape()));
  const double dh = static_cast<double>(x.size(3)), m = static_cast<double>(w.size(0));
  const Tensor xs = x * std::pow(dh, -0.25);
  Tensor arg = matmul(xs, transpose(w, 0, 1)) - 0.5 * sum(xs * xs, {-1}, true);  // [B, H, T, m]
  // Padded rows take no part in the keys' stabiliser (a zeroed padded key has arguments 0, which
  // would otherwise set the maximum and underflow every real key) and get exp(-inf) = 0.
  if (valid.defined() && !is_query)
    arg = masked_fill(arg, eq(reshape(to_dtype(valid, x.dtype()), {x.size(0), 1, x.size(2), 1}), 0.0), -INFINITY);
  // The gradient flows through c too: with eps > 0 the shift no longer cancels exactly (as in
  // the JAX reference, which differentiates through its max).
  if (is_query) return (exp(arg - max(arg, {-1}, true)) + eps) * (1.0 / std::sqrt(m));
  Tensor c = max(arg, {2, 3}, true);
  c = where(gt(c, -1e300), c, zeros_like(c));  // no valid key at all: any shift
  if (!causal) return (exp(arg - c) + eps) * (1.0 / std::sqrt(m));
  // Causal: phi_k = e^(-c') (e^arg + eps), eps added before the shift, so that the shift is a
  // factor common to every key and no key's features depend on a later key's; c' = max(c,
  // log eps) keeps both terms at most 1 (no overflow when every argument is very negative).
  if (eps > 0) c = maximum(c, std::log(eps));
  return (exp(arg - c) + eps * exp(-c)) * (1.0 / std::sqrt(m));
}

Tensor elu1_features(const Tensor& x) { return exp(minimum(x, 0.0)) + maximum(x, 0.0); }

Tensor orthogonal_features(int64_t m, int64_t dh, uint64_t seed, DType dtype) {
  HKT_CHECK(m >= 1 && dh >= 1, "orthogonal_features: m (", m, ") and dh (", dh, ") must be >= 1");
  Generator gen(seed);
  const int64_t blocks = (m + dh - 1) / dh;
  const std::vector<double> g = randn({blocks * dh, dh}, {DType::Float64}, &gen).to_vector<double>();
  const std::vector<double> norms = randn({m, dh}, {DType::Float64}, &gen).to_vector<double>();
  std::vector<double> w(static_cast<size_t>(m * dh));
  for (int64_t b = 0; b < blocks; ++b) {
    std::vector<std::vector<double>> rows;
    for (int64_t r = 0; r < dh; ++r) {
      std::vector<double> u(g.begin() + (b * dh + r) * dh, g.begin() + (b * dh + r + 1) * dh);
      for (int pass = 0; pass < 2; ++pass)  // Gram-Schmidt, twice for accuracy
        for (const auto& e : rows) {
          double d = 0;
          for (int64_t c = 0; c < dh; ++c) d += u[c] * e[c];
          for (int64_t c = 0; c < dh; ++c) u[c] -= d * e[c];
        }
      double n = 0;
      for (double x : u) n += x * x;
      n = std::sqrt(n);
      for (double& x : u) x /= n;
      rows.push_back(u);
      const int64_t row = b * dh + r;
      if (row >= m) continue;
      double s = 0;  // the row's length: the norm of a Gaussian dh-vector
      for (int64_t c = 0; c < dh; ++c) s += norms[row * dh + c] * norms[row * dh + c];
      for (int64_t c = 0; c < dh; ++c) w[static_cast<size_t>(row * dh + c)] = u[c] * std::sqrt(s);
    }
  }
  return to_dtype(from_vector(w, {m, dh}), dtype);
}

Tensor linear_attention(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& valid, bool causal,
                        int64_t chunk) {
  check_phi(phi_q, phi_k, v, valid, "linear_attention");
  HKT_CHECK(chunk >= 1, "linear_attention: chunk must be >= 1, got ", chunk);
  const Tensor pk = mask_keys(phi_k, valid);
  if (!causal) {
    const Tensor kv = matmul(transpose(pk, -2, -1), v);       // [B, H, m, dh]
    const Tensor z = sum(pk, {2}, true);                       // [B, H, 1, m]
    const Tensor num = matmul(phi_q, kv);                      // [B, H, T, dh]
    const Tensor den = sum(phi_q * z, {-1}, true);             // [B, H, T, 1]
    return num / maximum(den, kTiny);
  }
  const int64_t T = v.size(2);
  std::vector<Tensor> outs;
  Tensor s, z;  // running sums over the chunks before: phi_k^T v [B, H, m, dh], phi_k^T 1 [B, H, 1, m]
  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t t1 = std::min(T, t0 + chunk);
    const Tensor q = slice(phi_q, 2, t0, t1), k = slice(pk, 2, t0, t1), vc = slice(v, 2, t0, t1);
    const Tensor a = masked_fill(matmul(q, transpose(k, -2, -1)), upper(t1 - t0, v.device()), 0.0);  // [c, c]
    Tensor num = matmul(a, vc), den = sum(a, {-1}, true);
    if (s.defined()) {
      num = num + matmul(q, s);
      den = den + sum(q * z, {-1}, true);
    }
    outs.push_back(num / maximum(den, kTiny));
    const Tensor ks = matmul(transpose(k, -2, -1), vc), kz = sum(k, {2}, true);
    s = s.defined() ? s + ks : ks;
    z = z.defined() ? z + kz : kz;
  }
  return outs.size() == 1 ? outs[0] : cat(outs, 2);
}

Tensor linear_attention_reference(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& valid,
                                  bool causal) {
  check_phi(phi_q, phi_k, v, valid, "linear_attention_reference");
  Tensor a = matmul(phi_q, transpose(mask_keys(phi_k, valid), -2, -1));  // [B, H, T, T]
  if (causal) a = masked_fill(a, upper(v.size(2), v.device()), 0.0);
  return matmul(a, v) / maximum(sum(a, {-1}, true), kTiny);
}

}  // namespace hkt
