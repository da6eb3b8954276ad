// The analysis report (see report.hpp and docs/analysis.md).
#include "hkt/analysis/report.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "hkt/tasks.hpp"
#include "scores.hpp"
#include "theory.hpp"

namespace hkt::analysis {
namespace {

using json = nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kZeroTol = 1e-9;  // |eigenvalue| <= this * max|eigenvalue| counts as zero

std::vector<double> doubles(const Tensor& t) { return to_dtype(contiguous(t), DType::Float64).to_vector<double>(); }

// Level l's [D, D] query and key maps (acting on row vectors) of one block.
void projections(nn::Block& blk, int64_t l, std::vector<double>& wq, std::vector<double>& wk) {
  if (blk.hkt) {
    wq = doubles(blk.hkt->wq(l));
    wk = doubles(blk.hkt->wk(l));
  } else {
    const auto [q, k, heads] = qk_maps(blk, blk.attn->type_name());
    (void)heads;
    wq = doubles(transpose(q->weight, 0, 1));
    wk = doubles(transpose(k->weight, 0, 1));
  }
}

// M_{l,h} = Wq_{l,h} Wk_{l,h}^T / sqrt(dh), [D, D], so that S_l[i, j] = x_i M x_j^T (without biases);
// h = -1: the whole layer's M_l = Wq_l Wk_l^T / sqrt(dh) (the sum of the heads' forms).
std::vector<double> head_form(const std::vector<double>& wq, const std::vector<double>& wk, int64_t D, int64_t H,
                              int64_t h) {
  const int64_t dh = D / H;
  if (h < 0) {
    std::vector<double> m = mul_abt(wq, wk, D, D, D);
    for (double& v : m) v /= std::sqrt(static_cast<double>(dh));
    return m;
  }
  std::vector<double> a(static_cast<size_t>(D * dh)), b(static_cast<size_t>(D * dh));
  for (int64_t i = 0; i < D; ++i)
    for (int64_t t = 0; t < dh; ++t) {
      a[i * dh + t] = wq[i * D + h * dh + t];
      b[i * dh + t] = wk[i * D + h * dh + t];
    }
  std::vector<double> m = mul_abt(a, b, D, D, dh);
  for (double& v : m) v /= std::sqrt(static_cast<double>(dh));
  return m;
}

std::vector<double> nonzero(const std::vector<double>& v) {
  double scale = 0;
  for (double x : v) scale = std::max(scale, std::abs(x));
  std::vector<double> out;
  for (double x : v)
    if (std::abs(x) > kZeroTol * scale) out.push_back(x);
  return out;
}

template <class F>
double seconds(F f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The fastest pass: the least disturbed by other work on the machine.
double fastest(const std::vector<double>& t) { return *std::min_element(t.begin(), t.end()); }

// Section 5: score FLOP ratio per L next to the measured forward time of one attention layer.
json cost_section(const nn::ClassifierConfig& cfg, int64_t T, const AnalysisOptions& opt, Table& table) {
  const int64_t B = opt.cost_batch, D = cfg.dim, H = cfg.heads;
  const int64_t lmax = std::max(opt.cost_max_levels, nn::score_levels(cfg.attention));
  NoGradGuard ng;
  Generator gen(1);
  const Tensor x = randn({B, T, D}, {cfg.dtype}, &gen);
  nn::AttentionConfig ac;
  ac.dim = D;
  ac.heads = H;
  ac.causal = cfg.attention.causal;
  ac.bias = cfg.attention.bias;
  ac.dtype = cfg.dtype;
  ac.gen = &gen;
  nn::MultiHeadAttention mha(ac);
  (void)mha.forward(x);  // warm-up
  // MHA and HKT passes alternate, so that a change of machine load hits both; each time is the fastest
  // pass, MHA's over all of its passes (it is the same layer for every L).
  std::vector<double> tm, t_hkt, flops;
  for (int64_t L = 1; L <= lmax; ++L) {
    nn::HKTConfig hc;
    static_cast<nn::AttentionConfig&>(hc) = ac;
    const nn::HKTOptions* own = cfg.attention.find<nn::HKTOptions>();
    const nn::HKTOptions o = own ? *own : nn::HKTOptions{};  // another kind: HKT's defaults
    hc.levels = L;
    hc.share_qk = o.share_qk;
    hc.pointwise = o.pointwise;
    hc.learn_lambda = o.learn_lambda;
    hc.hybrid = o.hybrid;
    hc.conv_only = o.conv_only;
    nn::HKTAttention hkt(hc);
    (void)hkt.forward(x);  // warm-up
    std::vector<double> th;
    for (int64_t r = 0; r < opt.cost_reps; ++r) {
      tm.push_back(seconds([&] { (void)mha.forward(x); }));
      th.push_back(seconds([&] { (void)hkt.forward(x); }));
    }
    t_hkt.push_back(fastest(th));
    flops.push_back(nn::score_flops(B, T, D, H, L).ratio);
  }
  const double t_mha = fastest(tm);
  table.columns = {"levels", "flop_ratio", "time_hkt_s", "time_mha_s", "time_ratio"};
  json rows = json::array();
  for (int64_t L = 1; L <= lmax; ++L) {
    const double th = t_hkt[L - 1], f = flops[L - 1];
    rows.push_back({{"levels", L}, {"flop_ratio", f}, {"time_hkt_s", th}, {"time_mha_s", t_mha},
                    {"time_ratio", th / t_mha}});
    table.rows.push_back({static_cast<double>(L), f, th, t_mha, th / t_mha});
  }
  return {{"batch", B}, {"seq_len", T}, {"dim", D}, {"heads", H}, {"reps", opt.cost_reps},
          {"what", "forward of one attention layer (fused kernel, no gradient), HKT and MHA passes alternating, "
                   "each time the fastest pass after a warm-up (MHA's over all its passes); flop_ratio = score "
                   "FLOPs of HKT / MHA (score_flops)"},
          {"rows", rows}};
}

}  // namespace

Report analyze(nn::SequenceClassifier& model, const tasks::Dataset& data, const AnalysisOptions& opt) {
  const nn::ClassifierConfig& cfg = model.config();
  for (int64_t w : opt.kurtosis_windows)
    HKT_CHECK(w >= 1, "analysis: a kurtosis window must be >= 1, got ", w);
  std::vector<int64_t> windows = opt.kurtosis_windows;
  if (opt.full_row) windows.push_back(0);
  ScoreStats st = collect_scores(model, data, opt.window, opt.eig_samples, opt.batch_size, windows,
                                 opt.full_row_max);
  const int64_t NL = st.layers, H = st.heads, L = st.levels, D = cfg.dim;
  Report r;
  json& j = r.json;
  j["tool"] = "hkt-analyze";
  j["model_config"] = json::parse(cfg.to_json());
  j["data"] = {{"name", data.name}, {"examples", data.size()}, {"seq_len", data.seq_len}};
  j["options"] = {{"window", opt.window}, {"eig_samples", opt.eig_samples}, {"bins", opt.bins},
                  {"kurtosis_windows", opt.kurtosis_windows}, {"full_row", opt.full_row},
                  {"full_row_max", opt.full_row_max}};
  j["definitions"] = {
      {"score_vectors", "x_i = S_l[i, 0:p] (query i's scores against the first p keys of level l, before the "
                        "mask), one vector per valid query of every example with len_l >= p; p = min(window, "
                        "median len_l of the sample), len_l = ceil(len / 2^l)"},
      {"b2", "Mardia: (1/n) sum_i ((x_i - mean)^T S^+ (x_i - mean))^2, S the (1/n) covariance"},
      {"gaussian_reference", "r (r + 2), r = rank of S (= p at full rank)"},
      {"kappa", "b2 / (r (r + 2)): 1 for Gaussian vectors; the paper's scale (its kappa ~ 33 against 1)"},
      {"z", "(b2 - r(r+2)) / sqrt(8 r (r+2) / n)"},
      {"excess_kurtosis", "m4 / m2^2 - 3 over every entry S_l[i, j], i and j valid (0 for a Gaussian)"},
      {"M", "M_{l,h} = Wq_{l,h} Wk_{l,h}^T / sqrt(dh), [D, D]; Ms = (M + M^T)/2, Ma = (M - M^T)/2"},
      {"head_minus_1", "head -1 in split and spectra: the whole layer's M_l = Wq_l Wk_l^T / sqrt(dh)"},
      {"frac_negative", "negative / nonzero eigenvalues; |v| <= 1e-9 max|v| counts as zero. Per head, Ms has rank "
                        "<= 2 dh and exactly as many negative as positive eigenvalues when [Wq_h Wk_h] has full "
                        "column rank (a structural 1/2); the whole-layer form has no such constraint"}};

  // 1. Kurtosis.
  Table& kt = r.tables["kurtosis.csv"];
  kt.columns = {"layer", "head", "level", "p", "examples", "n", "rank", "b2", "gaussian_reference", "kappa", "z",
                "excess_kurtosis", "entries"};
  json kurt = json::array();
  std::vector<std::vector<double>> kappa_by(static_cast<size_t>(NL * L)), ex_by(static_cast<size_t>(NL * L));
  for (int64_t i = 0; i < NL; ++i)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        LevelScores& s = st.at(i, h, l);
        const RowSet& set = s.sets.at(s.p);
        const int64_t n = static_cast<int64_t>(set.rows.size()) / s.p;
        const Mardia m = mardia_kurtosis(set.rows, n, s.p);
        const double ex = s.entries.excess_kurtosis();
        const double kappa = m.ok ? m.kappa : kNaN;
        kappa_by[i * L + l].push_back(kappa);
        ex_by[i * L + l].push_back(ex);
        json e = {{"layer", i}, {"head", h}, {"level", l}, {"p", s.p}, {"examples", set.examples}, {"n", n},
                  {"rank", m.rank},
                  {"b2", num(m.ok ? m.b2 : kNaN)}, {"gaussian_reference", num(m.ok ? m.reference : kNaN)},
                  {"kappa", num(kappa)}, {"z", num(m.ok ? m.z : kNaN)}, {"excess_kurtosis", num(ex)},
                  {"entries", s.entries.count()}};
        if (!m.note.empty()) e["note"] = m.note;
        kurt.push_back(e);
        kt.rows.push_back({double(i), double(h), double(l), double(s.p), double(set.examples), double(n),
                           double(m.rank),
                           m.ok ? m.b2 : kNaN, m.ok ? m.reference : kNaN, kappa, m.ok ? m.z : kNaN, ex,
                           double(s.entries.count())});
      }
  j["kurtosis"] = kurt;

  // 2-3. Bilinear forms: split and spectrum of Ms.
  Table& sp = r.tables["split.csv"];
  sp.columns = {"layer", "head", "level", "norm_m", "norm_ms", "norm_ma", "directional_share"};
  Table& es = r.tables["spectrum_ms.csv"];
  es.columns = {"layer", "head", "level", "negative", "zero", "positive", "frac_negative", "min", "max"};
  Table& ev = r.tables["eigenvalues_ms.csv"];
  ev.columns = {"layer", "head", "level", "index", "eigenvalue"};
  json split = json::array(), bil = json::array();
  std::vector<std::vector<double>> share_by(static_cast<size_t>(NL * L)), neg_by(static_cast<size_t>(NL * L));
  std::vector<std::vector<double>> share_layer(static_cast<size_t>(NL * L)), neg_layer(static_cast<size_t>(NL * L));
  std::vector<std::vector<double>> ms_vals(static_cast<size_t>(L)), ms_layer_vals(static_cast<size_t>(L));
  std::vector<FormRange> forms;  // per head, for Proposition 3.1's condition
  for (int64_t i = 0; i < NL; ++i) {
    auto blk = model.blocks->at<nn::Block>(static_cast<size_t>(i));
    for (int64_t l = 0; l < L; ++l) {
      std::vector<double> wq, wk;
      projections(*blk, l, wq, wk);
      for (int64_t h = -1; h < H; ++h) {  // -1: the whole layer's form
        const BilinearSplit s = split_bilinear(head_form(wq, wk, D, H, h), D);
        const std::vector<double> vals = sym_eig(s.sym, D).values;
        const SignCount c = sign_count(vals, kZeroTol);
        if (h >= 0) forms.push_back({i, h, l, c.min, c.max});
        (h < 0 ? share_layer : share_by)[i * L + l].push_back(s.directional_share);
        (h < 0 ? neg_layer : neg_by)[i * L + l].push_back(c.frac_negative);
        const std::vector<double> nz = nonzero(vals);
        auto& pool = (h < 0 ? ms_layer_vals : ms_vals)[l];
        pool.insert(pool.end(), nz.begin(), nz.end());
        split.push_back({{"layer", i}, {"head", h}, {"level", l}, {"norm_m", s.norm_m}, {"norm_ms", s.norm_sym},
                         {"norm_ma", s.norm_anti}, {"directional_share", s.directional_share}});
        sp.rows.push_back({double(i), double(h), double(l), s.norm_m, s.norm_sym, s.norm_anti, s.directional_share});
        bil.push_back({{"layer", i}, {"head", h}, {"level", l}, {"negative", c.negative}, {"zero", c.zero},
                       {"positive", c.positive}, {"frac_negative", c.frac_negative},
                       {"frac_negative_all", c.frac_negative_all}, {"min", c.min}, {"max", c.max},
                       {"eigenvalues", vals}});
        es.rows.push_back({double(i), double(h), double(l), double(c.negative), double(c.zero), double(c.positive),
                           c.frac_negative, c.min, c.max});
        for (size_t k = 0; k < vals.size(); ++k)
          ev.rows.push_back({double(i), double(h), double(l), double(k), vals[k]});
      }
    }
  }
  j["split"] = split;

  // 2. Combined score spectra.
  Table& cs = r.tables["spectrum_combined.csv"];
  cs.columns = {"layer", "head", "sample", "size", "negative", "zero", "positive", "frac_negative", "min", "max"};
  Table& cv = r.tables["eigenvalues_combined.csv"];
  cv.columns = {"layer", "head", "sample", "index", "eigenvalue"};
  json comb = json::array();
  std::vector<double> comb_all;
  const int64_t n_eig = static_cast<int64_t>(st.combined.size()) / (NL * H);
  for (int64_t i = 0; i < NL; ++i)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> pooled;
      for (int64_t k = 0; k < n_eig; ++k) {
        const CombinedSpectrum& e = st.combined[static_cast<size_t>((i * H + h) * n_eig + k)];
        const SignCount c = sign_count(e.values, kZeroTol);
        cs.rows.push_back({double(i), double(h), double(e.sample), double(e.values.size()), double(c.negative),
                           double(c.zero), double(c.positive), c.frac_negative, c.min, c.max});
        for (size_t k = 0; k < e.values.size(); ++k)
          cv.rows.push_back({double(i), double(h), double(e.sample), double(k), e.values[k]});
        pooled.insert(pooled.end(), e.values.begin(), e.values.end());
      }
      const SignCount c = sign_count(pooled, kZeroTol);
      comb.push_back({{"layer", i}, {"head", h}, {"samples", n_eig},
                      {"eigenvalues", static_cast<int64_t>(pooled.size())}, {"negative", c.negative},
                      {"zero", c.zero}, {"positive", c.positive}, {"frac_negative", c.frac_negative},
                      {"min", c.min}, {"max", c.max}});
      comb_all.insert(comb_all.end(), pooled.begin(), pooled.end());
    }
  j["spectra"] = {{"bilinear", bil}, {"combined", comb}};
  j["psd"] = psd_section(forms, st, cfg.dtype, r);
  j["kurtosis_dims"] = kurtosis_dims_section(st, opt, r);

  // Histograms: nonzero eigenvalues of Ms per level (pooled over layers and heads); combined spectra.
  for (const char* name : {"hist_ms.csv", "hist_ms_layer.csv"}) {
    Table& hm = r.tables[name];
    hm.columns = {"level", "center", "count"};
    for (int64_t l = 0; l < L; ++l) {
      const auto& v = (name == std::string("hist_ms.csv") ? ms_vals : ms_layer_vals)[l];
      if (v.empty()) continue;
      const Histogram hg = histogram(v, *std::min_element(v.begin(), v.end()),
                                     *std::max_element(v.begin(), v.end()), opt.bins);
      for (size_t b = 0; b < hg.centers.size(); ++b)
        hm.rows.push_back({double(l), hg.centers[b], double(hg.counts[b])});
    }
  }
  Table& hc = r.tables["hist_combined.csv"];
  hc.columns = {"center", "count"};
  if (!comb_all.empty()) {
    const Histogram hg = histogram(comb_all, *std::min_element(comb_all.begin(), comb_all.end()),
                                   *std::max_element(comb_all.begin(), comb_all.end()), opt.bins);
    for (size_t b = 0; b < hg.centers.size(); ++b) hc.rows.push_back({hg.centers[b], double(hg.counts[b])});
  }

  // 4. Level weights and gates.
  Table& lt = r.tables["lambda.csv"];
  lt.columns = {"layer", "head", "level", "lambda"};
  Table& bt = r.tables["beta.csv"];
  bt.columns = {"layer", "head", "beta"};
  json gates = json::array();
  std::vector<std::vector<double>> lambda_by(static_cast<size_t>(NL * L));
  for (int64_t i = 0; i < NL; ++i) {
    auto blk = model.blocks->at<nn::Block>(static_cast<size_t>(i));
    if (!blk->hkt) continue;
    const std::vector<double> lam = doubles(blk->hkt->lambda()), beta = doubles(blk->hkt->beta());
    json lj = json::array();
    for (int64_t h = 0; h < H; ++h) {
      lj.push_back(std::vector<double>(lam.begin() + h * L, lam.begin() + (h + 1) * L));
      for (int64_t l = 0; l < L; ++l) {
        lt.rows.push_back({double(i), double(h), double(l), lam[h * L + l]});
        lambda_by[i * L + l].push_back(lam[h * L + l]);
      }
      bt.rows.push_back({double(i), double(h), beta[h]});
    }
    gates.push_back({{"layer", i}, {"lambda", lj}, {"beta", beta}});
  }
  j["gates"] = cfg.attention.kind() == "hkt" ? gates : json(nullptr);

  // Per layer and level: the means over heads (what the plots draw), and over layers too.
  Table& lv = r.tables["levels.csv"];
  lv.columns = {"layer", "level", "kappa_mean", "excess_kurtosis_mean", "frac_negative_mean",
                "directional_share_mean", "lambda_mean", "frac_negative_layer", "directional_share_layer"};
  json by_level = json::array();
  for (int64_t l = 0; l < L; ++l) {
    std::vector<double> k, e, n, s, lam, nl, sl;
    for (int64_t i = 0; i < NL; ++i) {
      const size_t at = static_cast<size_t>(i * L + l);
      lv.rows.push_back({double(i), double(l), mean_of(kappa_by[at]), mean_of(ex_by[at]), mean_of(neg_by[at]),
                         mean_of(share_by[at]), mean_of(lambda_by[at]), mean_of(neg_layer[at]),
                         mean_of(share_layer[at])});
      nl.insert(nl.end(), neg_layer[at].begin(), neg_layer[at].end());
      sl.insert(sl.end(), share_layer[at].begin(), share_layer[at].end());
      k.insert(k.end(), kappa_by[at].begin(), kappa_by[at].end());
      e.insert(e.end(), ex_by[at].begin(), ex_by[at].end());
      n.insert(n.end(), neg_by[at].begin(), neg_by[at].end());
      s.insert(s.end(), share_by[at].begin(), share_by[at].end());
      lam.insert(lam.end(), lambda_by[at].begin(), lambda_by[at].end());
    }
    by_level.push_back({{"level", l}, {"kappa_mean", num(mean_of(k))}, {"excess_kurtosis_mean", num(mean_of(e))},
                        {"frac_negative_mean", num(mean_of(n))}, {"directional_share_mean", num(mean_of(s))},
                        {"lambda_mean", num(mean_of(lam))}, {"frac_negative_layer_mean", num(mean_of(nl))},
                        {"directional_share_layer_mean", num(mean_of(sl))}});
  }
  std::sort(lv.rows.begin(), lv.rows.end());  // by layer, then level
  j["by_level"] = by_level;

  // 5. Cost.
  if (opt.cost) j["cost"] = cost_section(cfg, data.seq_len, opt, r.tables["cost.csv"]);
  else j["cost"] = nullptr;

  json files = json::array();
  for (const auto& [name, t] : r.tables) files.push_back(name);
  j["tables"] = files;
  r.sample = sample_tensors(data);
  return r;
}

}  // namespace hkt::analysis
