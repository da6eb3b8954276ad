// The report sections that check the theory (see theory.hpp and docs/analysis.md).
#include "theory.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "hkt/analysis/stats.hpp"

namespace hkt::analysis {
namespace {

using json = nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kFormTol = 1e-9;  // as the bilinear spectra: |v| <= 1e-9 max|v| is zero

}  // namespace

double psd_tolerance(DType dtype) { return dtype == DType::Float64 ? 1e-10 : 1e-4; }

json psd_section(const std::vector<FormRange>& forms, const ScoreStats& st, DType dtype, Report& r) {
  const int64_t NL = st.layers, H = st.heads;
  const int64_t n_eig = NL * H > 0 ? static_cast<int64_t>(st.combined.size()) / (NL * H) : 0;
  const double tol = psd_tolerance(dtype);
  Table& t = r.tables["psd.csv"];
  t.columns = {"layer", "head", "level", "samples", "min", "max", "min_relative", "psd"};
  json pairs = json::array();
  int64_t holds = 0, observed = 0, inconsistent = 0;
  for (int64_t i = 0; i < NL; ++i)
    for (int64_t h = 0; h < H; ++h) {
      json levels = json::array();
      bool condition = true;
      for (const FormRange& f : forms) {
        if (f.layer != i || f.head != h) continue;
        const double scale = std::max(std::abs(f.min), std::abs(f.max));
        const bool psd = f.min >= -kFormTol * scale;
        condition = condition && psd;
        const double rel = scale > 0 ? f.min / scale : 0.0;
        levels.push_back({{"level", f.level}, {"min", f.min}, {"max", f.max}, {"min_relative", rel}, {"psd", psd}});
        t.rows.push_back({double(i), double(h), double(f.level), 0.0, f.min, f.max, rel, double(psd)});
      }
      // The symmetrised combined scores of the sample: the most negative eigenvalue relative to its
      // matrix's largest magnitude.
      double mn = std::numeric_limits<double>::infinity(), mx = -mn, worst = mn;
      for (int64_t k = 0; k < n_eig; ++k) {
        const std::vector<double>& v = st.combined[static_cast<size_t>((i * H + h) * n_eig + k)].values;
        if (v.empty()) continue;
        const double lo = v.front(), hi = v.back();  // ascending
        const double scale = std::max(std::abs(lo), std::abs(hi));
        mn = std::min(mn, lo);
        mx = std::max(mx, hi);
        worst = std::min(worst, scale > 0 ? lo / scale : 0.0);
      }
      json combined = nullptr;
      bool psd = false;
      if (n_eig > 0) {
        psd = worst >= -tol;
        combined = {{"samples", n_eig}, {"min", mn}, {"max", mx}, {"min_relative", worst}, {"psd", psd}};
        t.rows.push_back({double(i), double(h), -1.0, double(n_eig), mn, mx, worst, double(psd)});
      }
      holds += condition;
      observed += n_eig > 0 && psd;
      const bool bad = condition && n_eig > 0 && !psd;  // the proposition says this cannot happen
      inconsistent += bad;
      pairs.push_back({{"layer", i}, {"head", h}, {"levels", levels}, {"condition_3_1", condition},
                       {"combined", combined}, {"consistent_with_3_1", !bad}});
    }
  return {{"what", "Proposition 3.1: if every level's per-head symmetrised form Ms_{l,h} = (M + M^T)/2 is PSD "
                   "(condition_3_1), the symmetrised combined score matrix (S_hier + S_hier^T)/2 is PSD on any "
                   "input. level rows: Ms_{l,h}, PSD when min >= -1e-9 max|v|; combined: the valid len x len "
                   "block of the first eig_samples examples, PSD when every sample's min / max|v| >= -tol"},
          {"tolerance", tol},
          {"tolerance_why", "the scores are computed in the model's dtype: relative rounding about D eps "
                            "(float32: up to ~1e-5 at D = 128, tol 1e-4; float64: tol 1e-10)"},
          {"pairs", NL * H}, {"condition_holds", holds}, {"combined_psd", observed},
          {"inconsistent", inconsistent}, {"heads", pairs}};
}

json kurtosis_dims_section(ScoreStats& st, const AnalysisOptions& opt, Report& r) {
  const int64_t NL = st.layers, H = st.heads, L = st.levels;
  std::vector<int64_t> windows = opt.kurtosis_windows;
  if (opt.full_row) windows.push_back(0);
  Table& t = r.tables["kurtosis_dims.csv"];
  t.columns = {"layer", "head", "level", "window", "p", "examples", "n", "rank", "b2", "gaussian_reference",
               "kappa"};
  Table& te = r.tables["kurtosis_entries.csv"];
  te.columns = {"layer", "head", "level", "entries", "kurtosis", "excess_kurtosis", "kappa_entry"};
  json rows = json::array(), entries = json::array();
  // [level][window] kappa values, [level] entry kurtosis, for the means.
  std::vector<std::vector<std::vector<double>>> kap(static_cast<size_t>(L),
                                                    std::vector<std::vector<double>>(windows.size()));
  std::vector<std::vector<std::vector<double>>> pw(kap);
  std::vector<std::vector<double>> ent(static_cast<size_t>(L)), ex(static_cast<size_t>(L));
  for (int64_t i = 0; i < NL; ++i)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        LevelScores& s = st.at(i, h, l);
        for (size_t w = 0; w < windows.size(); ++w) {
          const int64_t p = s.window_p[w];
          json e = {{"layer", i}, {"head", h}, {"level", l}, {"window", windows[w] > 0 ? json(windows[w]) : json("full")},
                    {"p", p}};
          Mardia m;
          int64_t examples = 0, n = 0;
          if (p > 0) {
            const RowSet& set = s.sets.at(p);
            examples = set.examples;
            n = static_cast<int64_t>(set.rows.size()) / p;
            m = mardia_kurtosis(set.rows, n, p);
          } else {
            m.note = "the full row (p = median len_l) is wider than --full-row-max " + std::to_string(opt.full_row_max);
          }
          const double kappa = m.ok ? m.kappa : kNaN;
          e["examples"] = examples;
          e["n"] = n;
          e["rank"] = m.rank;
          e["b2"] = num(m.ok ? m.b2 : kNaN);
          e["gaussian_reference"] = num(m.ok ? m.reference : kNaN);
          e["kappa"] = num(kappa);
          e["normalisation"] = "kappa = b2 / (r (r + 2)), Mardia's b2 normalised by its Gaussian value (1 = Gaussian)";
          if (!m.note.empty()) e["note"] = m.note;
          rows.push_back(e);
          t.rows.push_back({double(i), double(h), double(l), double(windows[w]), double(p), double(examples),
                            double(n), double(m.rank), m.ok ? m.b2 : kNaN, m.ok ? m.reference : kNaN, kappa});
          kap[l][w].push_back(kappa);
          pw[l][w].push_back(double(p));
        }
        const double exk = s.entries.excess_kurtosis();
        entries.push_back({{"layer", i}, {"head", h}, {"level", l}, {"entries", s.entries.count()},
                           {"kurtosis", num(exk + 3.0)}, {"excess_kurtosis", num(exk)},
                           {"kappa_entry", num((exk + 3.0) / 3.0)}});
        te.rows.push_back({double(i), double(h), double(l), double(s.entries.count()), exk + 3.0, exk,
                           (exk + 3.0) / 3.0});
        ent[l].push_back(exk + 3.0);
        ex[l].push_back(exk);
        s.sets.clear();  // the score vectors are no longer needed
      }
  // kurtosis_levels.csv: the means per level, one column per normalised statistic (what hkt-plot draws).
  Table& tl = r.tables["kurtosis_levels.csv"];
  tl.columns = {"level", "kappa_entry"};
  for (int64_t w : windows) tl.columns.push_back(w > 0 ? "kappa_window_" + std::to_string(w) : "kappa_full_row");
  json by_level = json::array();
  for (int64_t l = 0; l < L; ++l) {
    tl.rows.push_back({double(l), mean_of(ent[l]) / 3.0});
    for (size_t w = 0; w < windows.size(); ++w) tl.rows.back().push_back(mean_of(kap[l][w]));
    json ws = json::array();
    for (size_t w = 0; w < windows.size(); ++w)
      ws.push_back({{"window", windows[w] > 0 ? json(windows[w]) : json("full")}, {"p_mean", num(mean_of(pw[l][w]))},
                    {"kappa_mean", num(mean_of(kap[l][w]))}});
    by_level.push_back({{"level", l}, {"entry_kurtosis_mean", num(mean_of(ent[l]))},
                        {"entry_excess_kurtosis_mean", num(mean_of(ex[l]))}, {"windows", ws}});
  }
  return {{"normalisation",
           {{"kurtosis", "per entry: m4 / m2^2 over every valid S_l[i, j] (plain kurtosis; Gaussian 3)"},
            {"excess_kurtosis", "per entry: m4 / m2^2 - 3 (Gaussian 0)"},
            {"kappa_entry", "per entry: m4 / (3 m2^2) = Mardia's b2 / (r (r + 2)) at r = 1 (Gaussian 1)"},
            {"kappa", "per score row in a key window: Mardia's b2 / (r (r + 2)), r = rank of the covariance "
                      "(= p at full rank); Gaussian 1"},
            {"window", "the score vectors are S_l[i, 0:p], p = min(window, median len_l); \"full\": p = median "
                       "len_l (the whole row of a median-length example), computed when p <= --full-row-max"}}},
          {"windows", json(windows)}, {"full_row_max", opt.full_row_max}, {"rows", rows}, {"entries", entries},
          {"by_level", by_level}};
}

}  // namespace hkt::analysis
