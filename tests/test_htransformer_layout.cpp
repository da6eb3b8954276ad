// H-Transformer-1D's published layout (hkt/ops/htransformer.hpp,
// docs/htransformer.md): the implied dense attention matrix against a softmax
// over the published block partition written pair by pair here (sharing no
// code with the op); coverage (every pair exactly once, group size 1 within
// Nr, growing with distance) read off the op's own dense matrix; causal
// no-leak; padding.
#include <cmath>
#include <functional>
#include <random>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::test;

namespace {

Tensor random_mask(int64_t B, int64_t T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v;
  for (int64_t i = 0; i < B * T; ++i) v.push_back(rng() % 5 != 0);
  return gt(from_vector(v, {B, T}), 0.0);
}

// The padded length, block and levels from the header's rule, written out again.
struct Geo {
  int64_t Tp, nr, L;
};
Geo geo_of(int64_t T, int64_t Nr) {
  if (T <= 2 * Nr) {
    const int64_t tp = std::max<int64_t>(2, T % 2 ? T + 1 : T);
    return {tp, tp / 2, 1};
  }
  int64_t L = 1;
  while ((Nr << L) < T) ++L;
  return {Nr << L, Nr, L};
}

// The level covering fine pair (i, j): the smallest l whose blocks of nr 2^l hold i and j
// equal or adjacent (-1: causal j > i, not covered).
int64_t level_of(const Geo& g, int64_t i, int64_t j, bool causal) {
  if (causal && j > i) return -1;
  for (int64_t l = 0;; ++l)
    if (std::abs(i / (g.nr << l) - j / (g.nr << l)) <= 1) return l;
}

// The dense matrix W [T, T] of one (b, h) as the published description has it: the score of
// (i, j) is scale q~ . k~ + bias[(j >> l) - (i >> l) + 2 Nr - 1] at the level l covering it, with
// q~, k~ the recursive means of the non-empty halves of the groups of 2^l tokens holding i and
// j (causal q~: the group's first token), and W[i, j] = valid_j exp(s) / sum_j' valid_j' exp(s').
std::vector<double> dense_matrix(const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<bool>& ok, const std::vector<double>& bias, int64_t T, int64_t dh,
                                 int64_t Nr, bool causal, double scale) {
  const Geo g = geo_of(T, Nr);
  auto real = [&](int64_t t) { return t < T && ok[static_cast<size_t>(t)]; };
  // mean(x, t0, l, out): the mean of means over [t0, t0 + 2^l); returns whether non-empty.
  std::function<bool(const std::vector<double>&, int64_t, int64_t, std::vector<double>&)> mean =
      [&](const std::vector<double>& x, int64_t t0, int64_t l, std::vector<double>& out) {
        out.assign(static_cast<size_t>(dh), 0.0);
        if (l == 0) {
          if (!real(t0)) return false;
          for (int64_t e = 0; e < dh; ++e) out[static_cast<size_t>(e)] = x[static_cast<size_t>(t0 * dh + e)];
          return true;
        }
        std::vector<double> a, b;
        const int64_t half = int64_t{1} << (l - 1);
        const int n = int{mean(x, t0, l - 1, a)} + int{mean(x, t0 + half, l - 1, b)};
        for (int64_t e = 0; e < dh; ++e)
          out[static_cast<size_t>(e)] = (a[static_cast<size_t>(e)] + b[static_cast<size_t>(e)]) / std::max(n, 1);
        return n > 0;
      };
  std::vector<double> W(static_cast<size_t>(T * T), 0.0), s(static_cast<size_t>(T)), qc, kc;
  for (int64_t i = 0; i < T; ++i) {
    if (!real(i)) continue;
    double mx = -INFINITY;
    for (int64_t j = 0; j < T; ++j) {
      const int64_t l = level_of(g, i, j, causal);
      s[static_cast<size_t>(j)] = -INFINITY;
      if (l < 0 || !real(j)) continue;
      if (causal) {
        const int64_t first = i >> l << l;
        qc.assign(static_cast<size_t>(dh), 0.0);
        if (real(first))
          for (int64_t e = 0; e < dh; ++e) qc[static_cast<size_t>(e)] = q[static_cast<size_t>(first * dh + e)];
      } else {
        mean(q, i >> l << l, l, qc);
      }
      mean(k, j >> l << l, l, kc);
      double d = 0;
      for (int64_t e = 0; e < dh; ++e) d += qc[static_cast<size_t>(e)] * kc[static_cast<size_t>(e)];
      const int64_t rel = (j >> l) - (i >> l);
      s[static_cast<size_t>(j)] = scale * d + (bias.empty() ? 0.0 : bias[static_cast<size_t>(rel + 2 * Nr - 1)]);
      mx = std::max(mx, s[static_cast<size_t>(j)]);
    }
    double z = 0;
    for (int64_t j = 0; j < T; ++j)
      if (std::isfinite(s[static_cast<size_t>(j)])) z += std::exp(s[static_cast<size_t>(j)] - mx);
    for (int64_t j = 0; j < T; ++j)
      if (std::isfinite(s[static_cast<size_t>(j)]))
        W[static_cast<size_t>(i * T + j)] = std::exp(s[static_cast<size_t>(j)] - mx) / z;
  }
  return W;
}

// The op's dense matrix [B, H, T, T]: the attention of v = the identity.
Tensor op_matrix(const Tensor& q, const Tensor& k, const Tensor& valid, bool causal, double scale, int64_t Nr,
                 const Tensor& bias, bool fused) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
  std::vector<double> id(static_cast<size_t>(T * T), 0.0);
  for (int64_t t = 0; t < T; ++t) id[static_cast<size_t>(t * T + t)] = 1.0;
  const Tensor eye = contiguous(expand(from_vector(id, {1, 1, T, T}), {B, H, T, T}));
  return fused ? htransformer_attention(q, k, eye, valid, causal, scale, Nr, bias)
               : htransformer_attention_reference(q, k, eye, valid, causal, scale, Nr, bias);
}

}  // namespace

TEST_CASE("htransformer geometry and score count (the published layout)") {
  const HtrGeometry g = htransformer_geometry(512, 16);
  CHECK((g.Tp == 512 && g.nr == 16 && g.L == 5));
  const HtrGeometry p = htransformer_geometry(33, 16);  // padded by the op
  CHECK((p.Tp == 64 && p.nr == 16 && p.L == 2));
  const HtrGeometry s = htransformer_geometry(5, 16);  // T <= 2 Nr: one level, exact attention
  CHECK((s.Tp == 6 && s.nr == 3 && s.L == 1));
  CHECK(htransformer_levels(2000, 16) == 7);
  // tests/reference/h1d_published.py --score-count 512 16 [--causal]
  CHECK(htransformer_score_count(512, 16, false) == 37376);
  CHECK(htransformer_score_count(512, 16, true) == 22784);
  CHECK(htransformer_score_count(400, 16, false) == 37376);
  check_error([] { htransformer_geometry(8, 3); }, "block (Nr) even and >= 2");
}

TEST_CASE("htransformer: the implied dense matrix is the softmax over the published partition") {
  struct C {
    int64_t B, H, T, dh, Nr;
  };
  int trial = 0;
  for (const C c : {C{1, 2, 64, 3, 4}, C{2, 1, 50, 4, 4}, C{1, 1, 37, 2, 2}, C{2, 2, 16, 3, 8}, C{1, 1, 100, 2, 6},
                    C{1, 1, 9, 3, 2}, C{1, 2, 5, 2, 4}})
    for (bool causal : {false, true})
      for (int mask = 0; mask < 3; ++mask) {
        ++trial;
        Generator gen(static_cast<uint64_t>(trial));
        const Tensor q = randn({c.B, c.H, c.T, c.dh}, {DType::Float64}, &gen) * 1.5;
        const Tensor k = randn({c.B, c.H, c.T, c.dh}, {DType::Float64}, &gen) * 1.5;
        const Tensor bias = randn({c.H, 4 * c.Nr - 1}, {DType::Float64}, &gen) * 0.3;
        std::vector<int64_t> lens;
        for (int64_t b = 0; b < c.B; ++b) lens.push_back(c.T - 3 * b - 2);
        const Tensor valid = mask == 0 ? Tensor() : mask == 1 ? right_padding(lens, c.T) : random_mask(c.B, c.T, trial);
        INFO("T " << c.T << " Nr " << c.Nr << " causal " << causal << " mask " << mask);
        const std::vector<double> qa = vals(q), ka = vals(k), ba = vals(bias);
        const std::vector<double> va = valid.defined() ? vals(to_dtype(valid, DType::Float64))
                                                       : std::vector<double>(static_cast<size_t>(c.B * c.T), 1.0);
        std::vector<double> want;
        const int64_t n = c.T * c.dh, nb = 4 * c.Nr - 1;
        for (int64_t b = 0; b < c.B; ++b)
          for (int64_t h = 0; h < c.H; ++h) {
            std::vector<bool> ok;
            for (int64_t t = 0; t < c.T; ++t) ok.push_back(va[static_cast<size_t>(b * c.T + t)] > 0.5);
            const auto off = (b * c.H + h) * n;
            const std::vector<double> W =
                dense_matrix({qa.begin() + off, qa.begin() + off + n}, {ka.begin() + off, ka.begin() + off + n}, ok,
                             {ba.begin() + h * nb, ba.begin() + (h + 1) * nb}, c.T, c.dh, c.Nr, causal, 0.7);
            want.insert(want.end(), W.begin(), W.end());
          }
        check_close(vals(op_matrix(q, k, valid, causal, 0.7, c.Nr, bias, true)), want, 1e-12);
        check_close(vals(op_matrix(q, k, valid, causal, 0.7, c.Nr, bias, false)), want, 1e-12);
      }
}

TEST_CASE("htransformer coverage: every pair once, group size 1 within Nr and growing with distance") {
  for (bool causal : {false, true}) {
    const int64_t T = 128, Nr = 8;
    const Geo g = geo_of(T, Nr);
    REQUIRE(g.L == 4);
    // q = k = 0, no bias: every covered pair has weight exp(0), so W[i, j] = 1 / (number of keys i
    // sees) exactly when every pair is covered once (a pair covered twice would weigh double).
    const Tensor z = zeros({1, 1, T, 2}, {DType::Float64});
    const std::vector<double> W0 = vals(op_matrix(z, z, Tensor(), causal, 1.0, Nr, Tensor(), true));
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        const double want = causal ? (j <= i ? 1.0 / static_cast<double>(i + 1) : 0.0) : 1.0 / T;
        REQUIRE(std::abs(W0[static_cast<size_t>(i * T + j)] - want) < 1e-14);
      }
    // Random q, k: the key group of (i, j) is the largest aligned run of 2^l keys around j with one
    // weight in row i.
    Generator gen(5);
    const Tensor q = randn({1, 1, T, 3}, {DType::Float64}, &gen), k = randn({1, 1, T, 3}, {DType::Float64}, &gen);
    const std::vector<double> W = vals(op_matrix(q, k, Tensor(), causal, 1.0, Nr, Tensor(), true));
    auto at = [&](int64_t i, int64_t j) { return W[static_cast<size_t>(i * T + j)]; };
    auto group = [&](int64_t i, int64_t j) {
      int64_t s = 1;
      for (; 2 * s <= T; s *= 2) {
        const int64_t lo = j / (2 * s) * (2 * s);
        bool same = true;
        for (int64_t u = lo; u < lo + 2 * s && same; ++u) same = std::abs(at(i, u) - at(i, j)) <= 1e-13 * at(i, j);
        if (!same) break;
      }
      return s;
    };
    for (int64_t i = 0; i < T; ++i) {
      int64_t last_left = 1, last_right = 1;
      for (int64_t d = 0; d < T; ++d)
        for (int side : {-1, 1}) {
          const int64_t j = i + side * d;
          if (j < 0 || j >= T || (causal && j > i)) continue;
          const int64_t l = level_of(g, i, j, causal), gk = group(i, j);
          INFO("i " << i << " j " << j << " causal " << causal);
          CHECK(gk == (int64_t{1} << l));
          if (d < Nr) CHECK(gk == 1);
          int64_t& last = side < 0 ? last_left : last_right;
          CHECK(gk >= last);  // resolution never increases moving away from the diagonal
          last = gk;
        }
    }
  }
}

TEST_CASE("htransformer causal: no output depends on a later token") {
  const int64_t T = 75, Nr = 4;
  Generator gen(11);
  const Shape s{2, 2, T, 3};
  const Tensor q = randn(s, {DType::Float64}, &gen), k = randn(s, {DType::Float64}, &gen);
  const Tensor v = randn(s, {DType::Float64}, &gen), bias = randn({2, 15}, {DType::Float64}, &gen) * 0.3;
  const Tensor valid = random_mask(2, T, 3);
  for (bool fused : {true, false}) {
    auto run = [&](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& m) {
      return fused ? htransformer_attention(a, b, c, m, true, 0.8, Nr, bias)
                   : htransformer_attention_reference(a, b, c, m, true, 0.8, Nr, bias);
    };
    const Tensor y = run(q, k, v, valid);
    for (int64_t t : {0, 3, 4, 15, 16, 31, 40, 63, 73}) {
      // Everything after t changes: q, k, v and which tokens are padding.
      auto later = [&](const Tensor& x, double add) {
        return cat({narrow(x, 2, 0, t + 1), narrow(x, 2, t + 1, T - t - 1) * -2.0 + add}, 2);
      };
      const Tensor m2 = cat({narrow(valid, 1, 0, t + 1), random_mask(2, T - t - 1, t)}, 1);
      const Tensor y2 = run(later(q, 1.0), later(k, -1.0), later(v, 3.0), m2);
      INFO("fused " << fused << " t " << t);
      check_close(vals(narrow(y2, 2, 0, t + 1)), vals(narrow(y, 2, 0, t + 1)), 1e-13);
    }
  }
}

TEST_CASE("htransformer padding: padded keys get no weight, padded queries give 0") {
  for (bool causal : {false, true}) {
    const int64_t T = 45, Nr = 4;
    Generator gen(21);
    const Shape s{2, 2, T, 3};
    const Tensor q = randn(s, {DType::Float64}, &gen), k = randn(s, {DType::Float64}, &gen);
    const Tensor v = randn(s, {DType::Float64}, &gen), bias = randn({2, 15}, {DType::Float64}, &gen) * 0.3;
    for (const Tensor& valid : {right_padding({45, 20}, T), random_mask(2, T, 9)}) {
      const Tensor y = htransformer_attention(q, k, v, valid, causal, 0.6, Nr, bias);
      // Anything at padded positions: the valid outputs do not move, the padded ones are 0.
      const Tensor keep = reshape(to_dtype(valid, DType::Float64), {2, 1, T, 1});
      const Tensor junk = randn(s, {DType::Float64}, &gen) * 100.0;
      auto spoil = [&](const Tensor& x) { return x * keep + junk * (1.0 - keep); };
      const Tensor y2 = htransformer_attention(spoil(q), spoil(k), spoil(v), valid, causal, 0.6, Nr, bias);
      check_close(vals(y2), vals(y), 1e-13);
      CHECK(max(abs(y * (1.0 - keep))).item<double>() == 0.0);
      // The dense matrix puts no weight on a padded key.
      const std::vector<double> W = vals(op_matrix(q, k, valid, causal, 0.6, Nr, bias, true));
      const std::vector<double> m = vals(to_dtype(valid, DType::Float64));
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t j = 0; j < T; ++j)
          if (m[static_cast<size_t>(b * T + j)] == 0)
            for (int64_t h = 0; h < 2; ++h)
              for (int64_t i = 0; i < T; ++i) REQUIRE(W[static_cast<size_t>(((b * 2 + h) * T + i) * T + j)] == 0.0);
    }
    // An all-valid mask is the same as none; a sequence with no valid token gives 0, not NaN.
    Generator g2(4);
    const Tensor x = randn({1, 1, 40, 2}, {DType::Float64}, &g2);
    check_close(vals(htransformer_attention(x, x, x, right_padding({40}, 40), causal, 1.0, 4)),
                vals(htransformer_attention(x, x, x, Tensor(), causal, 1.0, 4)), 1e-14);
    CHECK(max(abs(htransformer_attention(x, x, x, right_padding({0}, 40), causal, 1.0, 4))).item<double>() == 0.0);
  }
}
