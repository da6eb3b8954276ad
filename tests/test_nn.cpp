// NN ops: softmax / log_softmax, layer_norm, dropout, cross_entropy.
// Forward values by hand, float64 gradient checks, determinism, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/gradcheck.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"
#include "helpers/check.hpp"

using namespace hkt;
using hkt::test::check_close;
using hkt::test::vals;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(std::vector<double> v, const Shape& s) { return from_vector(v, s); }

// A float64 leaf with values in [-1.5, 1.5).
Tensor leaf(const Shape& s, uint64_t seed = 7) {
  Generator g(seed);
  return uniform(s, -1.5, 1.5, {DType::Float64}, &g).set_requires_grad(true);
}

// A non-contiguous float64 leaf of shape [a, b] (the transpose of a [b, a] tensor).
Tensor transposed_leaf(int64_t a, int64_t b, uint64_t seed = 9) {
  Generator g(seed);
  Tensor t = transpose(uniform({b, a}, -1.5, 1.5, {DType::Float64}, &g), 0, 1).detach();
  REQUIRE(!t.is_contiguous());
  return t.set_requires_grad(true);
}

// Expects f() to throw hkt::Error whose message contains every needle.
template <class F>
void check_error(F&& f, std::vector<std::string> needles) {
  try {
    f();
    FAIL("expected an hkt::Error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& n : needles) {
      INFO("message: " << msg << " / expected to contain: " << n);
      CHECK(msg.find(n) != std::string::npos);
    }
  }
}

double lse(std::vector<double> v) {
  double s = 0;
  for (double x : v) s += std::exp(x);
  return std::log(s);
}

}  // namespace

// ---------------------------------------------------------------- softmax

TEST_CASE("softmax / log_softmax forward values") {
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> want = {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s};
  check_close(vals(softmax(f64({1, 2, 3}, {3}))), want);
  check_close(vals(log_softmax(f64({1, 2, 3}, {3}))), {1 - std::log(s), 2 - std::log(s), 3 - std::log(s)});
  check_close(vals(softmax(from_vector(std::vector<float>{1, 2, 3}, {3}))), want, 1e-6);
  // Large logits stay finite; one-element rows give 1 / 0.
  check_close(vals(softmax(f64({1000, 1001}, {2}))), {1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-1.0))});
  check_close(vals(softmax(f64({5, -7}, {2, 1}), -1)), {1, 1});
  check_close(vals(log_softmax(f64({5, -7}, {2, 1}), 1)), {0, 0});
  // A 0-dim tensor is a one-element row.
  CHECK(softmax(scalar_tensor(3.0, DType::Float64)).item<double>() == 1.0);
  // dim 0 of a [2, 2] tensor normalises columns.
  const Tensor c = softmax(f64({0, 1, 2, 5}, {2, 2}), 0);
  check_close(vals(c), {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(4.0)), 1 / (1 + std::exp(-2.0)),
                        1 / (1 + std::exp(-4.0))});
}

TEST_CASE("softmax along an inner dim matches the last-dim path") {
  // inner = 130 > the 64-column block, D = 5: covers partial blocks.
  for (DType dt : {DType::Float64, DType::Float32}) {
    Generator g(3);
    const Tensor x = normal({3, 5, 130}, 0.0, 3.0, {dt}, &g);
    for (bool log : {false, true}) {
      auto op = [&](const Tensor& t, int64_t d) { return log ? log_softmax(t, d) : softmax(t, d); };
      const Tensor a = op(x, 1);
      const Tensor b = permute(op(contiguous(permute(x, {0, 2, 1})), -1), {0, 2, 1});
      check_close(vals(a), vals(b), dt == DType::Float64 ? 1e-13 : 1e-6);
      const Tensor a0 = op(x, 0);
      const Tensor b0 = permute(op(contiguous(permute(x, {1, 2, 0})), 2), {2, 0, 1});
      check_close(vals(a0), vals(b0), dt == DType::Float64 ? 1e-13 : 1e-6);
    }
  }
  // Large enough to run in parallel tasks.
  {
    Generator g(4);
    const Tensor x = normal({64, 40, 70}, 0.0, 2.0, {DType::Float32}, &g);
    check_close(vals(softmax(x, 1)), vals(permute(softmax(contiguous(permute(x, {0, 2, 1}))), {0, 2, 1})), 1e-6);
    check_close(vals(log_softmax(x, 0)), vals(permute(log_softmax(contiguous(permute(x, {1, 2, 0}))), {2, 0, 1})),
                1e-6);
  }
  // Sums to one along the dim.
  const Tensor y = softmax(randn({4, 7, 3}, {DType::Float64}), 1);
  check_close(vals(sum(y, {1})), std::vector<double>(12, 1.0));
}

TEST_CASE("softmax of rows of -inf gives 0 (log_softmax -inf) and zero gradient") {
  // Row 0 all -inf; row 1 partly masked.
  const std::vector<double> v = {-kInf, -kInf, -kInf, 0.0, -kInf, 0.0};
  for (int64_t dim : {int64_t{-1}, int64_t{0}}) {
    // dim 0: the same rows, stored as columns (strided path).
    Tensor x = dim == -1 ? f64(v, {2, 3}) : contiguous(transpose(f64(v, {2, 3}), 0, 1));
    x.set_requires_grad(true);
    const Tensor y = softmax(x, dim);
    const Tensor yc = dim == -1 ? y : contiguous(transpose(y, 0, 1));
    check_close(vals(yc), {0, 0, 0, 0.5, 0, 0.5});
    const Tensor ly = log_softmax(x, dim);
    const Tensor lyc = dim == -1 ? ly : contiguous(transpose(ly, 0, 1));
    check_close(vals(lyc), {-kInf, -kInf, -kInf, -std::log(2.0), -kInf, -std::log(2.0)});
    sum(y * f64({1, 2, 3, 4, 5, 6}, y.shape())).backward();
    for (double gv : vals(x.grad())) CHECK(std::isfinite(gv));
    x.set_grad(Tensor());
    sum(ly * f64({1, 2, 3, 4, 5, 6}, y.shape())).backward();
    const std::vector<double> gl = vals(dim == -1 ? x.grad() : contiguous(transpose(x.grad(), 0, 1)));
    CHECK(gl[0] == 0.0);
    CHECK(gl[1] == 0.0);
    CHECK(gl[2] == 0.0);
  }
  // NaN poisons its row only.
  const Tensor n = softmax(f64({std::nan(""), 1, 1, 1}, {2, 2}));
  const auto nv = vals(n);
  CHECK(std::isnan(nv[0]));
  CHECK(std::isnan(nv[1]));
  CHECK(nv[2] == doctest::Approx(0.5));
}

// ---------------------------------------------------------------- layer_norm

TEST_CASE("layer_norm forward values") {
  const double eps = 1e-5;
  const Tensor x = f64({1, 2, 3, 4, 2, 2, 2, 2}, {2, 4});
  const double rs = 1 / std::sqrt(1.25 + eps), r0 = 1 / std::sqrt(eps);
  check_close(vals(layer_norm(x, Tensor(), Tensor(), eps)),
              {-1.5 * rs, -0.5 * rs, 0.5 * rs, 1.5 * rs, 0 * r0, 0, 0, 0});
  const Tensor w = f64({1, 2, 3, 4}, {4}), b = f64({0.5, 0, -0.5, 1}, {4});
  check_close(vals(layer_norm(x, w, b, eps)),
              {-1.5 * rs + 0.5, -1.0 * rs, 1.5 * rs - 0.5, 6 * rs + 1, 0.5, 0, -0.5, 1});
  check_close(vals(layer_norm(x, w, Tensor(), eps)), {-1.5 * rs, -1.0 * rs, 1.5 * rs, 6 * rs, 0, 0, 0, 0});
  check_close(vals(layer_norm(x, Tensor(), b, eps)),
              {-1.5 * rs + 0.5, -0.5 * rs, 0.5 * rs - 0.5, 1.5 * rs + 1, 0.5, 0, -0.5, 1});
  // 3-D input normalises the last dim only; D = 1 gives the bias.
  const Tensor y3 = layer_norm(reshape(x, {2, 1, 4}), Tensor(), Tensor(), eps);
  CHECK(y3.shape() == Shape{2, 1, 4});
  check_close(vals(layer_norm(f64({3, -1}, {2, 1}), Tensor(), f64({0.25}, {1}))), {0.25, 0.25});
}

TEST_CASE("layer_norm float32 agrees with float64") {
  Generator g(11);
  const Tensor x = normal({37, 129}, 1.0, 2.0, {DType::Float64}, &g);
  const Tensor w = normal({129}, 1.0, 0.5, {DType::Float64}, &g);
  const Tensor b = normal({129}, 0.0, 0.5, {DType::Float64}, &g);
  const Tensor y64 = layer_norm(x, w, b);
  const Tensor y32 = layer_norm(to_dtype(x, DType::Float32), to_dtype(w, DType::Float32), to_dtype(b, DType::Float32));
  CHECK(y32.dtype() == DType::Float32);
  check_close(vals(y32), vals(y64), 1e-5);
}

TEST_CASE("layer_norm matches the composite formula, forward and backward") {
  // 3000 rows: the dweight / dbias reduction runs in several row chunks.
  const double eps = 1e-5;
  for (DType dt : {DType::Float64, DType::Float32}) {
    CAPTURE(dt);
    Generator g(5);
    const Tensor x0 = normal({3000, 33}, 0.5, 2.0, {dt}, &g), w0 = normal({33}, 1.0, 0.5, {dt}, &g),
                 b0 = normal({33}, 0.0, 0.5, {dt}, &g), gy = normal({3000, 33}, 0.0, 1.0, {dt}, &g);
    auto run = [&](bool fused) {
      Tensor x = clone(x0).set_requires_grad(true), w = clone(w0).set_requires_grad(true),
             b = clone(b0).set_requires_grad(true);
      Tensor y = fused ? layer_norm(x, w, b, eps)
                       : (x - mean(x, {-1}, true)) * rsqrt(var(x, {-1}, 0, true) + eps) * w + b;
      sum(y * gy).backward();
      return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad()};
    };
    const auto f = run(true), c = run(false);
    const double tol = dt == DType::Float64 ? 1e-10 : 2e-4;
    for (size_t k = 0; k < 4; ++k) {
      CAPTURE(k);
      check_close(vals(f[k]), vals(c[k]), tol);
    }
    // Deterministic: a second run gives the same bits.
    const auto f2 = run(true);
    for (size_t k = 0; k < 4; ++k) CHECK(vals(f2[k]) == vals(f[k]));
  }
}

// ---------------------------------------------------------------- dropout

TEST_CASE("dropout masks are reproducible and keep about 1 - p") {
  const Tensor x = ones({200, 500});
  Generator g1(42), g2(42), g3(43);
  const Tensor a = dropout(x, 0.3, true, &g1), b = dropout(x, 0.3, true, &g2), c = dropout(x, 0.3, true, &g3);
  CHECK(g1.offset() == 100000);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  CHECK(a.to_vector<float>() != c.to_vector<float>());
  int64_t kept = 0, other = 0;
  const float scale = static_cast<float>(1.0 / 0.7);
  for (float v : a.to_vector<float>()) {
    kept += v == scale;
    other += v != 0.0f && v != scale;
  }
  CHECK(other == 0);
  CHECK(std::abs(static_cast<double>(kept) / 100000.0 - 0.7) < 0.01);
  // The next call continues from the generator's offset: a different mask.
  CHECK(dropout(x, 0.3, true, &g1).to_vector<float>() != a.to_vector<float>());
  // Scaling keeps the expectation.
  CHECK(mean(dropout(x, 0.5, true, &g3)).item<float>() == doctest::Approx(1.0).epsilon(0.02));
}

TEST_CASE("dropout keeps element i when its Philox word x has x / 2^32 >= p, at every length and dtype") {
  // The rule written out: counter (first + i, 0) under the seed, the first word of Philox-4x32-10.
  // The CPU kernel draws eight counters per AVX2 register where it can and the rest one by one;
  // both must give these bits, lengths that are not multiples of 8 and counters whose low word
  // wraps included.
  for (DType dt : {DType::Float32, DType::Float64})
    for (double p : {1e-9, 0.1, 0.3, 0.5, 0.999999})
      for (int64_t n : {1, 7, 8, 9, 23, 1001})
        for (uint64_t first : {uint64_t{0}, uint64_t{0xFFFFFFFFull} - 5, uint64_t{123456789}}) {
          CAPTURE(p);
          CAPTURE(n);
          CAPTURE(first);
          Generator g(0xC0FFEEull + static_cast<uint64_t>(n));
          g.set_offset(first);
          const Tensor m = dropout(ones({n}, {dt}), p, true, &g);
          const std::vector<double> got = to_dtype(m, DType::Float64).to_vector<double>();
          const double scale = dt == DType::Float32 ? static_cast<double>(static_cast<float>(1.0 / (1.0 - p)))
                                                    : 1.0 / (1.0 - p);
          int64_t wrong = 0;
          for (int64_t i = 0; i < n; ++i) {
            const auto r = philox4x32(first + static_cast<uint64_t>(i), 0, 0xC0FFEEull + static_cast<uint64_t>(n));
            const double want = static_cast<double>(r[0]) / 4294967296.0 >= p ? scale : 0.0;
            wrong += got[static_cast<size_t>(i)] != want;
          }
          CHECK(wrong == 0);
        }
}

TEST_CASE("dropout is the identity in eval mode or with p = 0") {
  const Tensor x = randn({3, 4});
  CHECK(dropout(x, 0.5, false).is_same(x));
  CHECK(dropout(x, 0.0, true).is_same(x));
  Generator g(1);
  dropout(x, 0.5, false, &g);
  CHECK(g.offset() == 0);  // no counters used
}

TEST_CASE("dropout mask does not depend on the input's layout") {
  Generator gx(8);
  const Tensor base = randn({6, 9}, {DType::Float64}, &gx);
  const Tensor t = transpose(base, 0, 1);  // non-contiguous [9, 6]
  Generator g1(99), g2(99), g3(99);
  const Tensor a = dropout(base, 0.4, true, &g1), b = dropout(clone(base), 0.4, true, &g2);
  CHECK(a.to_vector<double>() == b.to_vector<double>());
  const Tensor c = dropout(t, 0.4, true, &g3);
  Generator g4(99);
  CHECK(c.to_vector<double>() == dropout(contiguous(t), 0.4, true, &g4).to_vector<double>());
}

TEST_CASE("dropout backward is g * mask") {
  gradcheck(
      [](const std::vector<Tensor>& in) {
        Generator g(2024);  // fresh: the same mask in the analytic and numeric passes
        return dropout(in[0], 0.4, true, &g);
      },
      {leaf({5, 6})});
  gradcheck(
      [](const std::vector<Tensor>& in) {
        Generator g(7);
        return dropout(in[0], 0.25, true, &g);
      },
      {transposed_leaf(4, 5)});
  Tensor x = ones({1000}, {DType::Float64}).set_requires_grad(true);
  Generator g(3);
  const Tensor y = dropout(x, 0.5, true, &g);
  sum(y).backward();
  CHECK(vals(x.grad()) == vals(y));  // x is 1, so y is the mask
}

// ---------------------------------------------------------------- cross_entropy

TEST_CASE("cross_entropy forward values") {
  const Tensor logits = f64({1, 2, 3, 1, 0, -1}, {2, 3});
  const Tensor t = from_vector(std::vector<int64_t>{2, 0}, {2});
  const double l0 = lse({1, 2, 3}) - 3, l1 = lse({1, 0, -1}) - 1;
  CHECK(cross_entropy(logits, t).item<double>() == doctest::Approx((l0 + l1) / 2).epsilon(1e-12));
  CHECK(cross_entropy(logits, t, -100, Reduction::Sum).item<double>() == doctest::Approx(l0 + l1).epsilon(1e-12));
  const Tensor none = cross_entropy(logits, t, -100, Reduction::None);
  CHECK(none.shape() == Shape{2});
  check_close(vals(none), {l0, l1});
  CHECK(cross_entropy(logits, t).shape() == Shape{});
  // float32
  CHECK(cross_entropy(to_dtype(logits, DType::Float32), t).item<float>() ==
        doctest::Approx((l0 + l1) / 2).epsilon(1e-6));
  // Equals the NLL of log_softmax.
  const auto ls = vals(log_softmax(logits));
  CHECK(-(ls[2] + ls[3]) / 2 == doctest::Approx(cross_entropy(logits, t).item<double>()).epsilon(1e-12));
  // Large logits are stable.
  CHECK(std::isfinite(cross_entropy(f64({1000, -1000}, {1, 2}), from_vector(std::vector<int64_t>{1}, {1}))
                          .item<double>()));
}

TEST_CASE("cross_entropy matches log_softmax + NLL on a large batch") {
  Generator g(17);
  const int64_t N = 1500, C = 37;
  std::vector<int64_t> tv(N);
  for (int64_t i = 0; i < N; ++i) tv[static_cast<size_t>(i)] = i % 11 == 0 ? -100 : (i * 7) % C;
  const Tensor t = from_vector(tv, {N});
  for (DType dt : {DType::Float64, DType::Float32}) {
    CAPTURE(dt);
    const Tensor x0 = normal({N, C}, 0.0, 3.0, {dt}, &g);
    Tensor x = clone(x0).set_requires_grad(true);
    const Tensor loss = cross_entropy(x, t, -100, Reduction::None);
    sum(loss * 2.0).backward();
    const auto lv = vals(loss), gx = vals(x.grad()), ls = vals(log_softmax(x0));
    double max_err = 0, max_gerr = 0;
    for (int64_t i = 0; i < N; ++i) {
      const int64_t ti = tv[static_cast<size_t>(i)];
      const double want = ti == -100 ? 0.0 : -ls[static_cast<size_t>(i * C + ti)];
      max_err = std::max(max_err, std::abs(lv[static_cast<size_t>(i)] - want));
      for (int64_t j = 0; j < C; ++j) {
        const double p = std::exp(ls[static_cast<size_t>(i * C + j)]);
        const double gw = ti == -100 ? 0.0 : 2.0 * (p - (j == ti ? 1.0 : 0.0));
        max_gerr = std::max(max_gerr, std::abs(gx[static_cast<size_t>(i * C + j)] - gw));
      }
    }
    CHECK(max_err < (dt == DType::Float64 ? 1e-12 : 1e-5));
    CHECK(max_gerr < (dt == DType::Float64 ? 1e-12 : 1e-5));
  }
}

TEST_CASE("cross_entropy ignore_index") {
  const Tensor logits = f64({1, 2, 3, 1, 0, -1, 0.5, 0.5, 2}, {3, 3});
  const double l0 = lse({1, 2, 3}) - 3, l2 = lse({0.5, 0.5, 2}) - 0.5;
  const Tensor t = from_vector(std::vector<int64_t>{2, -100, 1}, {3});
  CHECK(cross_entropy(logits, t).item<double>() == doctest::Approx((l0 + l2) / 2).epsilon(1e-12));
  CHECK(cross_entropy(logits, t, -100, Reduction::Sum).item<double>() == doctest::Approx(l0 + l2).epsilon(1e-12));
  check_close(vals(cross_entropy(logits, t, -100, Reduction::None)), {l0, 0, l2});
  // A custom ignore_index that is a valid class.
  const Tensor t1 = from_vector(std::vector<int64_t>{2, 1, 1}, {3});
  CHECK(cross_entropy(logits, t1, 1).item<double>() == doctest::Approx(l0).epsilon(1e-12));
  // All ignored: Sum and None give zeros.
  const Tensor all = from_vector(std::vector<int64_t>{-100, -100, -100}, {3});
  CHECK(cross_entropy(logits, all, -100, Reduction::Sum).item<double>() == 0.0);
  check_close(vals(cross_entropy(logits, all, -100, Reduction::None)), {0, 0, 0});
  // Ignored rows get no gradient.
  Tensor x = clone(logits).set_requires_grad(true);
  cross_entropy(x, t).backward();
  const auto gx = vals(x.grad());
  CHECK(gx[3] == 0.0);
  CHECK(gx[4] == 0.0);
  CHECK(gx[5] == 0.0);
  CHECK(gx[0] + gx[1] + gx[2] == doctest::Approx(0.0).epsilon(1e-12));
}

TEST_CASE("cross_entropy gradcheck") {
  const Tensor t = from_vector(std::vector<int64_t>{0, 4, 2, 4, 1}, {5});
  const Tensor ti = from_vector(std::vector<int64_t>{0, -100, 2, 4, -100}, {5});
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    for (const Tensor& tt : {t, ti}) {
      gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], tt, -100, r); },
                {leaf({5, 5}, 21)});
    }
    // Non-contiguous logits [5, 3], and a non-contiguous targets view.
    const Tensor t3 = from_vector(std::vector<int64_t>{2, 9, 0, 9, 1, 9, 2, 9, 0, 9}, {5, 2});
    const Tensor t3s = select(t3, 1, 0);
    REQUIRE(!t3s.is_contiguous());
    gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t3s, -100, r); },
              {transposed_leaf(5, 3)});
    // One class.
    gradcheck([&](const std::vector<Tensor>& in) {
      return cross_entropy(in[0], from_vector(std::vector<int64_t>{0, 0}, {2}), -100, r);
    }, {leaf({2, 1}, 22)});
  }
  // Downstream use of the loss.
  gradcheck([&](const std::vector<Tensor>& in) { return exp(cross_entropy(in[0], ti)) * 0.5; }, {leaf({5, 5}, 23)});
}

// ---------------------------------------------------------------- errors

TEST_CASE("nn op errors") {
  const Tensor x = randn({2, 3});
  const Tensor xi = from_vector(std::vector<int64_t>{1, 2}, {2});
  // softmax
  check_error([&] { softmax(x, 2); }, {"softmax"});
  check_error([&] { log_softmax(x, -3); }, {"log_softmax"});
  check_error([&] { softmax(xi); }, {"softmax", "int64"});
  // layer_norm
  check_error([&] { layer_norm(x, ones({4}), Tensor()); }, {"layer_norm", "weight", "[3]", "[4]"});
  check_error([&] { layer_norm(x, Tensor(), ones({3}, {DType::Float64})); }, {"layer_norm", "bias", "float64"});
  check_error([&] { layer_norm(xi, Tensor(), Tensor()); }, {"layer_norm", "int64"});
  CHECK_THROWS_AS(layer_norm(scalar_tensor(1.0), Tensor(), Tensor()), Error);
  CHECK_THROWS_AS(layer_norm(zeros({2, 0}), Tensor(), Tensor()), Error);
  CHECK_THROWS_AS(layer_norm(x, Tensor(), Tensor(), -1.0), Error);
  // dropout
  check_error([&] { dropout(x, 1.0, true); }, {"dropout", "[0, 1)"});
  CHECK_THROWS_AS(dropout(x, -0.1, true), Error);
  CHECK_THROWS_AS(dropout(x, 1.5, false), Error);
  CHECK_THROWS_AS(dropout(xi, 0.5, true), Error);
  // cross_entropy
  const Tensor t = from_vector(std::vector<int64_t>{0, 2}, {2});
  check_error([&] { cross_entropy(randn({6}), t); }, {"cross_entropy", "[N, C]", "[6]"});
  check_error([&] { cross_entropy(x, to_dtype(t, DType::Float32)); }, {"cross_entropy", "int64", "float32"});
  check_error([&] { cross_entropy(x, from_vector(std::vector<int64_t>{0, 1, 2}, {3})); },
              {"cross_entropy", "[2]", "[3]"});
  check_error([&] { cross_entropy(x, from_vector(std::vector<int64_t>{0, 1}, {1, 2})); }, {"cross_entropy"});
  check_error([&] { cross_entropy(x, from_vector(std::vector<int64_t>{1, 3}, {2})); },
              {"cross_entropy", "target 3", "row 1", "[0, 3)"});
  check_error([&] { cross_entropy(x, from_vector(std::vector<int64_t>{-1, 0}, {2})); },
              {"target -1", "row 0"});
  check_error([&] { cross_entropy(x, from_vector(std::vector<int64_t>{-100, -100}, {2})); },
              {"cross_entropy", "mean", "ignore_index"});
  check_error([&] { cross_entropy(reshape(xi, {1, 2}), from_vector(std::vector<int64_t>{0}, {1})); },
              {"cross_entropy", "floating", "int64"});
}
