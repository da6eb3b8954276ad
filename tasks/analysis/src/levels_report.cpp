// Proposition 4.5 and Theorem 4.3 on a trained model (see levels_report.hpp).
#include "hkt/analysis/levels_report.hpp"

#include <algorithm>
#include <cmath>

#include "hkt/analysis/info.hpp"
#include "hkt/analysis/levelfit.hpp"
#include "hkt/tasks.hpp"
#include "scores.hpp"
#include "theory.hpp"

namespace hkt::analysis {
namespace {

using json = nlohmann::json;

std::vector<double> doubles(const Tensor& t) { return to_dtype(contiguous(t), DType::Float64).to_vector<double>(); }

// Pooled squared residuals and target norms: [layer][head][rank index][L - 1].
struct FitSums {
  int64_t layers, heads, ranks, levels;
  std::vector<double> res, norm;
  size_t at(int64_t layer, int64_t h, int64_t r, int64_t L) const {
    return static_cast<size_t>(((layer * heads + h) * ranks + r) * levels + L);
  }
};

// The pooled relative residual of one rank over the (layer, head) cells in [lo, hi) of layers.
std::vector<double> pooled(const FitSums& f, int64_t r, int64_t layer_lo, int64_t layer_hi) {
  std::vector<double> out;
  for (int64_t L = 0; L < f.levels; ++L) {
    double a = 0, b = 0;
    for (int64_t layer = layer_lo; layer < layer_hi; ++layer)
      for (int64_t h = 0; h < f.heads; ++h) a += f.res[f.at(layer, h, r, L)], b += f.norm[f.at(layer, h, r, L)];
    out.push_back(b > 0 ? std::sqrt(a / b) : 0.0);
  }
  return out;
}

json fit_section(const FitSums& f, const std::vector<int64_t>& ranks, Report& rep) {
  Table& t = rep.tables["levelfit.csv"];
  t.columns = {"rank", "layer", "head", "levels", "rel_residual"};
  Table& tf = rep.tables["levelfit_fit.csv"];
  tf.columns = {"rank", "points", "slope", "slope_lo", "slope_hi", "factor", "factor_lo", "factor_hi"};
  json out = json::array();
  for (int64_t r = 0; r < f.ranks; ++r) {
    for (int64_t layer = 0; layer < f.layers; ++layer)
      for (int64_t h = 0; h < f.heads; ++h)
        for (int64_t L = 0; L < f.levels; ++L) {
          const double b = f.norm[f.at(layer, h, r, L)];
          t.rows.push_back({static_cast<double>(ranks[r]), static_cast<double>(layer), static_cast<double>(h),
                            static_cast<double>(L + 1), b > 0 ? std::sqrt(f.res[f.at(layer, h, r, L)] / b) : 0.0});
        }
    const std::vector<double> all = pooled(f, r, 0, f.layers);
    std::vector<LevelFit> as_fits;
    for (int64_t L = 0; L < f.levels; ++L) {
      LevelFit lf;
      lf.levels = L + 1;
      lf.rel_residual = all[L];
      as_fits.push_back(lf);
      t.rows.push_back({static_cast<double>(ranks[r]), -1, -1, static_cast<double>(L + 1), all[L]});
    }
    const LogLinearFit fit = level_fit_rate(as_fits);
    tf.rows.push_back({static_cast<double>(ranks[r]), static_cast<double>(fit.points), fit.slope, fit.slope_lo,
                       fit.slope_hi, fit.factor, fit.factor_lo, fit.factor_hi});
    std::string verdict = !fit.ok ? "no interval: " + fit.note
                          : fit.slope_hi < 0 ? "falls with L at 95%"
                                             : "no geometric decay shown: the slope's 95% interval reaches 0";
    out.push_back({{"rank", ranks[r]}, {"rel_residual", all}, {"slope", num(fit.slope)}, {"factor", num(fit.factor)},
                   {"factor_95", {num(fit.factor_lo), num(fit.factor_hi)}}, {"points", fit.points},
                   {"verdict", verdict}});
  }
  return out;
}

}  // namespace

Report theory_report(nn::SequenceClassifier& model, const tasks::Dataset& data, const TheoryOptions& opt) {
  HKT_CHECK(data.size() >= 1, "theory: the data set '", data.name, "' has no examples");
  HKT_CHECK(!opt.ranks.empty() && opt.max_levels >= 2 && opt.max_len >= 2 && opt.batch_size >= 1,
            "theory: needs a rank, max_levels >= 2, max_len >= 2 and batch_size >= 1");
  const nn::ClassifierConfig& cfg = model.config();
  HKT_CHECK(data.seq_len <= cfg.max_len, "theory: '", data.name, "' has sequences of length ", data.seq_len,
            " but the model's max_len is ", cfg.max_len);
  HKT_CHECK(!cfg.attention.causal, "theory: the level fit is defined here for bidirectional models; this one is causal");
  const int64_t layers = cfg.layers, H = cfg.heads, R = static_cast<int64_t>(opt.ranks.size());
  FitSums sums{layers, H, R, opt.max_levels, {}, {}};
  sums.res.assign(static_cast<size_t>(layers * H * R * opt.max_levels), 0.0);
  sums.norm = sums.res;
  const int64_t levels = nn::score_levels(cfg.attention);
  std::vector<std::vector<double>> info_s(static_cast<size_t>(layers * H * levels)), info_z = info_s;
  const int64_t N = data.size(), T = data.seq_len;
  for (int64_t lo = 0; lo < N; lo += opt.batch_size) {
    const int64_t hi = std::min(N, lo + opt.batch_size), B = hi - lo;
    std::vector<int64_t> idx(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) idx[b] = lo + b;
    const tasks::Batch batch = data.batch(idx);
    const std::vector<Tensor> comb = layer_scores(model, batch.inputs, batch.valid);
    const std::vector<std::vector<Tensor>> lev =
        levels > 1 ? layer_level_scores(model, batch.inputs, batch.valid) : std::vector<std::vector<Tensor>>{};
    for (int64_t layer = 0; layer < layers; ++layer) {
      const std::vector<double> c = doubles(comb[layer]);
      for (int64_t b = 0; b < B; ++b) {
        const int64_t n = std::min(data.lengths[lo + b], opt.max_len);
        if (n < 2) continue;
        for (int64_t h = 0; h < H; ++h) {
          const double* m = c.data() + (b * H + h) * T * T;
          std::vector<double> S(static_cast<size_t>(n * n));
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j) S[i * n + j] = m[i * T + j];
          // The row-centred target's squared norm: what every residual of this matrix is relative to.
          double norm_sq = 0;
          for (int64_t i = 0; i < n; ++i) {
            double m = 0;
            for (int64_t j = 0; j < n; ++j) m += S[i * n + j];
            m /= static_cast<double>(n);
            for (int64_t j = 0; j < n; ++j) norm_sq += (S[i * n + j] - m) * (S[i * n + j] - m);
          }
          for (int64_t r = 0; r < R; ++r) {
            const std::vector<LevelFit> fits =
                fit_levels(S, n, {.max_levels = opt.max_levels, .rank = opt.ranks[r], .row_offsets = true,
                                  .max_sweeps = opt.max_sweeps, .tol = 1e-8});
            for (int64_t L = 0; L < opt.max_levels; ++L) {
              const LevelFit& f = fits[L];
              sums.res[sums.at(layer, h, r, L)] += f.residual * f.residual;
              sums.norm[sums.at(layer, h, r, L)] += norm_sq;
            }
          }
        }
      }
      if (levels <= 1) continue;
      // Theorem 4.3: the fine scores S_0 against each level's upsampled S_l on the valid pairs.
      std::vector<std::vector<double>> lv;
      for (const Tensor& t : lev[layer]) lv.push_back(doubles(t));
      for (int64_t b = 0; b < B; ++b) {
        const int64_t n = data.lengths[lo + b];
        for (int64_t h = 0; h < H; ++h)
          for (int64_t l = 1; l < levels; ++l) {
            const int64_t Tl = lev[layer][l].size(2);
            const double* s0 = lv[0].data() + (b * H + h) * T * T;
            const double* sl = lv[l].data() + (b * H + h) * Tl * Tl;
            auto& s = info_s[static_cast<size_t>((layer * H + h) * levels + l)];
            auto& z = info_z[static_cast<size_t>((layer * H + h) * levels + l)];
            for (int64_t i = 0; i < n; ++i)
              for (int64_t j = 0; j < n; ++j) s.push_back(s0[i * T + j]), z.push_back(sl[(i >> l) * Tl + (j >> l)]);
          }
      }
    }
  }
  Report rep;
  rep.json["definitions"] = {
      {"levelfit", "per layer and head, each sampled example's combined score matrix (its first min(len, max_len) "
                   "positions, row offsets free) is fitted by sum_{l<L} Up_l(G_l), rank(G_l) <= r; rel_residual = "
                   "sqrt(sum of squared residuals / sum of squared row-centred targets) over the examples"},
      {"information", "per layer, head and level l >= 1: s = S_0[i, j], z = S_l[i >> l, j >> l] over the valid pairs "
                      "of the sample; rho2 of the line s ~ z; gaussian = -1/2 log(1 - rho2); correction = "
                      "skew_e^2 (1 - (1 - rho2)^3) / 12 + kurt_e^2 (1 - (1 - rho2)^4) / 48 (nats)"}};
  rep.json["options"] = {{"max_levels", opt.max_levels}, {"ranks", opt.ranks}, {"max_len", opt.max_len}};
  rep.json["model_config"] = {{"attention", cfg.attention.kind()}, {"levels", levels}, {"layers", layers}, {"heads", H},
                              {"dim", cfg.dim}};
  rep.json["data"] = {{"name", data.name}, {"examples", N}, {"seq_len", T}};
  rep.json["levelfit"] = fit_section(sums, opt.ranks, rep);
  Table& ti = rep.tables["information.csv"];
  ti.columns = {"layer", "head", "level", "pairs", "rho2", "skew_e", "kurt_e", "kurt_s", "gaussian", "correction",
                "total"};
  json info = json::array();
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 1; l < levels; ++l) {
        const size_t k = static_cast<size_t>((layer * H + h) * levels + l);
        if (info_s[k].size() < 4) continue;
        const LevelInformation li = level_information(info_s[k], info_z[k]);
        ti.rows.push_back({static_cast<double>(layer), static_cast<double>(h), static_cast<double>(l),
                           static_cast<double>(li.n), li.rho2, li.skew_e, li.kurt_e, li.kurt_s, li.gaussian,
                           li.correction, li.total});
        info.push_back({{"layer", layer}, {"head", h}, {"level", l}, {"rho2", num(li.rho2)},
                        {"kurt_e", num(li.kurt_e)}, {"gaussian", num(li.gaussian)},
                        {"correction", num(li.correction)}});
      }
  rep.json["information"] = info;
  rep.sample = sample_tensors(data);
  return rep;
}

}  // namespace hkt::analysis
