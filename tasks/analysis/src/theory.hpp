// Internal: the report sections that check the paper's theory on a trained model
// (docs/analysis.md, "Proposition 3.1" and "Kurtosis at several dimensions").
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "hkt/analysis/report.hpp"
#include "scores.hpp"

namespace hkt::analysis {

// A number for report.json: NaN and infinities as null.
inline nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// The mean of the finite values of v (NaN when there is none).
inline double mean_of(const std::vector<double>& v) {
  double s = 0;
  int64_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) s += x, ++n;
  return n > 0 ? s / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

// The eigenvalue range of one per-head symmetrised form Ms_{l,h}.
struct FormRange {
  int64_t layer = 0, head = 0, level = 0;
  double min = 0, max = 0;
};

// Relative tolerance below which a smallest eigenvalue of the symmetrised combined scores counts as
// rounding: 1e-10 for float64 models, 1e-4 for float32 ones (the scores carry a relative rounding of
// about D eps, up to 128 x 6e-8 ~ 1e-5 at D = 128).
double psd_tolerance(DType dtype);

// psd.csv and report.json's "psd": per layer and head, each level's Ms_{l,h} range (Proposition 3.1's
// condition) and the symmetrised combined scores' range on the sample.
nlohmann::json psd_section(const std::vector<FormRange>& forms, const ScoreStats& st, DType dtype, Report& r);

// kurtosis_dims.csv, kurtosis_entries.csv and report.json's "kurtosis_dims": Mardia's normalised
// kurtosis at every requested window and the full row, and the per-entry kurtosis. Frees the rows.
nlohmann::json kurtosis_dims_section(ScoreStats& st, const AnalysisOptions& opt, Report& r);

}  // namespace hkt::analysis
