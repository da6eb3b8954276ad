// The analysis statistics (tasks/analysis) on inputs with known answers, and a
// report from a tiny trained checkpoint.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "helpers/temp_dir.hpp"
#include "hkt/analysis/report.hpp"
#include "hkt/analysis/stats.hpp"
#include "hkt/tasks.hpp"
#include "hkt/tasks/registry.hpp"
#include "hkt/tasks/train.hpp"

using namespace hkt;
using namespace hkt::analysis;
using hkt::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<double> gaussian(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(rng);
  return v;
}

// A random orthogonal n x n matrix (the eigenvectors of a random symmetric one).
std::vector<double> orthogonal(int64_t n, uint64_t seed) {
  std::vector<double> a = gaussian(n * n, seed);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) a[j * n + i] = a[i * n + j];
  return sym_eig(a, n, true).vectors;
}

}  // namespace

TEST_CASE("sym_eig recovers a planted spectrum and its eigenvectors") {
  const int64_t n = 7;
  const std::vector<double> planted = {-3.5, -1.0, -0.25, 0.0, 0.5, 2.0, 10.0};
  const std::vector<double> q = orthogonal(n, 1);
  std::vector<double> a(static_cast<size_t>(n * n), 0.0);  // Q diag(d) Q^T
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k) a[i * n + j] += q[i * n + k] * planted[k] * q[j * n + k];
  const SymEig e = sym_eig(a, n, true);
  for (int64_t k = 0; k < n; ++k) CHECK(e.values[k] == doctest::Approx(planted[k]).epsilon(1e-12).scale(10));
  for (int64_t k = 0; k < n; ++k)  // A v_k = lambda_k v_k
    for (int64_t i = 0; i < n; ++i) {
      double av = 0;
      for (int64_t j = 0; j < n; ++j) av += a[i * n + j] * e.vectors[j * n + k];
      CHECK(std::abs(av - e.values[k] * e.vectors[i * n + k]) < 1e-10);
    }
  const SignCount c = sign_count(e.values);
  CHECK(c.negative == 3);
  CHECK(c.zero == 1);
  CHECK(c.positive == 3);
  CHECK(c.frac_negative == doctest::Approx(0.5));
  CHECK(c.frac_negative_all == doctest::Approx(3.0 / 7.0));
  CHECK_THROWS_WITH_AS(sym_eig({1, 2, 3}, 2), doctest::Contains("expected 4 values"), Error);
}

TEST_CASE("Mardia's b2 of Gaussian samples is near p(p + 2), and affine invariant") {
  const int64_t n = 20000, p = 4;
  std::vector<double> x = gaussian(n * p, 2);
  const Mardia m = mardia_kurtosis(x, n, p);
  REQUIRE(m.ok);
  CHECK(m.rank == p);
  CHECK(m.reference == 24.0);
  CHECK(std::abs(m.z) < 4.0);  // sd of b2 is sqrt(8 p (p + 2) / n) ~ 0.1
  CHECK(m.kappa == doctest::Approx(1.0).epsilon(0.03));
  // y = x A + c with an invertible A has the same b2.
  const std::vector<double> a = {2, 0.5, 0, 1, 0, 1, 3, 0, 0.1, 0, 1, -1, 0, 0, 0, 4};
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < p; ++k) {
      double s = 5.0 * static_cast<double>(k);
      for (int64_t t = 0; t < p; ++t) s += x[i * p + t] * a[t * p + k];
      y[i * p + k] = s;
    }
  CHECK(mardia_kurtosis(y, n, p).b2 == doctest::Approx(m.b2).epsilon(1e-9));
}

TEST_CASE("Mardia's b2: exact small cases, heavy tails, singular covariance, too few vectors") {
  // p = 1: b2 = m4 / m2^2; {-1, 1} gives 1 (reference 3).
  const Mardia two = mardia_kurtosis({-1, 1, -1, 1}, 4, 1);
  REQUIRE(two.ok);
  CHECK(two.b2 == doctest::Approx(1.0));
  CHECK(two.reference == 3.0);
  CHECK(two.kappa == doctest::Approx(1.0 / 3.0));
  CHECK(two.z == doctest::Approx((1.0 - 3.0) / std::sqrt(8.0 * 3.0 / 4.0)));
  // A scale mixture of Gaussians has heavy tails: kappa well above 1.
  const int64_t n = 20000, p = 3;
  std::vector<double> x = gaussian(n * p, 3);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < p; ++k) x[i * p + k] *= (i % 10 == 0) ? 5.0 : 0.5;
  const Mardia heavy = mardia_kurtosis(x, n, p);
  CHECK(heavy.kappa > 3.0);
  CHECK(heavy.z > 100.0);
  // The third coordinate is the sum of the first two: rank 2, reference 2 (2 + 2) = 8.
  std::vector<double> s = gaussian(n * 3, 4);
  for (int64_t i = 0; i < n; ++i) s[i * 3 + 2] = s[i * 3] + s[i * 3 + 1];
  const Mardia sing = mardia_kurtosis(s, n, 3);
  REQUIRE(sing.ok);
  CHECK(sing.rank == 2);
  CHECK(sing.reference == 8.0);
  CHECK(sing.kappa == doctest::Approx(1.0).epsilon(0.05));
  CHECK(sing.note.find("rank 2") != std::string::npos);
  const Mardia few = mardia_kurtosis({1, 2, 3, 4}, 2, 2);
  CHECK_FALSE(few.ok);
  CHECK(few.note.find("n = 2, p = 2") != std::string::npos);
  CHECK_FALSE(mardia_kurtosis(std::vector<double>(10, 1.0), 5, 2).ok);  // constant vectors
}

TEST_CASE("univariate excess kurtosis") {
  CHECK(excess_kurtosis({1, 2, 3, 4}) == doctest::Approx(2.5625 / 1.5625 - 3.0));
  CHECK(excess_kurtosis({-1, 1}) == doctest::Approx(-2.0));
  CHECK(std::abs(excess_kurtosis(gaussian(200000, 5))) < 0.05);
  std::vector<double> u(100000);
  for (size_t i = 0; i < u.size(); ++i) u[i] = 1000.0 + static_cast<double>(i) / static_cast<double>(u.size());
  CHECK(excess_kurtosis(u) == doctest::Approx(-1.2).epsilon(1e-3));  // uniform, with a large offset
  CHECK(std::isnan(excess_kurtosis({2, 2, 2})));
}

TEST_CASE("the symmetric / antisymmetric split") {
  const int64_t n = 5;
  std::vector<double> m = gaussian(n * n, 6), sym(m.size()), anti(m.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      sym[i * n + j] = m[i * n + j] + m[j * n + i];
      anti[i * n + j] = m[i * n + j] - m[j * n + i];
    }
  const BilinearSplit s = split_bilinear(sym, n);
  CHECK(s.norm_anti == 0.0);
  CHECK(s.directional_share == 0.0);
  for (size_t k = 0; k < sym.size(); ++k) CHECK(s.sym[k] == sym[k]);
  CHECK(split_bilinear(anti, n).directional_share == doctest::Approx(1.0));
  const BilinearSplit g = split_bilinear(m, n);  // ||M||^2 = ||Ms||^2 + ||Ma||^2
  CHECK(g.norm_m * g.norm_m == doctest::Approx(g.norm_sym * g.norm_sym + g.norm_anti * g.norm_anti));
  for (size_t k = 0; k < m.size(); ++k) CHECK(g.sym[k] + g.anti[k] == doctest::Approx(m[k]));
  // [[1, 2], [3, 4]] [[1, 0], [0, 1], [1, 1]]^T
  const std::vector<double> c = mul_abt({1, 2, 3, 4}, {1, 0, 0, 1, 1, 1}, 2, 3, 2);
  CHECK(c == std::vector<double>{1, 2, 3, 3, 4, 7});
  const Histogram h = histogram({0.0, 0.1, 0.5, 0.99, 1.0, 7.0}, 0.0, 1.0, 2);
  CHECK(h.counts == std::vector<int64_t>{2, 4});
  CHECK(h.centers[0] == doctest::Approx(0.25));
}

TEST_CASE("a report from a tiny trained checkpoint has every section") {
  TempDir tmp("analysis_e2e");
  tasks::TrainConfig c;
  c.task = "synthetic";
  c.data.train_size = 64;
  c.data.val_size = 32;
  c.data.test_size = 32;
  c.data.seq_len = 16;
  c.model = "hkt-tiny";
  c.batch_size = 16;
  c.steps = 4;
  c.log_every = 2;
  c.run_dir = (tmp.path / "run").string();
  tasks::RunOptions quiet;
  quiet.quiet = true;
  tasks::train(c, quiet);

  LoadedModel lm = load_trained(c.run_dir);
  REQUIRE(lm.train);
  CHECK(lm.train->task == "synthetic");
  CHECK(lm.weights.find("best.safetensors") != std::string::npos);
  const tasks::Splits sp = tasks::load_task("synthetic", lm.train->data);
  AnalysisOptions opt;
  opt.window = 6;
  opt.eig_samples = 2;
  opt.batch_size = 5;  // a partial last batch
  opt.cost_max_levels = 3;
  opt.cost_batch = 2;
  opt.cost_reps = 1;
  const tasks::Dataset data = tasks::sample(sp.val, 12, 0);
  std::vector<int64_t> lens = data.lengths;
  std::sort(lens.begin(), lens.end());
  const int64_t median = lens[(lens.size() - 1) / 2];
  const Report r = analyze(*lm.model, data, opt);
  const auto& j = r.json;
  for (const char* k : {"model_config", "data", "definitions", "kurtosis", "spectra", "split", "gates", "by_level",
                        "cost", "tables"})
    CHECK_MESSAGE(j.contains(k), k);
  const int64_t H = 2, L = 3, D = 16;  // hkt-tiny: 1 layer
  REQUIRE(j["kurtosis"].size() == static_cast<size_t>(H * L));
  for (const auto& e : j["kurtosis"]) {
    // p = min(window, ceil(median / 2^l)); the examples with len_l >= p give p-vectors, one per valid query.
    const int64_t block = int64_t{1} << e["level"].get<int64_t>();
    const int64_t p = std::min<int64_t>(6, (median + block - 1) / block);
    CHECK(e["p"].get<int64_t>() == p);
    int64_t examples = 0, n = 0;
    for (int64_t len : data.lengths) {
      const int64_t len_l = (len + block - 1) / block;
      if (len_l >= p) ++examples, n += len_l;
    }
    CHECK(e["examples"].get<int64_t>() == examples);
    CHECK(e["n"].get<int64_t>() == n);
    CHECK(examples * 2 >= static_cast<int64_t>(data.lengths.size()));
    CHECK(e["kappa"].is_number());
    CHECK(e["excess_kurtosis"].is_number());
    CHECK(e["b2"].get<double>() > 0.0);
  }
  REQUIRE(j["spectra"]["bilinear"].size() == static_cast<size_t>((H + 1) * L));  // head -1: the whole layer
  for (const auto& e : j["spectra"]["bilinear"]) {
    CHECK(e["eigenvalues"].size() == static_cast<size_t>(D));
    CHECK(e["negative"].get<int64_t>() + e["zero"].get<int64_t>() + e["positive"].get<int64_t>() == D);
    // Per head, Ms = [A B] [[0 I] [I 0]] [A B]^T / 2 with A, B of dh = 8 columns: inertia (8, 8).
    if (e["head"].get<int64_t>() >= 0) {
      CHECK(e["negative"].get<int64_t>() == 8);
      CHECK(e["positive"].get<int64_t>() == 8);
    }
  }
  REQUIRE(j["spectra"]["combined"].size() == static_cast<size_t>(H));
  CHECK(j["spectra"]["combined"][0]["samples"] == 2);
  for (const auto& e : j["split"]) {
    const double m = e["norm_m"], s = e["norm_ms"], a = e["norm_ma"];
    CHECK(m * m == doctest::Approx(s * s + a * a));
    CHECK(e["directional_share"].get<double>() == doctest::Approx(a / m));
  }
  REQUIRE(j["gates"].size() == 1);
  for (const auto& row : j["gates"][0]["lambda"]) {
    double sum = 0;
    for (const auto& v : row) sum += v.get<double>();
    CHECK(sum == doctest::Approx(1.0));
  }
  for (const auto& b : j["gates"][0]["beta"]) CHECK((b.get<double>() > 0.0 && b.get<double>() < 1.0));
  REQUIRE(j["cost"]["rows"].size() == 3);
  CHECK(j["cost"]["rows"][1]["flop_ratio"].get<double>() == doctest::Approx(1.25));
  CHECK(j["cost"]["rows"][0]["time_ratio"].get<double>() > 0.0);

  const std::string out = (tmp.path / "analysis").string();
  write_report(out, r);
  write_report(out, r);  // replaces the folder
  CHECK(fs::exists(tmp.path / "analysis" / "report.json"));
  for (const char* f : {"kurtosis.csv", "split.csv", "spectrum_ms.csv", "eigenvalues_ms.csv", "spectrum_combined.csv",
                        "eigenvalues_combined.csv", "hist_ms.csv", "hist_ms_layer.csv", "hist_combined.csv",
                        "lambda.csv", "beta.csv", "levels.csv", "cost.csv"})
    CHECK_MESSAGE(fs::exists(tmp.path / "analysis" / f), f);
  CHECK_FALSE(fs::exists(tmp.path / "analysis.tmp"));
  CHECK_FALSE(fs::exists(tmp.path / "analysis.old"));
  std::ifstream k(tmp.path / "analysis" / "kurtosis.csv");
  std::string header;
  std::getline(k, header);
  CHECK(header == "layer,head,level,p,examples,n,rank,b2,gaussian_reference,kappa,z,excess_kurtosis,entries");

  // The final checkpoint folder loads too, and a file without hkt's metadata is refused.
  CHECK(load_trained(c.run_dir, "final").weights.find("checkpoint") != std::string::npos);
  CHECK_THROWS_WITH_AS(load_trained((tmp.path / "nothing").string()), doctest::Contains("not found"), Error);
  CHECK_THROWS_WITH_AS(load_trained(tmp.path.string()), doctest::Contains("neither a run folder"), Error);
  save_safetensors((tmp.path / "bare.safetensors").string(), {{"x", zeros({2})}});
  CHECK_THROWS_WITH_AS(load_trained((tmp.path / "bare.safetensors").string()), doctest::Contains("hkt.model_config"),
                       Error);
}

TEST_CASE("MHA and every other kind with one query and key map is analysed as one level, from its own maps") {
  tasks::Splits sp = tasks::make_synthetic(8, 8, 8, 12, 3);
  for (const char* kind : {"mha", "local", "performer", "htransformer"}) {
    CAPTURE(kind);
    nn::ClassifierConfig mc = nn::ClassifierConfig::preset("mha-tiny");
    mc.attention = kind;
    if (mc.attention.kind() == "local") mc.attention.edit<nn::LocalOptions>().window = 3;
    if (mc.attention.kind() == "performer") mc.attention.edit<nn::PerformerOptions>().features = 8;
    if (mc.attention.kind() == "htransformer") mc.attention.edit<nn::HTransformerOptions>().block = 4;
    tasks::fill_model_config(mc, sp.train);
    Generator gen(0);
    nn::SequenceClassifier model(mc, &gen);
    AnalysisOptions opt;
    opt.cost = false;
    opt.eig_samples = 1;
    const Report r = analyze(model, sp.val, opt);
    CHECK(r.json["kurtosis"].size() == 2);  // 1 layer x 2 heads x 1 level
    CHECK(r.json["gates"].is_null());
    CHECK(r.json["cost"].is_null());
    CHECK(r.tables.count("cost.csv") == 0);
    CHECK(r.json["by_level"].size() == 1);
    // The scores are the model's own logits: doubling its Wq doubles the combined scores'
    // eigenvalues, and the kurtosis (scale-free) stays.
    const std::string before = r.json["kurtosis"].dump();
    bool scaled = false;
    for (const auto& [name, p] : model.named_parameters())
      if (name.find(".attn.wq.weight") != std::string::npos) {
        REQUIRE(p.is_contiguous());
        float* w = p.data<float>();
        for (int64_t i = 0; i < p.numel(); ++i) w[i] *= 2.0f;
        scaled = true;
      }
    CHECK(scaled);
    const Report r2 = analyze(model, sp.val, opt);
    CHECK(r2.json["kurtosis"].dump() == before);
    const double max1 = r.json["spectra"]["combined"][0]["max"].get<double>();
    const double max2 = r2.json["spectra"]["combined"][0]["max"].get<double>();
    CHECK(max1 != 0);
    CHECK(max2 == doctest::Approx(2 * max1).epsilon(1e-5));
  }
}
