// Proposition 4.5 as stated: the best fit of the L-level HKT score structure to one fixed target
// score matrix, and how its residual falls with L (docs/analysis.md, "Proposition 4.5").
//
// The L-level structure on n positions is F = c 1^T + sum_{l < L} Up_l(G_l): per level l a matrix G_l
// over the n_l = ceil(n / 2^l) blocks of 2^l positions (the last block partial), of rank <= r (an HKT
// head's G_l = lambda_l Q_l K_l^T / sqrt(dh), rank <= dh), upsampled block-constant,
// Up_l(G)[i, j] = G[i >> l, j >> l]; and, when `row_offsets` is set, one constant per query row c_i
// (softmax ignores it, so a trained model's scores are compared up to it). The fit minimises
// ||S - F||_F by block coordinate descent: each level's update is exact (the rank-r truncated SVD of
// the block means of the residual, weighted by the block sizes: Eckart-Young with a rank-one weight),
// so the residual never rises; the fit with L + 1 levels starts from the one with L, so the residual
// never rises with L either. A second start (all levels at once, coarsest first) guards against a
// poor local optimum; the better of the two is kept.
//
//   std::vector<LevelFit> fits = fit_levels(S, n, {.max_levels = 5, .rank = 4});
//   LogLinearFit f = level_fit_rate(fits);   // log(residual) = a + b L: factor exp(b) per level
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/analysis/stats.hpp"

namespace hkt::analysis {

struct LevelFitOptions {
  int64_t max_levels = 5;     // fits L = 1 .. max_levels
  int64_t rank = 4;           // r: the rank of each level's map (<= the level's block count)
  bool row_offsets = false;   // a free constant per row (softmax invariance)
  int64_t max_sweeps = 200;   // coordinate-descent sweeps over the levels per fit
  double tol = 1e-12;         // stop when a sweep lowers the squared residual by less than tol (relative)
};

struct LevelFit {
  int64_t levels = 0;
  double residual = 0;      // ||S - F||_F
  double rel_residual = 0;  // residual / ||S||_F (row-centred S when row_offsets)
  int64_t sweeps = 0;       // sweeps of the kept start
  std::vector<std::vector<double>> maps;  // G_l (n_l x n_l, row-major), l = 0 .. levels - 1
  std::vector<double> offsets;            // c (n; zeros without row_offsets)
};

// The block-constant upsampling of an n_l x n_l map to n x n at level l.
std::vector<double> upsample_level(const std::vector<double>& g, int64_t n, int64_t level);

// The best fits for L = 1 .. opt.max_levels of the n x n row-major target S (finite entries).
std::vector<LevelFit> fit_levels(const std::vector<double>& S, int64_t n, const LevelFitOptions& opt);

// log(rel_residual) = a + b L over the fits whose relative residual is above `floor` (a residual at
// rounding level carries no rate); the factor per level is exp(b).
LogLinearFit level_fit_rate(const std::vector<LevelFit>& fits, double floor = 1e-9);

// The rank-r truncated SVD of an m x n row-major matrix: the best rank-r approximation (Eckart-Young),
// m x n row-major (LAPACK dgesdd). r >= min(m, n) returns the matrix itself.
std::vector<double> low_rank(const std::vector<double>& a, int64_t m, int64_t n, int64_t r);

}  // namespace hkt::analysis
