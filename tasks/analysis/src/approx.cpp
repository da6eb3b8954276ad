// The approximation error of a level sweep against a target (see approx.hpp).
#include "hkt/analysis/approx.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "hkt/analysis/stats.hpp"
#include "hkt/tasks.hpp"
#include "scores.hpp"

namespace hkt::analysis {
namespace {

using json = nlohmann::json;

// Sums over the sample, per layer and head pair (a of the run, b of the target), of the centred scores.
struct PairSums {
  std::vector<double> dot, ss, tt;  // [layer][a][b], [layer][a], [layer][b]
};

// Each valid query row of one [T, T] score matrix centred over the keys it attends to, in place;
// `keep` marks those entries (row-major).
void centre_rows(std::vector<double>& m, int64_t T, int64_t len, bool causal, std::vector<char>& keep) {
  keep.assign(static_cast<size_t>(T * T), 0);
  for (int64_t i = 0; i < len; ++i) {
    const int64_t end = causal ? i + 1 : len;
    double mean = 0;
    for (int64_t j = 0; j < end; ++j) mean += m[i * T + j];
    mean /= static_cast<double>(end);
    for (int64_t j = 0; j < end; ++j) {
      m[i * T + j] -= mean;
      keep[i * T + j] = 1;
    }
  }
}

// The centred [T, T] matrix of example b, head h of a [B, H, T, T] tensor's values.
std::vector<double> matrix(const std::vector<double>& all, int64_t b, int64_t h, int64_t H, int64_t T) {
  const double* p = all.data() + (b * H + h) * T * T;
  return std::vector<double>(p, p + T * T);
}

// The head matching: the permutation pi (run head a -> target head pi[a]) with the smallest residual
// sum_a cost[a][pi[a]]; the identity when H > 8.
std::vector<int64_t> best_match(const std::vector<double>& cost, int64_t H) {
  std::vector<int64_t> pi(static_cast<size_t>(H)), best;
  std::iota(pi.begin(), pi.end(), 0);
  if (H > 8) return pi;
  double lowest = std::numeric_limits<double>::infinity();
  do {
    double c = 0;
    for (int64_t a = 0; a < H; ++a) c += cost[a * H + pi[a]];
    if (c < lowest) lowest = c, best = pi;
  } while (std::next_permutation(pi.begin(), pi.end()));
  return best;
}

json fit_json(const LogLinearFit& f) {
  auto n = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  std::string verdict;
  if (!f.ok) verdict = "no interval: " + f.note;
  else if (f.slope_hi < 0) verdict = "falls with L: log-linear slope below 0 at 95% (a geometric factor per level in [" +
                                     std::to_string(f.factor_lo) + ", " + std::to_string(f.factor_hi) + "])";
  else if (f.slope_lo > 0) verdict = "rises with L (slope above 0 at 95%)";
  else verdict = "no geometric decay shown: the slope's 95% interval contains 0";
  json j = {{"points", f.points}, {"slope", n(f.slope)}, {"intercept", n(f.intercept)}, {"r2", n(f.r2)},
            {"factor", n(f.factor)}, {"verdict", verdict}};
  if (f.ok) {
    j["slope_se"] = f.slope_se;
    j["t975"] = f.t975;
    j["slope_95"] = {f.slope_lo, f.slope_hi};
    j["factor_95"] = {f.factor_lo, f.factor_hi};
  }
  if (!f.note.empty()) j["note"] = f.note;
  return j;
}

}  // namespace

Report approx_report(const std::vector<ApproxModel>& runs, const ApproxModel& target, const tasks::Dataset& data,
                     int64_t batch_size) {
  HKT_CHECK(target.model != nullptr, "approx: no target model");
  HKT_CHECK(!runs.empty(), "approx: no runs to compare with the target");
  HKT_CHECK(batch_size >= 1, "approx: batch size must be >= 1, got ", batch_size);
  HKT_CHECK(data.size() >= 1, "approx: the data set '", data.name, "' has no examples");
  const nn::ClassifierConfig& tc = target.model->config();
  const int64_t NL = tc.layers, H = tc.heads, T = data.seq_len, R = static_cast<int64_t>(runs.size());
  for (const ApproxModel* m : [&] {
         std::vector<const ApproxModel*> all{&target};
         for (const auto& r : runs) all.push_back(&r);
         return all;
       }()) {
    HKT_CHECK(m->model != nullptr, "approx: '", m->label, "' has no model");
    const nn::ClassifierConfig& c = m->model->config();
    HKT_CHECK(c.layers == NL && c.heads == H && c.attention.causal == tc.attention.causal, "approx: '", m->label, "' has ", c.layers,
              " layers, ", c.heads, " heads, causal ", c.attention.causal, "; the target '", target.label, "' has ", NL,
              " layers, ", H, " heads, causal ", tc.attention.causal, ": their scores cannot be compared");
    HKT_CHECK(T <= c.max_len && (c.vocab > 0) == (data.vocab > 0) && data.vocab <= c.vocab &&
                  data.features == c.input_features,
              "approx: '", data.name, "' (vocab ", data.vocab, ", features ", data.features, ", T ", T,
              ") does not fit '", m->label, "' (vocab ", c.vocab, ", features ", c.input_features, ", max_len ",
              c.max_len, ")");
  }
  std::vector<PairSums> sums(static_cast<size_t>(R));
  for (auto& s : sums) {
    s.dot.assign(static_cast<size_t>(NL * H * H), 0.0);
    s.ss.assign(static_cast<size_t>(NL * H), 0.0);
    s.tt.assign(static_cast<size_t>(NL * H), 0.0);
  }
  std::vector<char> keep;
  for (int64_t lo = 0; lo < data.size(); lo += batch_size) {
    const int64_t hi = std::min(data.size(), lo + batch_size), B = hi - lo;
    std::vector<int64_t> idx(static_cast<size_t>(B));
    std::iota(idx.begin(), idx.end(), lo);
    const tasks::Batch batch = data.batch(idx);
    std::vector<std::vector<double>> tgt;
    for (const Tensor& t : layer_scores(*target.model, batch.inputs, batch.valid))
      tgt.push_back(to_dtype(contiguous(t), DType::Float64).to_vector<double>());
    for (int64_t r = 0; r < R; ++r) {
      const std::vector<Tensor> run = layer_scores(*runs[r].model, batch.inputs, batch.valid);
      PairSums& ps = sums[static_cast<size_t>(r)];
      for (int64_t i = 0; i < NL; ++i) {
        const std::vector<double> sv = to_dtype(contiguous(run[i]), DType::Float64).to_vector<double>();
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = std::min(T, data.lengths[lo + b]);
          std::vector<std::vector<double>> ta(static_cast<size_t>(H)), sa(static_cast<size_t>(H));
          for (int64_t h = 0; h < H; ++h) {
            ta[h] = matrix(tgt[i], b, h, H, T);
            centre_rows(ta[h], T, len, tc.attention.causal, keep);
            sa[h] = matrix(sv, b, h, H, T);
            centre_rows(sa[h], T, len, tc.attention.causal, keep);
          }
          for (int64_t a = 0; a < H; ++a)
            for (int64_t c = 0; c < H; ++c) {
              double d = 0, s2 = 0, t2 = 0;
              for (size_t k = 0; k < keep.size(); ++k)
                if (keep[k]) d += sa[a][k] * ta[c][k], s2 += sa[a][k] * sa[a][k], t2 += ta[c][k] * ta[c][k];
              ps.dot[(i * H + a) * H + c] += d;
              if (c == 0) ps.ss[i * H + a] += s2;
              if (a == 0) ps.tt[i * H + c] += t2;
            }
        }
      }
    }
  }

  Report rep;
  json& j = rep.json;
  j["tool"] = "hkt-analyze approx";
  const nn::HKTOptions* th = tc.attention.find<nn::HKTOptions>();
  j["target"] = {{"label", target.label}, {"attention", tc.attention.kind()},
                 {"levels", th ? json(th->levels) : json(nullptr)}};
  j["data"] = {{"name", data.name}, {"examples", data.size()}, {"seq_len", T}};
  j["definitions"] = {
      {"scores", "per layer and head, the combined score matrix S (S_hier before the mask for HKT, Q K^T / sqrt(dh) "
                 "for MHA) over the valid queries i and the keys j each attends to (j < len; causal: j <= i), each "
                 "row centred over those keys"},
      {"rel_error", "sqrt(sum ||S_a - S*_pi(a)||_F^2 / sum ||S*_b||_F^2), sums over examples, heads (and layers for "
                    "the pooled value); pi the head matching with the smallest error"},
      {"rel_error_fitted", "the same with one least-squares scalar per matched head pair: "
                           "sum (||S*||^2 - <S, S*>^2 / ||S||^2) / sum ||S*||^2, its own matching"},
      {"fit", "least squares log(rel_error) = a + b L over the HKT runs (not the target itself), slope b with a 95% "
              "Student-t interval (n - 2 degrees of freedom); geometric decay err ~ C r^L means b = log r < 0"}};
  Table& t = rep.tables["approx.csv"];
  t.columns = {"run", "levels", "layer", "rel_error", "rel_error_fitted"};
  json jr = json::array();
  std::vector<double> fit_l, fit_e, fit_f;
  for (int64_t r = 0; r < R; ++r) {
    const PairSums& ps = sums[static_cast<size_t>(r)];
    const nn::ClassifierConfig& c = runs[r].model->config();
    const nn::HKTOptions* h = c.attention.find<nn::HKTOptions>();
    const bool hkt = h != nullptr;
    const double levels = hkt ? double(h->levels) : 0.0;
    json layers = json::array();
    double num = 0, num_f = 0, den = 0;
    for (int64_t i = 0; i < NL; ++i) {
      std::vector<double> cost(static_cast<size_t>(H * H)), cost_f(cost.size());
      for (int64_t a = 0; a < H; ++a)
        for (int64_t b = 0; b < H; ++b) {
          const double d = ps.dot[(i * H + a) * H + b], s2 = ps.ss[i * H + a], t2 = ps.tt[i * H + b];
          cost[a * H + b] = std::max(0.0, s2 - 2 * d + t2);
          cost_f[a * H + b] = s2 > 0 ? std::max(0.0, t2 - d * d / s2) : t2;
        }
      const std::vector<int64_t> pi = best_match(cost, H), pi_f = best_match(cost_f, H);
      double e = 0, ef = 0, tt = 0;
      for (int64_t a = 0; a < H; ++a) e += cost[a * H + pi[a]], ef += cost_f[a * H + pi_f[a]], tt += ps.tt[i * H + a];
      const double re = tt > 0 ? std::sqrt(e / tt) : 0.0, ref = tt > 0 ? std::sqrt(ef / tt) : 0.0;
      layers.push_back({{"layer", i}, {"rel_error", re}, {"rel_error_fitted", ref}, {"heads_matched", pi},
                        {"heads_matched_fitted", pi_f}});
      t.rows.push_back({double(r), levels, double(i), re, ref});
      num += e, num_f += ef, den += tt;
    }
    const double re = den > 0 ? std::sqrt(num / den) : 0.0, ref = den > 0 ? std::sqrt(num_f / den) : 0.0;
    t.rows.push_back({double(r), levels, -1.0, re, ref});
    const bool self = runs[r].model == target.model;
    json e = {{"label", runs[r].label}, {"attention", c.attention.kind()}, {"levels", hkt ? json(h->levels) : json(nullptr)},
              {"rel_error", re}, {"rel_error_fitted", ref}, {"layers", layers}, {"is_target", self}};
    if (hkt && !self && re > 0 && ref > 0) {
      fit_l.push_back(levels);
      fit_e.push_back(re);
      fit_f.push_back(ref);
      e["in_fit"] = true;
    } else {
      e["in_fit"] = false;
    }
    jr.push_back(e);
  }
  j["runs"] = jr;
  // Successive residual ratios per level, on the geometric mean error of each L.
  std::map<double, std::pair<double, double>> by_l;  // L -> (sum log err, count)
  std::map<double, std::pair<double, double>> by_lf;
  for (size_t k = 0; k < fit_l.size(); ++k) {
    by_l[fit_l[k]].first += std::log(fit_e[k]), by_l[fit_l[k]].second += 1;
    by_lf[fit_l[k]].first += std::log(fit_f[k]), by_lf[fit_l[k]].second += 1;
  }
  json ratios = json::array();
  Table& ft = rep.tables["approx_fit.csv"];
  ft.columns = {"fitted", "points", "slope", "slope_lo", "slope_hi", "factor", "factor_lo", "factor_hi", "r2"};
  for (auto a = by_l.begin(); a != by_l.end() && std::next(a) != by_l.end(); ++a) {
    const auto b = std::next(a);
    const double steps = b->first - a->first;
    const double ea = a->second.first / a->second.second, eb = b->second.first / b->second.second;
    const double fa = by_lf[a->first].first / by_lf[a->first].second, fb = by_lf[b->first].first / by_lf[b->first].second;
    ratios.push_back({{"from_levels", a->first}, {"to_levels", b->first},
                      {"ratio_per_level", std::exp((eb - ea) / steps)},
                      {"ratio_per_level_fitted", std::exp((fb - fa) / steps)}});
  }
  j["ratios"] = ratios;
  const LogLinearFit f = log_linear_fit(fit_l, fit_e), ff = log_linear_fit(fit_l, fit_f);
  j["fit"] = fit_json(f);
  j["fit_fitted"] = fit_json(ff);
  for (const auto* x : {&f, &ff})
    ft.rows.push_back({double(x == &ff), double(x->points), x->slope, x->ok ? x->slope_lo : NAN,
                       x->ok ? x->slope_hi : NAN, x->factor, x->ok ? x->factor_lo : NAN, x->ok ? x->factor_hi : NAN,
                       x->r2});
  json files = json::array();
  for (const auto& [name, tb] : rep.tables) files.push_back(name);
  j["tables"] = files;
  rep.sample = sample_tensors(data);
  return rep;
}

}  // namespace hkt::analysis
