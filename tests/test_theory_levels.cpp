// Proposition 4.5 and Theorem 4.3 of the paper, as stated and as this project reads them
// (docs/analysis.md, "Proposition 4.5" and "Theorem 4.3"), each with a counter-case where its
// premise fails. CTest runs the cases also under the names "Proposition 4.5 ..." and "Theorem 4.3 ...".
//  - Proposition 4.5: the residual of the best fit of the L-level HKT score structure to one fixed
//    target falls geometrically in L when each new level removes a fixed share of it (a multi-scale
//    target), and does not on a random full-rank target.
//  - Theorem 4.3: the error of a level's score predictor is the sum of a hierarchical, a quantisation
//    and an optimisation part (exactly, when the coarse features are functions of the fine ones);
//    the information a level carries is the Gaussian term -1/2 log(1 - rho^2) plus a kurtosis
//    correction quadratic in the residual's excess kurtosis, checked against the exact information
//    of known densities by numerical integration.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "hkt/analysis/info.hpp"
#include "hkt/analysis/levelfit.hpp"
#include "hkt/analysis/stats.hpp"

using namespace hkt::analysis;

namespace {

std::vector<double> gaussian(int64_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> d;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(rng);
  return v;
}

int64_t blocks(int64_t n, int64_t l) { return (n + (int64_t{1} << l) - 1) >> l; }

// A random rank-r map over level l's blocks, upsampled to n x n and scaled to Frobenius norm `norm`.
std::vector<double> level_component(int64_t n, int64_t l, int64_t r, double norm, std::mt19937_64& rng) {
  const int64_t nl = blocks(n, l);
  const std::vector<double> u = gaussian(nl * r, rng), v = gaussian(nl * r, rng);
  std::vector<double> up = upsample_level(mul_abt(u, v, nl, nl, r), n, l);
  double s = 0;
  for (double x : up) s += x * x;
  for (double& x : up) x *= norm / std::sqrt(s);
  return up;
}

double frob(const std::vector<double>& a) {
  double s = 0;
  for (double x : a) s += x * x;
  return std::sqrt(s);
}

// The multi-scale target: sum over levels l = 0 .. levels - 1 of rank-r components of norm rho^l.
std::vector<double> multiscale_target(int64_t n, int64_t levels, int64_t r, double rho, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> S(static_cast<size_t>(n * n), 0.0);
  for (int64_t l = 0; l < levels; ++l) {
    const std::vector<double> c = level_component(n, l, r, std::pow(rho, static_cast<double>(l)), rng);
    for (size_t k = 0; k < S.size(); ++k) S[k] += c[k];
  }
  return S;
}

// -integral p log p of a zero-mean Gaussian scale mixture (weights pi, variances v), by the
// trapezoid rule over +-60 standard deviations: the exact differential entropy to about 1e-10.
double mixture_entropy(const std::vector<double>& pi, const std::vector<double>& v) {
  double var = 0;
  for (size_t k = 0; k < pi.size(); ++k) var += pi[k] * v[k];
  const double half = 60 * std::sqrt(var);
  const int64_t m = 200000;
  const double dx = 2 * half / static_cast<double>(m);
  double h = 0;
  for (int64_t i = 0; i <= m; ++i) {
    const double x = -half + dx * static_cast<double>(i);
    double p = 0;
    for (size_t k = 0; k < pi.size(); ++k) p += pi[k] * std::exp(-x * x / (2 * v[k])) / std::sqrt(2 * M_PI * v[k]);
    const double f = p > 0 ? -p * std::log(p) : 0.0;
    h += (i == 0 || i == m) ? f / 2 : f;
  }
  return h * dx;
}

// The exact I(s; z) for s = a z + e, z ~ N(0, 1), e independent: a two-variance scale mixture with
// unit variance and excess kurtosis kappa (variances 1 -+ sqrt(kappa / 3)). Returns I and rho^2.
std::pair<double, double> mixture_information(double a, double kappa) {
  const double d = std::sqrt(kappa / 3);
  const std::vector<double> pi{0.5, 0.5}, ve{1 - d, 1 + d}, vs{a * a + 1 - d, a * a + 1 + d};
  return {mixture_entropy(pi, vs) - mixture_entropy(pi, ve), a * a / (a * a + 1)};
}

}  // namespace

TEST_CASE("Proposition 4.5: the one-level fit is the rank-r truncated SVD (Eckart-Young), partial blocks too") {
  std::mt19937_64 rng(1);
  for (int64_t n : {9, 37, 48}) {
    const std::vector<double> S = gaussian(n * n, rng);
    const std::vector<double> sv = singular_values(S, n, n);
    for (int64_t r : {1, 3}) {
      double tail = 0, all = 0;
      for (size_t k = 0; k < sv.size(); ++k) (static_cast<int64_t>(k) >= r ? tail : all) += sv[k] * sv[k];
      all += tail;
      const std::vector<LevelFit> f = fit_levels(S, n, {.max_levels = 1, .rank = r});
      CHECK(f[0].rel_residual == doctest::Approx(std::sqrt(tail / all)).epsilon(1e-10));
    }
  }
}

TEST_CASE("Proposition 4.5: a target with the L-level structure is fitted to rounding; the residual never rises with L") {
  for (int64_t n : {37, 64}) {
    std::mt19937_64 rng(static_cast<uint64_t>(n));
    std::vector<double> S(static_cast<size_t>(n * n), 0.0);
    for (int64_t l = 0; l < 4; ++l) {
      const std::vector<double> c = level_component(n, l, 2, 1.0, rng);
      for (size_t k = 0; k < S.size(); ++k) S[k] += c[k];
    }
    const std::vector<LevelFit> f = fit_levels(S, n, {.max_levels = 5, .rank = 2});
    CHECK(f[3].rel_residual < 1e-8);
    CHECK(f[4].rel_residual < 1e-8);
    for (size_t L = 1; L < f.size(); ++L) CHECK(f[L].rel_residual <= f[L - 1].rel_residual * (1 + 1e-12) + 1e-14);
    // The fit's own maps rebuild it: ||S - sum_l Up_l(G_l)|| is the reported residual.
    std::vector<double> F(S.size(), 0.0);
    for (int64_t l = 0; l < 4; ++l) {
      const std::vector<double> up = upsample_level(f[3].maps[static_cast<size_t>(l)], n, l);
      for (size_t k = 0; k < F.size(); ++k) F[k] += up[k];
    }
    for (size_t k = 0; k < F.size(); ++k) F[k] = S[k] - F[k];
    CHECK(std::abs(frob(F) - f[3].residual) < 1e-10 * frob(S));
  }
  std::mt19937_64 rng(7);
  for (int64_t n : {20, 33}) {
    const std::vector<double> S = gaussian(n * n, rng);
    const std::vector<LevelFit> f = fit_levels(S, n, {.max_levels = 5, .rank = 2});
    for (size_t L = 1; L < f.size(); ++L) CHECK(f[L].rel_residual <= f[L - 1].rel_residual * (1 + 1e-12));
  }
}

TEST_CASE("Proposition 4.5: on a multi-scale target the best-fit residual falls geometrically at the target's rate") {
  // Energy rho^l at level l (rank-1 components, so that no level holds directions weaker than the
  // next level's): each new level removes its share, the premise of the proposition; the residual
  // after L levels is about rho^L, so the fitted factor per level is about rho. n = 128 keeps the
  // fitted levels' block counts (128 .. 16) well above the rank, so that components of different
  // levels are nearly orthogonal.
  for (double rho : {0.3, 0.5}) {
    const int64_t n = 128;
    const std::vector<double> S = multiscale_target(n, 6, 1, rho, 11);
    const std::vector<LevelFit> f = fit_levels(S, n, {.max_levels = 4, .rank = 1});
    const LogLinearFit fit = level_fit_rate(f);
    REQUIRE(fit.ok);
    INFO("rho = ", rho, ": factor ", fit.factor, " [", fit.factor_lo, ", ", fit.factor_hi, "]");
    CHECK(fit.factor_hi < 0.7);                                  // geometric: the whole interval below 1
    CHECK(fit.factor == doctest::Approx(rho).epsilon(0.15));     // at the premise's rate
    for (size_t L = 1; L < f.size(); ++L) CHECK(f[L].rel_residual < 0.75 * f[L - 1].rel_residual);
  }
}

TEST_CASE("Proposition 4.5 counter-case: on a random full-rank target the residual does not fall geometrically") {
  // Each level adds rank r of capacity, but the target's energy is spread over all n singular
  // directions and block means keep only 1/4^l of it: the premise fails, and so does the decay.
  std::mt19937_64 rng(5);
  const int64_t n = 64;
  const std::vector<double> S = gaussian(n * n, rng);
  const std::vector<LevelFit> f = fit_levels(S, n, {.max_levels = 5, .rank = 2});
  const LogLinearFit fit = level_fit_rate(f);
  REQUIRE(fit.ok);
  INFO("factor ", fit.factor, " [", fit.factor_lo, ", ", fit.factor_hi, "]");
  CHECK(fit.factor > 0.95);
  CHECK(f.back().rel_residual > 0.8);
}

TEST_CASE("Proposition 4.5: with row offsets a constant per row costs nothing") {
  const int64_t n = 40;
  std::vector<double> S = multiscale_target(n, 4, 2, 0.5, 3);
  std::vector<double> shifted = S;
  std::mt19937_64 rng(9);
  const std::vector<double> c = gaussian(n, rng);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) shifted[i * n + j] += 5 * c[i];
  const std::vector<LevelFit> a = fit_levels(S, n, {.max_levels = 4, .rank = 2, .row_offsets = true});
  const std::vector<LevelFit> b = fit_levels(shifted, n, {.max_levels = 4, .rank = 2, .row_offsets = true});
  for (size_t L = 0; L < 3; ++L) CHECK(b[L].residual == doctest::Approx(a[L].residual).epsilon(1e-6));
  CHECK(b[3].rel_residual < 1e-7);
}

TEST_CASE("fit_levels refuses bad input with a message naming it") {
  CHECK_THROWS_WITH(fit_levels({1, 2, 3}, 2, {}), doctest::Contains("expected 4 values"));
  CHECK_THROWS_WITH(fit_levels({1, 2, 3, NAN}, 2, {}), doctest::Contains("non-finite"));
  CHECK_THROWS_WITH(fit_levels({1, 2, 3, 4}, 2, {.rank = 0}), doctest::Contains("rank = 0"));
}

TEST_CASE("Theorem 4.3: the hierarchical, quantisation and optimisation errors add up exactly") {
  // Fine features z (p = 8 correlated block values), coarse ones z_q = means of pairs (downsampling),
  // a score with a nonlinear part and heavy-tailed noise, and weights off the optimum.
  std::mt19937_64 rng(21);
  const int64_t n = 3000, p = 8, q = 4;
  std::vector<double> z = gaussian(n * p, rng), zq(static_cast<size_t>(n * q)), s(static_cast<size_t>(n));
  std::student_t_distribution<double> t5(5.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 1; c < p; ++c) z[i * p + c] += 0.6 * z[i * p + c - 1];
    for (int64_t c = 0; c < q; ++c) zq[i * q + c] = (z[i * p + 2 * c] + z[i * p + 2 * c + 1]) / 2;
    s[i] = 0.5;
    for (int64_t c = 0; c < p; ++c) s[i] += (c % 2 ? 0.8 : -0.3) * z[i * p + c];
    s[i] += 0.4 * z[i * p] * z[i * p + 1] + 0.5 * t5(rng);
  }
  std::vector<double> w = least_squares(s, zq, q);
  const ErrorDecomposition best = decompose_error(s, z, p, zq, q, w);
  CHECK(std::abs(best.opt) < 1e-20 + 1e-12 * best.total);
  for (double& x : w) x += 0.1;
  const ErrorDecomposition d = decompose_error(s, z, p, zq, q, w);
  INFO("total ", d.total, " = hier ", d.hier, " + quant ", d.quant, " + opt ", d.opt, " (cross ", d.cross, ")");
  CHECK(d.hier > 0);
  CHECK(d.quant > 0.05 * d.total);
  CHECK(d.opt > 0.01 * d.total);
  CHECK(std::abs(d.cross) < 1e-10 * d.total);
  CHECK(d.hier == doctest::Approx(d.var_s * (1 - d.rho2)).epsilon(1e-12));
  CHECK(d.quant == doctest::Approx(d.var_s * (d.rho2 - d.rho2_q)).epsilon(1e-9));
  // No downsampling (z_q = z): no quantisation error.
  const ErrorDecomposition none = decompose_error(s, z, p, z, p, least_squares(s, z, p));
  CHECK(none.quant < 1e-12 * none.total);
  CHECK(none.total == doctest::Approx(none.hier).epsilon(1e-12));
}

TEST_CASE("Theorem 4.3 counter-case: coarse features outside the fine span break the sum") {
  std::mt19937_64 rng(22);
  const int64_t n = 3000, p = 4, q = 2;
  std::vector<double> z = gaussian(n * p, rng), zq(static_cast<size_t>(n * q)), s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    zq[i * q] = z[i * p];
    zq[i * q + 1] = z[i * p + 1] * z[i * p + 1];  // not a linear function of z: not a downsampling
    s[i] = z[i * p] + z[i * p + 1] * z[i * p + 1] + 0.3 * z[i * p + 2];
  }
  std::vector<double> w = least_squares(s, zq, q);
  w[0] += 0.2;
  const ErrorDecomposition d = decompose_error(s, z, p, zq, q, w);
  INFO("cross ", d.cross, " of total ", d.total);
  CHECK(std::abs(d.cross) > 0.1 * d.total);
}

TEST_CASE("Theorem 4.3: a level's information is -1/2 log(1 - rho^2) plus a kurtosis correction, by quadrature") {
  // Gaussian noise: no correction, the information is exactly the Gaussian term.
  for (double a : {0.5, 1.0, 2.0}) {
    const auto [I, rho2] = mixture_information(a, 0.0);
    CHECK(I == doctest::Approx(gaussian_information(rho2)).epsilon(1e-7));
  }
  // Non-Gaussian noise of excess kurtosis kappa: the exact excess over the Gaussian term against the
  // correction kappa^2 (1 - (1 - rho^2)^4) / 48. The approximation is of leading order: the ratio goes
  // to 1 as kappa -> 0 (0.98 at kappa = 0.02) and the excess scales as kappa^2.
  for (double a : {0.7, 1.0, 2.0}) {
    std::vector<double> ks{0.02, 0.05, 0.1}, excess, ratio;
    for (double k : ks) {
      const auto [I, rho2] = mixture_information(a, k);
      excess.push_back(I - gaussian_information(rho2));
      ratio.push_back(excess.back() / information_correction(rho2, 0.0, k));
    }
    INFO("a = ", a, ": ratios ", ratio[0], " ", ratio[1], " ", ratio[2]);
    CHECK(ratio[0] > 0.96);
    CHECK(ratio[0] < 1.0);
    CHECK(ratio[0] > ratio[1]);
    CHECK(ratio[1] > ratio[2]);
    const double slope = std::log(excess[2] / excess[0]) / std::log(ks[2] / ks[0]);
    CHECK(slope == doctest::Approx(2.0).epsilon(0.05));
  }
  // The correction grows with rho^2 at a fixed kurtosis, as the dilution factor says.
  CHECK(information_correction(0.2, 0, 1) < information_correction(0.5, 0, 1));
  CHECK(information_correction(0.5, 0, 1) < information_correction(0.9, 0, 1));
  CHECK(information_correction(0.0, 0, 1) == 0.0);
}

TEST_CASE("Theorem 4.3 counter-case: noise whose size depends on the coarse level breaks the correction") {
  // s = z + sigma(z) g with sigma(z)^2 = 1 + c (z^2 - 1): the residual is uncorrelated with z and has
  // excess kurtosis 6 c^2, but it is not independent of z, the premise of the correction. The exact
  // information (2-D quadrature) exceeds the Gaussian term by far more than the correction predicts.
  const double c = 0.1, a = 1.0;
  const int64_t mz = 1600, mx = 4000;
  const double zlo = -8, zhi = 8, xlo = -30, xhi = 30, dz = (zhi - zlo) / mz, dx = (xhi - xlo) / mx;
  std::vector<double> px(static_cast<size_t>(mx + 1), 0.0);
  double hsz = 0, es2 = 0, es4 = 0;
  for (int64_t k = 0; k <= mz; ++k) {
    const double z = zlo + dz * static_cast<double>(k), wz = std::exp(-z * z / 2) / std::sqrt(2 * M_PI) * dz;
    const double s2 = 1 + c * (z * z - 1);
    hsz += wz * 0.5 * std::log(2 * M_PI * M_E * s2);
    es2 += wz * s2;
    es4 += wz * s2 * s2;
    for (int64_t i = 0; i <= mx; ++i) {
      const double x = xlo + dx * static_cast<double>(i) - a * z;
      px[static_cast<size_t>(i)] += wz * std::exp(-x * x / (2 * s2)) / std::sqrt(2 * M_PI * s2);
    }
  }
  double hs = 0;
  for (double p : px) hs += p > 0 ? -p * std::log(p) * dx : 0.0;
  const double I = hs - hsz, rho2 = a * a / (a * a + es2), kappa = 3 * es4 / (es2 * es2) - 3;
  const double excess = I - gaussian_information(rho2), predicted = information_correction(rho2, 0.0, kappa);
  INFO("kappa ", kappa, ": excess ", excess, " against the predicted ", predicted);
  CHECK(kappa == doctest::Approx(6 * c * c).epsilon(1e-3));
  CHECK(excess > 10 * predicted);
}

TEST_CASE("Theorem 4.3 on samples: level_information recovers rho^2 and the residual's kurtosis") {
  std::mt19937_64 rng(31);
  const int64_t n = 200000;
  std::vector<double> s(static_cast<size_t>(n)), z = gaussian(n, rng);
  std::normal_distribution<double> g;
  std::bernoulli_distribution coin(0.5);
  const double d = std::sqrt(0.6 / 3);  // e: unit-variance scale mixture, excess kurtosis 0.6
  for (int64_t i = 0; i < n; ++i) s[i] = 2.0 * z[i] + 3.0 + g(rng) * std::sqrt(coin(rng) ? 1 - d : 1 + d);
  const LevelInformation li = level_information(s, z);
  CHECK(li.rho2 == doctest::Approx(0.8).epsilon(0.01));
  CHECK(li.kurt_e == doctest::Approx(0.6).epsilon(0.15));
  CHECK(li.kurt_s == doctest::Approx(0.6 * 0.04).epsilon(0.6));
  CHECK(li.gaussian == doctest::Approx(gaussian_information(li.rho2)));
  CHECK(li.total == doctest::Approx(li.gaussian + li.correction));
}
