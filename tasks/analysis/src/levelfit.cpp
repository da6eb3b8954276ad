// The best L-level fit of a fixed target score matrix (see levelfit.hpp).
#include "hkt/analysis/levelfit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hkt/core/error.hpp"

// LAPACK's divide-and-conquer SVD, exported by OpenBLAS (jobz = 'S': the leading min(m, n) vectors).
extern "C" void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
                        const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork,
                        int* info, size_t jobz_len);

namespace hkt::analysis {

std::vector<double> low_rank(const std::vector<double>& a, int64_t m, int64_t n, int64_t r) {
  HKT_CHECK(m >= 1 && n >= 1 && m <= 1 << 20 && n <= 1 << 20, "low_rank: size ", m, " x ", n, " out of range");
  HKT_CHECK(static_cast<int64_t>(a.size()) == m * n, "low_rank: expected ", m * n, " values, got ", a.size());
  HKT_CHECK(r >= 0, "low_rank: rank ", r, " < 0");
  const int64_t k = std::min(m, n);
  if (r >= k) return a;
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  if (r == 0) return out;
  // Row-major m x n is column-major n x m (A^T): its SVD U S V^T gives A^T's best rank-r part, whose
  // column-major layout is A's row-major one.
  std::vector<double> t = a, s(static_cast<size_t>(k)), u(static_cast<size_t>(n * k)), vt(static_cast<size_t>(k * m));
  std::vector<int> iwork(static_cast<size_t>(8 * k));
  const int rows = static_cast<int>(n), cols = static_cast<int>(m), ki = static_cast<int>(k);
  const char jobz = 'S';
  int info = 0, lwork = -1;
  double work_q = 0;
  dgesdd_(&jobz, &rows, &cols, t.data(), &rows, s.data(), u.data(), &rows, vt.data(), &ki, &work_q, &lwork,
          iwork.data(), &info, 1);
  HKT_CHECK(info == 0, "low_rank: dgesdd workspace query failed (info = ", info, ")");
  lwork = std::max(1, static_cast<int>(work_q));
  std::vector<double> work(static_cast<size_t>(lwork));
  dgesdd_(&jobz, &rows, &cols, t.data(), &rows, s.data(), u.data(), &rows, vt.data(), &ki, work.data(), &lwork,
          iwork.data(), &info, 1);
  HKT_CHECK(info == 0, "low_rank: dgesdd failed on a ", m, " x ", n, " matrix (info = ", info, ")");
  for (int64_t q = 0; q < r; ++q)
    for (int64_t j = 0; j < m; ++j) {
      const double w = s[q] * vt[q + j * k];
      if (w == 0) continue;
      for (int64_t i = 0; i < n; ++i) out[i + j * n] += u[i + q * n] * w;
    }
  return out;
}

namespace {

int64_t blocks(int64_t n, int64_t level) { return (n + (int64_t{1} << level) - 1) >> level; }

// The number of positions in block a of level l (the last one partial).
double block_size(int64_t n, int64_t level, int64_t a) {
  const int64_t w = int64_t{1} << level;
  return static_cast<double>(std::min(w, n - a * w));
}

double sq_norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

// One fit in progress: the maps, the offsets and their sum F.
struct Fit {
  int64_t n;
  std::vector<std::vector<double>> maps;
  std::vector<double> offsets, F;
};

// Adds sign * Up_l(g) to F.
void add_level(std::vector<double>& F, const std::vector<double>& g, int64_t n, int64_t level, double sign) {
  const int64_t nl = blocks(n, level);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) F[i * n + j] += sign * g[(i >> level) * nl + (j >> level)];
}

// The exact update of level l: with the others fixed, the best rank-r block-constant part of the residual.
void update_level(Fit& f, const std::vector<double>& S, int64_t level, int64_t rank) {
  const int64_t n = f.n, nl = blocks(n, level);
  std::vector<double>& g = f.maps[static_cast<size_t>(level)];
  add_level(f.F, g, n, level, -1.0);
  std::vector<double> b(static_cast<size_t>(nl * nl), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) b[(i >> level) * nl + (j >> level)] += S[i * n + j] - f.F[i * n + j];
  // Block sums / sqrt(size_a size_b) = sqrt(size_a size_b) * block mean: minimising
  // sum_ab size_a size_b (mean_ab - G_ab)^2 is the unweighted problem on these values.
  std::vector<double> w(static_cast<size_t>(nl));
  for (int64_t a = 0; a < nl; ++a) w[a] = std::sqrt(block_size(n, level, a));
  for (int64_t a = 0; a < nl; ++a)
    for (int64_t c = 0; c < nl; ++c) b[a * nl + c] /= w[a] * w[c];
  g = low_rank(b, nl, nl, rank);
  for (int64_t a = 0; a < nl; ++a)
    for (int64_t c = 0; c < nl; ++c) g[a * nl + c] /= w[a] * w[c];
  add_level(f.F, g, n, level, 1.0);
}

void update_offsets(Fit& f, const std::vector<double>& S) {
  const int64_t n = f.n;
  for (int64_t i = 0; i < n; ++i) {
    double m = 0;
    for (int64_t j = 0; j < n; ++j) m += S[i * n + j] - (f.F[i * n + j] - f.offsets[i]);
    m /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) f.F[i * n + j] += m - f.offsets[i];
    f.offsets[i] = m;
  }
}

double residual_sq(const Fit& f, const std::vector<double>& S) {
  double s = 0;
  for (size_t k = 0; k < S.size(); ++k) s += (S[k] - f.F[k]) * (S[k] - f.F[k]);
  return s;
}

// Coordinate descent from `f` over `order` (and the offsets) until a sweep gains less than tol.
int64_t descend(Fit& f, const std::vector<double>& S, const std::vector<int64_t>& order, const LevelFitOptions& opt,
                double scale_sq) {
  double prev = residual_sq(f, S);
  int64_t sweeps = 0;
  while (sweeps < opt.max_sweeps) {
    ++sweeps;
    if (opt.row_offsets) update_offsets(f, S);
    for (int64_t l : order) update_level(f, S, l, opt.rank);
    const double now = residual_sq(f, S);
    if (now <= 1e-28 * scale_sq || prev - now <= opt.tol * prev) break;
    prev = now;
  }
  return sweeps;
}

Fit empty_fit(int64_t n, int64_t levels) {
  Fit f{n, {}, std::vector<double>(static_cast<size_t>(n), 0.0), std::vector<double>(static_cast<size_t>(n * n), 0.0)};
  for (int64_t l = 0; l < levels; ++l) f.maps.emplace_back(static_cast<size_t>(blocks(n, l) * blocks(n, l)), 0.0);
  return f;
}

}  // namespace

std::vector<double> upsample_level(const std::vector<double>& g, int64_t n, int64_t level) {
  HKT_CHECK(static_cast<int64_t>(g.size()) == blocks(n, level) * blocks(n, level), "upsample_level: level ", level,
            " of n = ", n, " needs a ", blocks(n, level), " x ", blocks(n, level), " map, got ", g.size(), " values");
  std::vector<double> F(static_cast<size_t>(n * n), 0.0);
  add_level(F, g, n, level, 1.0);
  return F;
}

std::vector<LevelFit> fit_levels(const std::vector<double>& S, int64_t n, const LevelFitOptions& opt) {
  HKT_CHECK(n >= 1 && n <= 1 << 14, "fit_levels: size n = ", n, " out of range [1, 16384]");
  HKT_CHECK(static_cast<int64_t>(S.size()) == n * n, "fit_levels: expected ", n * n, " values (", n, " x ", n,
            "), got ", S.size());
  HKT_CHECK(opt.max_levels >= 1 && opt.max_levels <= 20, "fit_levels: max_levels = ", opt.max_levels,
            " out of range [1, 20]");
  HKT_CHECK(opt.rank >= 1, "fit_levels: rank = ", opt.rank, " < 1");
  HKT_CHECK(opt.max_sweeps >= 1, "fit_levels: max_sweeps = ", opt.max_sweeps, " < 1");
  for (double v : S) HKT_CHECK(std::isfinite(v), "fit_levels: the target has a non-finite entry (", v, ")");
  // The norm the residual is relative to: S, or S with each row's mean removed (the offsets' best fit).
  std::vector<double> base = S;
  if (opt.row_offsets)
    for (int64_t i = 0; i < n; ++i) {
      double m = 0;
      for (int64_t j = 0; j < n; ++j) m += S[i * n + j];
      m /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j) base[i * n + j] -= m;
    }
  const double scale_sq = sq_norm(base);
  std::vector<LevelFit> out;
  Fit warm = empty_fit(n, 0);
  for (int64_t L = 1; L <= opt.max_levels; ++L) {
    // Warm: the L - 1 fit plus a new, coarser level (updated first). Cold: every level from zero,
    // coarsest first.
    warm.maps.emplace_back(static_cast<size_t>(blocks(n, L - 1) * blocks(n, L - 1)), 0.0);
    std::vector<int64_t> warm_order{L - 1}, cold_order;
    for (int64_t l = 0; l + 1 < L; ++l) warm_order.push_back(l);
    for (int64_t l = L - 1; l >= 0; --l) cold_order.push_back(l);
    const int64_t warm_sweeps = descend(warm, S, warm_order, opt, scale_sq);
    Fit cold = empty_fit(n, L);
    const int64_t cold_sweeps = descend(cold, S, cold_order, opt, scale_sq);
    const double rw = residual_sq(warm, S), rc = residual_sq(cold, S);
    if (rc < rw) warm = cold;
    LevelFit r;
    r.levels = L;
    r.residual = std::sqrt(std::min(rw, rc));
    r.rel_residual = scale_sq > 0 ? r.residual / std::sqrt(scale_sq) : 0.0;
    r.sweeps = rc < rw ? cold_sweeps : warm_sweeps;
    r.maps = warm.maps;
    r.offsets = warm.offsets;
    out.push_back(std::move(r));
  }
  return out;
}

LogLinearFit level_fit_rate(const std::vector<LevelFit>& fits, double floor) {
  std::vector<double> L, e;
  for (const LevelFit& f : fits)
    if (f.rel_residual > floor) L.push_back(static_cast<double>(f.levels)), e.push_back(f.rel_residual);
  return log_linear_fit(L, e);
}

}  // namespace hkt::analysis
