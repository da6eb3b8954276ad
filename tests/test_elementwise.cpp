// Elementwise ops: forward values, float64 gradient checks, broadcasting, errors.
#include <cmath>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::test;

TEST_CASE("unary forward values") {
  const Tensor x = from_vector(std::vector<double>{-2.0, -0.5, 0.0, 0.5, 2.0}, {5});
  auto same = [](const Tensor& t, std::vector<double> want) {
    const auto got = vals(t);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
  };
  same(neg(x), {2, 0.5, 0, -0.5, -2});
  same(relu(x), {0, 0, 0, 0.5, 2});
  same(abs(x), {2, 0.5, 0, 0.5, 2});
  same(exp(x), {std::exp(-2.0), std::exp(-0.5), 1, std::exp(0.5), std::exp(2.0)});
  same(tanh(x), {std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(0.5), std::tanh(2.0)});
  same(sigmoid(x), {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5, 1 / (1 + std::exp(-0.5)),
                    1 / (1 + std::exp(-2.0))});
  // GELU(1) exact = 0.8413447460685429; tanh form = 0.8411919906082768
  const Tensor one = from_vector(std::vector<double>{1.0}, {1});
  CHECK(gelu(one).item<double>() == doctest::Approx(0.8413447460685429).epsilon(1e-12));
  CHECK(gelu(one, true).item<double>() == doctest::Approx(0.8411919906082768).epsilon(1e-12));
  const Tensor p = from_vector(std::vector<double>{0.25, 4.0}, {2});
  same(sqrt(p), {0.5, 2});
  same(rsqrt(p), {2, 0.5});
  same(log(p), {std::log(0.25), std::log(4.0)});
  same(clamp(x, -1.0, 1.0), {-1, -0.5, 0, 0.5, 1});
  same(pow(p, 2.0), {0.0625, 16});
}

TEST_CASE("softplus, log1p and expm1: values, stability and gradients at the extremes") {
  const Tensor x = from_vector(std::vector<double>{-1000.0, -30.0, -1.0, 0.0, 1.0, 30.0, 1000.0}, {7});
  const std::vector<double> sp = vals(softplus(x));
  CHECK(sp[0] == 0.0);                                 // log1p(exp(-1000)): no log(0), no -inf
  CHECK(sp[1] == doctest::Approx(std::exp(-30.0)).epsilon(1e-12));
  CHECK(sp[2] == doctest::Approx(std::log1p(std::exp(-1.0))).epsilon(1e-15));
  CHECK(sp[3] == doctest::Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(sp[4] == doctest::Approx(1.0 + std::log1p(std::exp(-1.0))).epsilon(1e-15));
  CHECK(sp[6] == 1000.0);                              // no overflow of exp(1000)
  // float32: the same, and x itself above ~17 (PyTorch's threshold-20 value).
  const std::vector<float> sp32 = softplus(to_dtype(x, DType::Float32)).to_vector<float>();
  CHECK(sp32[0] == 0.0f);
  CHECK(sp32[5] == 30.0f);
  CHECK(sp32[6] == 1000.0f);
  // The gradient is sigmoid(x): 0 and 1 at the extremes, never NaN.
  const Tensor xl = x.detach().set_requires_grad(true);
  sum(softplus(xl)).backward();
  const std::vector<double> g = xl.grad().to_vector<double>();
  CHECK(g[0] == 0.0);
  CHECK(g[3] == 0.5);
  CHECK(g[6] == 1.0);
  // log1p and expm1 keep the digits log(1 + x) and exp(x) - 1 lose near 0.
  const Tensor tiny = from_vector(std::vector<double>{1e-10, -1e-10}, {2});
  CHECK(vals(log1p(tiny))[0] == doctest::Approx(1e-10 - 0.5e-20).epsilon(1e-15));
  CHECK(vals(expm1(tiny))[1] == doctest::Approx(-1e-10 + 0.5e-20).epsilon(1e-15));
  CHECK(to_dtype(log1p(tiny), DType::Float32).to_vector<float>()[0] == doctest::Approx(1e-10f).epsilon(1e-6));
  CHECK(std::isinf(vals(log1p(from_vector(std::vector<double>{-1.0}, {1})))[0]));
  CHECK(vals(expm1(from_vector(std::vector<double>{-1000.0}, {1})))[0] == -1.0);
}

TEST_CASE("binary ops broadcast by NumPy rules") {
  const Tensor a = from_vector(std::vector<float>{1, 2, 3}, {3, 1});
  const Tensor b = from_vector(std::vector<float>{10, 20}, {1, 2});
  const Tensor c = a + b;
  CHECK(c.shape() == Shape{3, 2});
  CHECK(c.to_vector<float>() == std::vector<float>{11, 21, 12, 22, 13, 23});
  CHECK((a * b).to_vector<float>() == std::vector<float>{10, 20, 20, 40, 30, 60});
  CHECK((b - a).to_vector<float>() == std::vector<float>{9, 19, 8, 18, 7, 17});
  CHECK((b / 2.0).to_vector<float>() == std::vector<float>{5, 10});
  CHECK((2.0 - b).to_vector<float>() == std::vector<float>{-8, -18});
  CHECK(maximum(a, 2.0).to_vector<float>() == std::vector<float>{2, 2, 3});
  CHECK(minimum(a, 2.0).to_vector<float>() == std::vector<float>{1, 2, 2});
  // A 0-d operand and a 4-d operand.
  const Tensor s = scalar_tensor(3.0);
  CHECK((s * ones({2, 1, 2, 1})).shape() == Shape{2, 1, 2, 1});
  // Non-contiguous operands.
  const Tensor m = reshape(arange(0, 6, 1, {DType::Float32}), {2, 3});
  CHECK((transpose(m, 0, 1) + 0.0).to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  // Int64 arithmetic and comparisons.
  const Tensor i = arange(4);
  CHECK((i * i).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 4, 9});
  CHECK(gt(i, 1.0).to_vector<bool>() == std::vector<bool>{false, false, true, true});
  CHECK(eq(m, transpose(transpose(m, 0, 1), 0, 1)).to_vector<bool>() == std::vector<bool>(6, true));
}

TEST_CASE("unary gradients (float64 central differences)") {
  using UF = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, UF>> fns = {
      {"neg", neg},   {"exp", exp},         {"tanh", tanh},         {"sigmoid", sigmoid}, {"relu", relu},
      {"abs", abs},   {"gelu_tanh", gelu_tanh}, {"gelu_erf", gelu_erf}, {"square", square},
      {"softplus", softplus}, {"expm1", expm1}};
  for (const auto& [name, fn] : fns) {
    const UF f = fn;  // a copy: clang 14 cannot capture a structured binding
    SUBCASE(name) {
      gradcheck([f](const std::vector<Tensor>& in) { return f(in[0]); }, {leaf({3, 5})});
      gradcheck([f](const std::vector<Tensor>& in) { return f(in[0]); }, {transposed_leaf({4, 3})});
    }
  }
  SUBCASE("positive-domain ops") {
    for (UF f : {UF(log), UF(sqrt), UF(rsqrt), UF(log1p)}) {
      gradcheck([f](const std::vector<Tensor>& in) { return f(in[0]); }, {leaf({2, 7}, 0.3, 2.0)});
      gradcheck([f](const std::vector<Tensor>& in) { return f(in[0]); }, {transposed_leaf({3, 2}, 0.3, 2.0)});
    }
  }
  SUBCASE("clamp") {
    gradcheck([](const std::vector<Tensor>& in) { return clamp(in[0], -0.7, 0.9); }, {leaf({4, 6})});
  }
}

TEST_CASE("binary gradients with broadcasting and non-contiguous operands") {
  using BF = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<const char*, BF>> fns = {{"add", add}, {"sub", sub}, {"mul", mul},
                                                       {"div", div}, {"maximum", maximum}, {"minimum", minimum}};
  for (const auto& [name, fn] : fns) {
    const BF f = fn;  // a copy: clang 14 cannot capture a structured binding
    SUBCASE(name) {
      auto F = [f](const std::vector<Tensor>& in) { return f(in[0], in[1]); };
      gradcheck(F, {leaf({3, 4}), leaf({3, 4}, 0.5, 2.0, 3)});        // same shape
      gradcheck(F, {leaf({2, 3, 4}), leaf({4}, 0.5, 2.0, 3)});        // trailing broadcast
      gradcheck(F, {leaf({3, 1}), leaf({1, 4}, 0.5, 2.0, 3)});        // both broadcast
      gradcheck(F, {transposed_leaf({4, 3}), leaf({4, 1}, 0.5, 2.0, 3)});  // non-contiguous
      gradcheck(F, {leaf({}), leaf({2, 3}, 0.5, 2.0, 3)});            // 0-d operand
    }
  }
  SUBCASE("pow") {
    auto F = [](const std::vector<Tensor>& in) { return pow(in[0], in[1]); };
    gradcheck(F, {leaf({3, 4}, 0.5, 2.0), leaf({4}, -1.5, 1.5, 3)});
    gradcheck([](const std::vector<Tensor>& in) { return pow(in[0], 3.0); }, {leaf({5})});
  }
  SUBCASE("only the inputs that require grad receive one") {
    Tensor a = leaf({2, 2});
    Tensor b = from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
    sum(a * b).backward();
    CHECK(a.grad().defined());
    CHECK(!b.grad().defined());
  }
}

TEST_CASE("elementwise errors name the op and the shapes") {
  const Tensor a = zeros({2, 3});
  check_error([&] { (void)add(a, zeros({4})); }, "add: shapes [2, 3] and [4] cannot be broadcast");
  check_error([&] { (void)mul(a, zeros({2, 3}, {DType::Float64})); }, "mul: dtype mismatch");
  check_error([&] { (void)exp(arange(3)); }, "exp: expected a floating tensor");
  check_error([&] { (void)clamp(a, 1.0, -1.0); }, "clamp: lower bound");
  check_error([&] { (void)div(arange(3), arange(3)); }, "div: no kernel for int64");
}

TEST_CASE("gelu_erf float32 (vectorised fast path) against float64") {
  // 100003 points on [-10, 10]: several parallel chunks and a scalar tail.
  const int64_t n = 100003;
  std::vector<double> xs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xs[static_cast<size_t>(i)] = -10.0 + 20.0 * static_cast<double>(i) / (n - 1);
  const Tensor x64 = from_vector(xs, {n}).set_requires_grad(true);
  const Tensor x32 = to_dtype(from_vector(xs, {n}), DType::Float32).detach().set_requires_grad(true);
  sum(gelu_erf(x64)).backward();
  sum(gelu_erf(x32)).backward();
  const std::vector<double> y64 = gelu_erf(x64).detach().to_vector<double>();
  const std::vector<float> y32 = gelu_erf(x32).detach().to_vector<float>();
  const std::vector<double> g64 = x64.grad().to_vector<double>();
  const std::vector<float> g32 = x32.grad().to_vector<float>();
  double worst_y = 0, worst_g = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    // Compare with the float64 result at the float32 input.
    const double xf = static_cast<double>(static_cast<float>(xs[i]));
    const double yr = 0.5 * xf * (1 + std::erf(xf / std::sqrt(2.0)));
    const double gr = 0.5 * (1 + std::erf(xf / std::sqrt(2.0))) + xf * std::exp(-0.5 * xf * xf) / std::sqrt(2 * M_PI);
    // 1 + erf cancels for negative x in float32 (as in the scalar libm path),
    // so the error is measured against the size of x, not of the result.
    worst_y = std::max(worst_y, std::abs(y32[i] - yr) / (1 + std::abs(xf)));
    worst_g = std::max(worst_g, std::abs(g32[i] - gr));
    (void)y64, (void)g64;
  }
  MESSAGE("gelu_erf float32: max |error| / (1 + |x|) " << worst_y << " (value), max |error| " << worst_g
                                                        << " (gradient)");
  CHECK(worst_y < 2e-6);
  CHECK(worst_g < 2e-6);
}
