// Theorem 4.3's error parts and information terms (see info.hpp).
#include "hkt/analysis/info.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hkt/analysis/stats.hpp"
#include "hkt/core/error.hpp"

namespace hkt::analysis {
namespace {

// Solves the symmetric positive (semi)definite system A x = b (k x k) by Cholesky with a tiny ridge on
// a singular pivot, in float64.
std::vector<double> solve_spd(std::vector<double> A, std::vector<double> b, int64_t k) {
  double scale = 0;
  for (int64_t i = 0; i < k; ++i) scale = std::max(scale, A[i * k + i]);
  const double ridge = 1e-13 * (scale > 0 ? scale : 1.0);
  for (int64_t j = 0; j < k; ++j) {
    double d = A[j * k + j];
    for (int64_t t = 0; t < j; ++t) d -= A[j * k + t] * A[j * k + t];
    d = std::sqrt(std::max(d, ridge));
    A[j * k + j] = d;
    for (int64_t i = j + 1; i < k; ++i) {
      double v = A[i * k + j];
      for (int64_t t = 0; t < j; ++t) v -= A[i * k + t] * A[j * k + t];
      A[i * k + j] = v / d;
    }
  }
  for (int64_t i = 0; i < k; ++i) {  // L y = b
    for (int64_t t = 0; t < i; ++t) b[i] -= A[i * k + t] * b[t];
    b[i] /= A[i * k + i];
  }
  for (int64_t i = k - 1; i >= 0; --i) {  // L^T x = y
    for (int64_t t = i + 1; t < k; ++t) b[i] -= A[t * k + i] * b[t];
    b[i] /= A[i * k + i];
  }
  return b;
}

std::vector<double> predict(const std::vector<double>& x, int64_t q, const std::vector<double>& w, int64_t n) {
  std::vector<double> y(static_cast<size_t>(n), w[static_cast<size_t>(q)]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < q; ++c) y[i] += x[i * q + c] * w[c];
  return y;
}

double mean_sq_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s / static_cast<double>(a.size());
}

}  // namespace

std::vector<double> least_squares(const std::vector<double>& s, const std::vector<double>& x, int64_t q) {
  const int64_t n = static_cast<int64_t>(s.size()), k = q + 1;
  HKT_CHECK(q >= 0 && static_cast<int64_t>(x.size()) == n * q, "least_squares: expected ", n, " x ", q,
            " features, got ", x.size(), " values");
  HKT_CHECK(n > k, "least_squares: ", n, " values for ", k, " weights (needs more values than weights)");
  // Centred normal equations: the intercept separately, for conditioning.
  std::vector<double> mx(static_cast<size_t>(q), 0.0);
  double ms = 0;
  for (int64_t i = 0; i < n; ++i) {
    ms += s[i];
    for (int64_t c = 0; c < q; ++c) mx[c] += x[i * q + c];
  }
  ms /= static_cast<double>(n);
  for (double& m : mx) m /= static_cast<double>(n);
  std::vector<double> A(static_cast<size_t>(q * q), 0.0), b(static_cast<size_t>(q), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < q; ++c) {
      const double xc = x[i * q + c] - mx[c];
      b[c] += xc * (s[i] - ms);
      for (int64_t d = 0; d <= c; ++d) A[c * q + d] += xc * (x[i * q + d] - mx[d]);
    }
  for (int64_t c = 0; c < q; ++c)
    for (int64_t d = 0; d < c; ++d) A[d * q + c] = A[c * q + d];
  std::vector<double> w = q > 0 ? solve_spd(A, b, q) : std::vector<double>{};
  double icpt = ms;
  for (int64_t c = 0; c < q; ++c) icpt -= w[c] * mx[c];
  w.push_back(icpt);
  return w;
}

ErrorDecomposition decompose_error(const std::vector<double>& s, const std::vector<double>& z, int64_t p,
                                   const std::vector<double>& zq, int64_t q, const std::vector<double>& w) {
  const int64_t n = static_cast<int64_t>(s.size());
  HKT_CHECK(static_cast<int64_t>(w.size()) == q + 1, "decompose_error: ", q + 1, " weights expected (q = ", q,
            " and the intercept), got ", w.size());
  for (double v : s) HKT_CHECK(std::isfinite(v), "decompose_error: a non-finite score (", v, ")");
  ErrorDecomposition r;
  r.n = n;
  const std::vector<double> sz = predict(z, p, least_squares(s, z, p), n);
  const std::vector<double> sq = predict(zq, q, least_squares(s, zq, q), n);
  const std::vector<double> used = predict(zq, q, w, n);
  double ms = 0;
  for (double v : s) ms += v;
  ms /= static_cast<double>(n);
  for (double v : s) r.var_s += (v - ms) * (v - ms);
  r.var_s /= static_cast<double>(n);
  r.total = mean_sq_diff(s, used);
  r.hier = mean_sq_diff(s, sz);
  r.quant = mean_sq_diff(sz, sq);
  r.opt = mean_sq_diff(sq, used);
  r.cross = r.total - (r.hier + r.quant + r.opt);
  r.rho2 = r.var_s > 0 ? 1.0 - r.hier / r.var_s : 0.0;
  r.rho2_q = r.var_s > 0 ? 1.0 - mean_sq_diff(s, sq) / r.var_s : 0.0;
  return r;
}

double gaussian_information(double rho2) {
  HKT_CHECK(rho2 >= 0 && rho2 < 1, "gaussian_information: rho^2 = ", rho2, " outside [0, 1)");
  return -0.5 * std::log1p(-rho2);
}

double negentropy_cumulants(double skew, double kurt) { return skew * skew / 12.0 + kurt * kurt / 48.0; }

double information_correction(double rho2, double skew_e, double kurt_e) {
  HKT_CHECK(rho2 >= 0 && rho2 <= 1, "information_correction: rho^2 = ", rho2, " outside [0, 1]");
  const double u = 1.0 - rho2;
  return negentropy_cumulants(skew_e, kurt_e) - negentropy_cumulants(skew_e * std::pow(u, 1.5), kurt_e * u * u);
}

LevelInformation level_information(const std::vector<double>& s, const std::vector<double>& z) {
  HKT_CHECK(s.size() == z.size() && s.size() >= 4, "level_information: needs as many z as s values, at least 4 (got ",
            s.size(), " and ", z.size(), ")");
  LevelInformation r;
  r.n = static_cast<int64_t>(s.size());
  const std::vector<double> w = least_squares(s, z, 1);
  Moments ms, mz, me;
  std::vector<double> e(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    e[i] = s[i] - (w[0] * z[i] + w[1]);
    ms.add(s[i]);
    me.add(e[i]);
  }
  const double vs = ms.variance(), ve = me.variance();
  r.rho2 = vs > 0 ? std::clamp(1.0 - ve / vs, 0.0, 1.0 - 1e-15) : 0.0;
  double m3 = 0;
  const double mean_e = me.mean();
  for (double v : e) m3 += (v - mean_e) * (v - mean_e) * (v - mean_e);
  m3 /= static_cast<double>(e.size());
  r.skew_e = ve > 0 ? m3 / std::pow(ve, 1.5) : 0.0;
  r.kurt_e = me.excess_kurtosis();
  r.kurt_s = ms.excess_kurtosis();
  r.gaussian = gaussian_information(r.rho2);
  r.correction = std::isfinite(r.kurt_e) ? information_correction(r.rho2, r.skew_e, r.kurt_e)
                                         : std::numeric_limits<double>::quiet_NaN();
  r.total = r.gaussian + r.correction;
  return r;
}

}  // namespace hkt::analysis
