// Float64 statistics of the analysis tools (see stats.hpp).
#include "hkt/analysis/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/math/distributions/students_t.hpp>

#include "hkt/core/error.hpp"

// LAPACK's symmetric divide-and-conquer eigensolver; OpenBLAS exports it.
// The trailing arguments are the hidden lengths of the two character arguments.
extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len,
                        size_t uplo_len);

// LAPACK's divide-and-conquer SVD (dgesdd), exported by OpenBLAS; jobz = 'N': values only.
extern "C" void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
                        const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork,
                        int* info, size_t jobz_len);

namespace hkt::analysis {

SymEig sym_eig(const std::vector<double>& a, int64_t n, bool want_vectors) {
  HKT_CHECK(n >= 1 && n <= std::numeric_limits<int>::max() / 2, "sym_eig: size n = ", n, " out of range");
  HKT_CHECK(static_cast<int64_t>(a.size()) == n * n, "sym_eig: expected ", n * n, " values (", n, " x ", n,
            "), got ", a.size());
  for (double v : a) HKT_CHECK(std::isfinite(v), "sym_eig: the matrix has a non-finite entry (", v, ")");
  // Row-major lower triangle = column-major upper triangle.
  std::vector<double> m = a;
  const int ni = static_cast<int>(n);
  const char jobz = want_vectors ? 'V' : 'N', uplo = 'U';
  SymEig r;
  r.values.resize(static_cast<size_t>(n));
  int info = 0, lwork = -1, liwork = -1, iwork_q = 0;
  double work_q = 0;
  dsyevd_(&jobz, &uplo, &ni, m.data(), &ni, r.values.data(), &work_q, &lwork, &iwork_q, &liwork, &info, 1, 1);
  HKT_CHECK(info == 0, "sym_eig: dsyevd workspace query failed (info = ", info, ")");
  lwork = static_cast<int>(work_q);
  liwork = std::max(1, iwork_q);
  std::vector<double> work(static_cast<size_t>(std::max(1, lwork)));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  dsyevd_(&jobz, &uplo, &ni, m.data(), &ni, r.values.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1,
          1);
  HKT_CHECK(info == 0, "sym_eig: dsyevd failed on a ", n, " x ", n, " matrix (info = ", info, ")");
  if (want_vectors) {
    r.vectors.resize(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < n; ++k) r.vectors[i * n + k] = m[k * n + i];  // column-major -> row-major
  }
  return r;
}

std::vector<double> singular_values(const std::vector<double>& a, int64_t m, int64_t n) {
  HKT_CHECK(m >= 1 && n >= 1 && m <= std::numeric_limits<int>::max() / 8 && n <= std::numeric_limits<int>::max() / 8,
            "singular_values: size ", m, " x ", n, " out of range");
  HKT_CHECK(static_cast<int64_t>(a.size()) == m * n, "singular_values: expected ", m * n, " values (", m, " x ", n,
            "), got ", a.size());
  for (double v : a) HKT_CHECK(std::isfinite(v), "singular_values: the matrix has a non-finite entry (", v, ")");
  // A row-major m x n matrix is the column-major n x m matrix A^T: the same singular values.
  std::vector<double> t = a;
  const int rows = static_cast<int>(n), cols = static_cast<int>(m), one = 1;
  const char jobz = 'N';
  std::vector<double> s(static_cast<size_t>(std::min(m, n)));
  std::vector<int> iwork(static_cast<size_t>(8 * std::min(m, n)));
  int info = 0, lwork = -1;
  double work_q = 0, dummy = 0;
  dgesdd_(&jobz, &rows, &cols, t.data(), &rows, s.data(), &dummy, &one, &dummy, &one, &work_q, &lwork, iwork.data(),
          &info, 1);
  HKT_CHECK(info == 0, "singular_values: dgesdd workspace query failed (info = ", info, ")");
  lwork = std::max(1, static_cast<int>(work_q));
  std::vector<double> work(static_cast<size_t>(lwork));
  dgesdd_(&jobz, &rows, &cols, t.data(), &rows, s.data(), &dummy, &one, &dummy, &one, work.data(), &lwork,
          iwork.data(), &info, 1);
  HKT_CHECK(info == 0, "singular_values: dgesdd failed on a ", m, " x ", n, " matrix (info = ", info, ")");
  return s;
}

int64_t numerical_rank(const std::vector<double>& sv, double rel_tol) {
  if (sv.empty()) return 0;
  const double top = *std::max_element(sv.begin(), sv.end());
  int64_t r = 0;
  for (double v : sv) r += v > rel_tol * top;
  return r;
}

SignCount sign_count(const std::vector<double>& values, double rel_tol) {
  SignCount c;
  if (values.empty()) return c;
  double scale = 0;
  for (double v : values) scale = std::max(scale, std::abs(v));
  const double tol = rel_tol * scale;
  c.min = *std::min_element(values.begin(), values.end());
  c.max = *std::max_element(values.begin(), values.end());
  for (double v : values) {
    if (std::abs(v) <= tol) ++c.zero;
    else if (v < 0) ++c.negative;
    else ++c.positive;
  }
  const int64_t nz = c.negative + c.positive;
  c.frac_negative = nz > 0 ? static_cast<double>(c.negative) / static_cast<double>(nz) : 0.0;
  c.frac_negative_all = static_cast<double>(c.negative) / static_cast<double>(values.size());
  return c;
}

Mardia mardia_kurtosis(const std::vector<double>& x, int64_t n, int64_t p, double rel_tol) {
  HKT_CHECK(p >= 1 && n >= 0, "mardia_kurtosis: need p >= 1 and n >= 0, got n = ", n, ", p = ", p);
  HKT_CHECK(static_cast<int64_t>(x.size()) == n * p, "mardia_kurtosis: expected n * p = ", n * p, " values, got ",
            x.size());
  Mardia r;
  r.n = n;
  r.p = p;
  if (n <= p) {
    r.note = "needs more vectors than dimensions (n = " + std::to_string(n) + ", p = " + std::to_string(p) + ")";
    return r;
  }
  std::vector<double> mean(static_cast<size_t>(p), 0.0), c(static_cast<size_t>(n * p));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < p; ++k) mean[k] += x[i * p + k];
  for (double& m : mean) m /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < p; ++k) c[i * p + k] = x[i * p + k] - mean[k];
  // S = (1/n) C^T C
  std::vector<double> s(static_cast<size_t>(p * p), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < p; ++a) {
      const double ca = c[i * p + a];
      for (int64_t b = 0; b <= a; ++b) s[a * p + b] += ca * c[i * p + b];
    }
  for (int64_t a = 0; a < p; ++a)
    for (int64_t b = 0; b <= a; ++b) s[b * p + a] = s[a * p + b] /= static_cast<double>(n);
  const SymEig e = sym_eig(s, p, true);
  const double top = e.values.back();
  if (!(top > 0)) {
    r.note = "the vectors are constant (zero covariance)";
    return r;
  }
  std::vector<int64_t> keep;
  for (int64_t k = 0; k < p; ++k)
    if (e.values[k] > rel_tol * top) keep.push_back(k);
  r.rank = static_cast<int64_t>(keep.size());
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = 0;  // squared Mahalanobis distance on the kept eigen-directions
    for (int64_t k : keep) {
      double y = 0;
      for (int64_t a = 0; a < p; ++a) y += c[i * p + a] * e.vectors[a * p + k];
      d += y * y / e.values[k];
    }
    sum += d * d;
  }
  const double rr = static_cast<double>(r.rank);
  r.b2 = sum / static_cast<double>(n);
  r.reference = rr * (rr + 2.0);
  r.kappa = r.b2 / r.reference;
  r.z = (r.b2 - r.reference) / std::sqrt(8.0 * r.reference / static_cast<double>(n));
  r.ok = true;
  if (r.rank < p)
    r.note = "covariance rank " + std::to_string(r.rank) + " < p = " + std::to_string(p) +
             ": pseudo-inverse, reference r (r + 2) with r = rank";
  return r;
}

void Moments::add(double v) {
  if (n_ == 0) shift_ = v;
  const double d = v - shift_, d2 = d * d;
  ++n_;
  s1_ += d;
  s2_ += d2;
  s3_ += d2 * d;
  s4_ += d2 * d2;
}

double Moments::mean() const { return n_ > 0 ? shift_ + s1_ / static_cast<double>(n_) : 0.0; }

double Moments::variance() const {
  if (n_ == 0) return 0.0;
  const double m = s1_ / static_cast<double>(n_);
  return std::max(0.0, s2_ / static_cast<double>(n_) - m * m);
}

double Moments::excess_kurtosis() const {
  if (n_ == 0) return std::numeric_limits<double>::quiet_NaN();
  const double N = static_cast<double>(n_);
  const double m = s1_ / N, e2 = s2_ / N, e3 = s3_ / N, e4 = s4_ / N;
  const double m2 = e2 - m * m;
  const double m4 = e4 - 4 * m * e3 + 6 * m * m * e2 - 3 * m * m * m * m;
  if (!(m2 > 0)) return std::numeric_limits<double>::quiet_NaN();
  return m4 / (m2 * m2) - 3.0;
}

double excess_kurtosis(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.add(x);
  return m.excess_kurtosis();
}

BilinearSplit split_bilinear(const std::vector<double>& m, int64_t n) {
  HKT_CHECK(n >= 1 && static_cast<int64_t>(m.size()) == n * n, "split_bilinear: expected ", n, " x ", n,
            " values, got ", m.size());
  BilinearSplit r;
  r.sym.resize(m.size());
  r.anti.resize(m.size());
  double nm = 0, ns = 0, na = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double a = m[i * n + j], b = m[j * n + i];
      r.sym[i * n + j] = 0.5 * (a + b);
      r.anti[i * n + j] = 0.5 * (a - b);
      nm += a * a;
      ns += r.sym[i * n + j] * r.sym[i * n + j];
      na += r.anti[i * n + j] * r.anti[i * n + j];
    }
  r.norm_m = std::sqrt(nm);
  r.norm_sym = std::sqrt(ns);
  r.norm_anti = std::sqrt(na);
  r.directional_share = r.norm_m > 0 ? r.norm_anti / r.norm_m : 0.0;
  return r;
}

std::vector<double> mul_abt(const std::vector<double>& a, const std::vector<double>& b, int64_t n, int64_t m,
                            int64_t k) {
  HKT_CHECK(static_cast<int64_t>(a.size()) == n * k && static_cast<int64_t>(b.size()) == m * k,
            "mul_abt: sizes do not match n = ", n, ", m = ", m, ", k = ", k);
  std::vector<double> c(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += a[i * k + t] * b[j * k + t];
      c[i * m + j] = s;
    }
  return c;
}

LogLinearFit log_linear_fit(const std::vector<double>& L, const std::vector<double>& err) {
  HKT_CHECK(L.size() == err.size(), "log_linear_fit: ", L.size(), " levels but ", err.size(), " errors");
  LogLinearFit f;
  const int64_t n = static_cast<int64_t>(L.size());
  f.points = n;
  for (int64_t i = 0; i < n; ++i)
    HKT_CHECK(err[i] > 0 && std::isfinite(err[i]) && std::isfinite(L[i]), "log_linear_fit: point ", i, " (L = ",
              L[i], ", err = ", err[i], ") needs a finite L and a positive, finite error");
  double mx = 0, my = 0;
  for (int64_t i = 0; i < n; ++i) mx += L[i], my += std::log(err[i]);
  if (n > 0) mx /= static_cast<double>(n), my /= static_cast<double>(n);
  double sxx = 0, sxy = 0, syy = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double dx = L[i] - mx, dy = std::log(err[i]) - my;
    sxx += dx * dx, sxy += dx * dy, syy += dy * dy;
  }
  if (n < 2 || !(sxx > 0)) {
    f.note = "needs at least 2 distinct L (got " + std::to_string(n) + " points)";
    return f;
  }
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  f.factor = std::exp(f.slope);
  const double rss = std::max(0.0, syy - f.slope * sxy);
  f.r2 = syy > 0 ? 1.0 - rss / syy : 1.0;
  if (n < 3) {
    f.note = "2 points: the slope has no interval (needs 3 or more)";
    return f;
  }
  const double df = static_cast<double>(n - 2);
  f.slope_se = std::sqrt(rss / df / sxx);
  f.t975 = boost::math::quantile(boost::math::students_t(df), 0.975);
  f.slope_lo = f.slope - f.t975 * f.slope_se;
  f.slope_hi = f.slope + f.t975 * f.slope_se;
  f.factor_lo = std::exp(f.slope_lo);
  f.factor_hi = std::exp(f.slope_hi);
  f.ok = true;
  return f;
}

Histogram histogram(const std::vector<double>& values, double lo, double hi, int64_t bins) {
  HKT_CHECK(bins >= 1, "histogram: bins must be >= 1, got ", bins);
  if (!(hi > lo)) hi = lo + 1.0;
  Histogram h;
  const double w = (hi - lo) / static_cast<double>(bins);
  for (int64_t i = 0; i < bins; ++i) h.centers.push_back(lo + (static_cast<double>(i) + 0.5) * w);
  h.counts.assign(static_cast<size_t>(bins), 0);
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    const int64_t i = std::clamp<int64_t>(static_cast<int64_t>(std::floor((v - lo) / w)), 0, bins - 1);
    ++h.counts[i];
  }
  return h;
}

}  // namespace hkt::analysis
