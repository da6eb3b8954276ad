// Float64 statistics for the analysis tools (docs/analysis.md): symmetric
// eigenvalues through LAPACK (dsyevd, from OpenBLAS), Mardia's multivariate
// kurtosis, univariate excess kurtosis, the symmetric / antisymmetric split of
// a bilinear form, and histograms. Matrices are row-major std::vector<double>.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hkt::analysis {

// Eigen-decomposition of a symmetric n x n matrix (only the lower triangle of
// the row-major `a` is read). values ascending; vectors (when asked) row-major
// n x n with eigenvector k in column k. Throws hkt::Error when LAPACK fails.
struct SymEig {
  std::vector<double> values;
  std::vector<double> vectors;
};
SymEig sym_eig(const std::vector<double>& a, int64_t n, bool want_vectors = false);

// Singular values of an m x n row-major matrix, descending (LAPACK dgesdd, from OpenBLAS). Throws
// hkt::Error when LAPACK fails or an entry is not finite.
std::vector<double> singular_values(const std::vector<double>& a, int64_t m, int64_t n);

// The numerical rank of a spectrum of singular values (descending): how many exceed rel_tol * the largest.
int64_t numerical_rank(const std::vector<double>& sv, double rel_tol);

// Signs of a spectrum: |v| <= rel_tol * max|v| counts as zero.
struct SignCount {
  int64_t negative = 0, zero = 0, positive = 0;
  double frac_negative = 0;          // negative / (negative + positive); 0 when all are zero
  double frac_negative_all = 0;      // negative / n
  double min = 0, max = 0;
};
SignCount sign_count(const std::vector<double>& values, double rel_tol = 1e-9);

// Mardia's multivariate kurtosis of the n rows of x (n x p, row-major):
//   b2 = (1/n) sum_i ((x_i - mean)^T S^+ (x_i - mean))^2,  S = (1/n) sum_i (x_i - mean)(x_i - mean)^T,
// S^+ the pseudo-inverse on the eigen-basis: eigenvalues <= rel_tol * (largest) are dropped, and
// the rank r of S is the effective dimension (r = p when S has full rank). Gaussian reference
// r (r + 2); kappa = b2 / (r (r + 2)) (1 for a Gaussian); z = (b2 - r(r+2)) / sqrt(8 r (r+2) / n),
// asymptotically N(0, 1) for Gaussian data. Needs n > p; otherwise `ok` is false and `note` says why.
struct Mardia {
  bool ok = false;
  std::string note;
  int64_t n = 0, p = 0, rank = 0;
  double b2 = 0, reference = 0, kappa = 0, z = 0;
};
Mardia mardia_kurtosis(const std::vector<double>& x, int64_t n, int64_t p, double rel_tol = 1e-10);

// Streaming univariate moments (shifted by the first value for accuracy).
class Moments {
 public:
  void add(double v);
  int64_t count() const { return n_; }
  double mean() const;
  double variance() const;         // population (1/n)
  double excess_kurtosis() const;  // m4 / m2^2 - 3 (0 for a Gaussian); NaN when the variance is 0
 private:
  int64_t n_ = 0;
  double shift_ = 0, s1_ = 0, s2_ = 0, s3_ = 0, s4_ = 0;
};
double excess_kurtosis(const std::vector<double>& v);

// M = Ms + Ma with Ms = (M + M^T)/2 (reciprocal) and Ma = (M - M^T)/2 (directional), n x n.
struct BilinearSplit {
  std::vector<double> sym, anti;
  double norm_m = 0, norm_sym = 0, norm_anti = 0;  // Frobenius norms
  double directional_share = 0;                    // ||Ma||_F / ||M||_F (0 when M = 0)
};
BilinearSplit split_bilinear(const std::vector<double>& m, int64_t n);

// C = A B^T for A (n x k) and B (m x k), row-major, in float64.
std::vector<double> mul_abt(const std::vector<double>& a, const std::vector<double>& b, int64_t n, int64_t m,
                            int64_t k);

// A least-squares line log(err) = intercept + slope * L through the points (L_i, err_i) (err_i > 0), with
// the 95% interval of the slope (Student's t with n - 2 degrees of freedom, from Boost.Math): a geometric
// decay err ~ C r^L has slope log r. `factor` = exp(slope) is the fitted residual factor per level, and
// factor_lo / factor_hi its interval. The interval needs n >= 3 points with at least 2 distinct L;
// with fewer, `ok` is false and `note` says why (the slope is still set when n = 2 with distinct L).
struct LogLinearFit {
  bool ok = false;
  std::string note;
  int64_t points = 0;
  double slope = 0, intercept = 0, slope_se = 0, slope_lo = 0, slope_hi = 0, t975 = 0, r2 = 0;
  double factor = 0, factor_lo = 0, factor_hi = 0;
};
LogLinearFit log_linear_fit(const std::vector<double>& L, const std::vector<double>& err);

// Histogram of `values` over [lo, hi] in `bins` equal bins (values outside are clamped to the
// end bins). centers[i] is the middle of bin i.
struct Histogram {
  std::vector<double> centers;
  std::vector<int64_t> counts;
};
Histogram histogram(const std::vector<double>& values, double lo, double hi, int64_t bins);

}  // namespace hkt::analysis
