// Performer's FAVOR+ details (issue 68): the number of features, the additive
// epsilon, a key stabiliser that cannot underflow every feature (float32
// arguments all below -87, with and without padding), and the redraw policies
// (every N training forwards, never, every call as LRA's JAX code).
#include <cmath>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

// x' w^T - |x'|^2 / 2, x' = x dh^(-1/4): the arguments of FAVOR+'s exponentials, in float64.
std::vector<double> arguments(const Tensor& x, const Tensor& w) {
  const Tensor x64 = to_dtype(x, DType::Float64), w64 = to_dtype(w, DType::Float64);
  const Tensor xs = x64 * std::pow(static_cast<double>(x.size(3)), -0.25);
  return vals(matmul(xs, transpose(w64, 0, 1)) - 0.5 * sum(xs * xs, {-1}, true));
}

}  // namespace

TEST_CASE("Performer defaults: m = 256 features (performer-small and PerformerConfig), epsilon 1e-6") {
  CHECK(PerformerConfig{}.features == 256);
  CHECK(PerformerConfig{}.epsilon == 1e-6);
  CHECK(ClassifierConfig::preset("performer-small").attention.get<PerformerOptions>().features == 256);
  CHECK(PerformerOptions{}.features == 64);  // the JSON of every other kind holds 64, as archived configs do
  CHECK(ClassifierConfig::preset("hkt-small").to_json().find("\"features\": 64") != std::string::npos);
}

TEST_CASE("favor_features: every feature is at least eps / sqrt(m); eps = 0 is the bare map") {
  Generator g(1);
  const Tensor x = randn({2, 2, 9, 4}, {DType::Float64}, &g), w = orthogonal_features(8, 4, 3, DType::Float64);
  for (bool is_query : {true, false}) {
    const std::vector<double> a = vals(favor_features(x, w, is_query, Tensor(), 1e-3));
    const std::vector<double> b = vals(favor_features(x, w, is_query, Tensor(), 0.0));
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i] >= 1e-3 / std::sqrt(8.0));
      CHECK(std::abs(a[i] - b[i] - 1e-3 / std::sqrt(8.0)) < 1e-15);
    }
  }
}

TEST_CASE("favor_features: float32 arguments all below -87 underflow no row, padded keys or not") {
  // Large queries and keys: every argument x' w - |x'|^2 / 2 is below -87, so exp() of the raw
  // arguments is 0 in float32. The stabilisers shift each query row to its max and the keys to
  // their max over the valid keys; padded keys (zeroed, arguments 0) must not set that max.
  const int64_t B = 2, H = 2, T = 12, dh = 8, m = 16;
  Generator g(7);
  const Tensor q = randn({B, H, T, dh}, {}, &g) * 20.0 + 15.0, k = randn({B, H, T, dh}, {}, &g) * 20.0 - 15.0;
  const Tensor v = randn({B, H, T, dh}, {}, &g);
  const Tensor w = orthogonal_features(m, dh, 4);
  for (const Tensor& x : {q, k})
    for (double a : arguments(x, w)) REQUIRE(a < -87.0);
  const Tensor valid = right_padding({T, 7}, T);
  const Tensor keep = reshape(to_dtype(valid, DType::Float32), {B, 1, T, 1});
  const Tensor kz = k * keep;  // padded keys zeroed, as PerformerAttention does
  const Tensor pq = favor_features(q, w, true), pk = favor_features(kz, w, false, valid);
  const std::vector<double> fq = vals(pq), fk = vals(pk), kv = vals(to_dtype(valid, DType::Float64));
  for (int64_t row = 0; row < B * H * T; ++row) {
    double mq = 0;
    for (int64_t j = 0; j < m; ++j) mq = std::max(mq, fq[static_cast<size_t>(row * m + j)]);
    CHECK(mq >= 1.0 / std::sqrt(static_cast<double>(m)));  // the row's max feature is exp(0)
    for (int64_t j = 0; j < m; ++j) CHECK(fk[static_cast<size_t>(row * m + j)] > 0.0);  // eps: nothing is 0
  }
  // The output: finite, not 0, and the valid rows equal those of the cut sequence (the padded keys
  // took no part) and the float64 computation.
  const Tensor y = linear_attention(pq, pk, v, valid, false);
  const std::vector<double> yv = vals(y);
  for (double e : yv) REQUIRE(std::isfinite(e));
  CHECK(max(abs(to_dtype(y, DType::Float64))).item<double>() > 0.1);
  auto cut = [](const Tensor& t, int64_t b, int64_t n) { return contiguous(narrow(narrow(t, 0, b, 1), 2, 0, n)); };
  const Tensor y1 = linear_attention(favor_features(cut(q, 1, 7), w, true), favor_features(cut(k, 1, 7), w, false),
                                     cut(v, 1, 7), Tensor(), false);
  check_close(vals(cut(y, 1, 7)), vals(y1), 1e-5);
  auto d = [](const Tensor& t) { return to_dtype(t, DType::Float64); };
  const Tensor y64 = linear_attention(favor_features(d(q), d(w), true), favor_features(d(kz), d(w), false, valid),
                                      d(v), valid, false);
  check_close(yv, vals(y64), 1e-4);
  // Causal keys (eps before the shift): no zero feature, a finite output equal to float64's.
  const Tensor pkc = favor_features(kz, w, false, valid, 1e-6, true);
  for (double f : vals(pkc)) REQUIRE(f > 0.0);
  const Tensor yc = linear_attention(pq, pkc, v, valid, true);
  for (double e : vals(yc)) REQUIRE(std::isfinite(e));
  const Tensor yc64 = linear_attention(favor_features(d(q), d(w), true),
                                       favor_features(d(kz), d(w), false, valid, 1e-6, true), d(v), valid, true);
  check_close(vals(yc), vals(yc64), 1e-4);
}

TEST_CASE("favor_features with eps, padding and causal keys: float64 gradient checks") {
  const Tensor q = leaf({2, 2, 6, 4}, -1.5, 1.5, 1), k = leaf({2, 2, 6, 4}, -1.5, 1.5, 2);
  const Tensor v = leaf({2, 2, 6, 3}, -1.5, 1.5, 3);
  const Tensor w = orthogonal_features(8, 4, 3, DType::Float64), valid = right_padding({6, 4}, 6);
  for (bool causal : {false, true})
    for (double eps : {1e-6, 0.05})
      gradcheck([&](const std::vector<Tensor>& in) {
        return linear_attention(favor_features(in[0], w, true, Tensor(), eps),
                                favor_features(in[1], w, false, valid, eps, causal), in[2], valid, causal, 4);
      }, {q, k, v});
}

TEST_CASE("PerformerAttention: redraw_interval = -1 redraws on every call, seeded from the queries") {
  PerformerConfig p;
  p.dim = 8, p.heads = 2, p.features = 8, p.redraw_interval = -1, p.seed = 5;
  Generator g(2);
  p.gen = &g;
  PerformerAttention a(p);
  const Tensor x1 = randn({1, 5, 8}, {}, &g), x2 = randn({1, 5, 8}, {}, &g);
  a.eval();  // evaluation too
  a(x1);
  const std::vector<double> f1 = vals(a.features);
  CHECK(f1 != vals(orthogonal_features(8, 4, 5)));
  const std::vector<double> y1 = vals(a(x1));
  CHECK(vals(a.features) == f1);  // the same input meets the same features
  a(x2);
  CHECK(vals(a.features) != f1);
  a.train();
  CHECK(vals(a(x1)) == y1);  // no dropout in the core: the same output in training
  CHECK(vals(a.draws)[0] == 0);  // the count of the interval schedule is not used
}
