// Theorem 4.3 as this project reads it (docs/analysis.md, "Theorem 4.3"): the error of a level's
// score predictor in three parts, and the information a coarser level carries about the fine scores
// with its explicit non-Gaussian (kurtosis) correction.
//
// (a) Three parts. A fine score s is predicted linearly from features; the best linear predictor from
// all features z (p of them) leaves the hierarchical error E_hier = mean (s - s_z)^2 = var(s)(1 - rho^2);
// the features a coarser level actually has, z_q (q of them, linear functions of z: block means after
// downsampling), lose E_quant = mean (s_z - s_q)^2 = var(s)(rho^2 - rho_q^2); the weights w actually used
// on z_q lose E_opt = mean (s_q - z_q w)^2. When span(z_q) lies in span(z) (with the constant),
// E_total = mean (s - z_q w)^2 = E_hier + E_quant + E_opt exactly (nested least-squares projections);
// `cross` = E_total - (sum) is what is left when it does not.
//
// (b) Information. For s = a z + e with e independent of z and z Gaussian,
// I(s; z) = -1/2 log(1 - rho^2) + J(e) - J(s), J the negentropy. With the cumulant (Gram-Charlier)
// approximation J = skew^2 / 12 + kurt^2 / 48 (kurt: excess kurtosis) and the dilution of e's cumulants
// in s (skew_s = skew_e (1 - rho^2)^{3/2}, kurt_s = kurt_e (1 - rho^2)^2), the correction is
//   skew_e^2 (1 - (1 - rho^2)^3) / 12 + kurt_e^2 (1 - (1 - rho^2)^4) / 48,
// quadratic in the residual's kurtosis and growing with rho^2.
#pragma once
#include <cstdint>
#include <vector>

namespace hkt::analysis {

struct ErrorDecomposition {
  int64_t n = 0;
  double var_s = 0, rho2 = 0, rho2_q = 0;  // rho^2 of the best predictor from z and from z_q
  double total = 0, hier = 0, quant = 0, opt = 0, cross = 0;
};

// s: n values; z: n x p and zq: n x q row-major features; w: q weights plus an intercept (q + 1 values,
// intercept last) of the predictor actually used. Least squares through the normal equations in float64
// (every fit has a constant term).
ErrorDecomposition decompose_error(const std::vector<double>& s, const std::vector<double>& z, int64_t p,
                                   const std::vector<double>& zq, int64_t q, const std::vector<double>& w);

// The weights (q + 1, intercept last) of the least-squares predictor of s from the n x q features x.
std::vector<double> least_squares(const std::vector<double>& s, const std::vector<double>& x, int64_t q);

// -1/2 log(1 - rho^2), nats (the information of a linear-Gaussian channel).
double gaussian_information(double rho2);
// skew^2 / 12 + kurt^2 / 48: the cumulant approximation of the negentropy (kurt: excess kurtosis).
double negentropy_cumulants(double skew, double kurt);
// J(e) - J(s) under that approximation for s = a z + e, e independent of a Gaussian z.
double information_correction(double rho2, double skew_e, double kurt_e);

// Per level: s the fine scores, z the level's upsampled scores at the same (query, key) pairs.
struct LevelInformation {
  int64_t n = 0;
  double rho2 = 0;                  // squared correlation of s and z
  double skew_e = 0, kurt_e = 0;    // of the residual of the least-squares line s ~ z
  double kurt_s = 0;                // excess kurtosis of s
  double gaussian = 0, correction = 0, total = 0;  // nats
};
LevelInformation level_information(const std::vector<double>& s, const std::vector<double>& z);

}  // namespace hkt::analysis
