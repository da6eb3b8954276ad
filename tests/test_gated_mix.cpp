// gated_mix (the hybrid head's gate, one fused op): forward and gradients
// against the composite w * a + (1 - w) * b, float64 gradient checks,
// reproducibility across thread counts, errors.
#include "helpers/check.hpp"
#include "hkt/ops/threads.hpp"

using namespace hkt;
using namespace hkt::test;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, DType dt = DType::Float64, double lo = -1.0, double hi = 1.0) {
  Generator g(seed);
  return uniform(s, lo, hi, {dt}, &g);
}

Tensor composite(const Tensor& a, const Tensor& b, const Tensor& w) { return w * a + (1.0 - w) * b; }

}  // namespace

TEST_CASE("gated_mix: a tiny example by hand") {
  // w = [0.25, 1]: channel 0 is a quarter a plus three quarters b, channel 1 is a.
  Tensor a = from_vector(std::vector<double>{4, 5, 8, 9}, {2, 2});
  Tensor b = from_vector(std::vector<double>{0, 1, 4, 3}, {2, 2});
  Tensor w = from_vector(std::vector<double>{0.25, 1}, {2});
  CHECK(gated_mix(a, b, w).to_vector<double>() == std::vector<double>{1, 5, 5, 9});
}

TEST_CASE("gated_mix: forward and gradients match the composite on many shapes") {
  const std::vector<Shape> shapes = {{1}, {7}, {3, 1}, {2, 5}, {4, 3, 8}, {2, 7, 33}, {3, 257, 16}, {2, 1000, 12},
                                     {2, 3, 4, 5}};
  uint64_t seed = 1;
  for (const Shape& s : shapes)
    for (DType dt : {DType::Float64, DType::Float32}) {
      INFO("shape " << shape_str(s) << " " << dt);
      const int64_t C = s.back();
      const Tensor a0 = rnd(s, seed++, dt), b0 = rnd(s, seed++, dt), w0 = rnd({C}, seed++, dt, 0, 1),
                   g = rnd(s, seed++, dt);
      auto run = [&](bool fused) {
        Tensor a = a0.detach().set_requires_grad(true), b = b0.detach().set_requires_grad(true),
               w = w0.detach().set_requires_grad(true);
        Tensor y = fused ? gated_mix(a, b, w) : composite(a, b, w);
        y.backward(g);
        return std::vector<std::vector<double>>{vals(y), vals(a.grad()), vals(b.grad()), vals(w.grad())};
      };
      const auto f = run(true), c = run(false);
      // The forward rounds exactly as the composite does.
      CHECK(f[0] == c[0]);
      const double tol = dt == DType::Float64 ? 1e-12 : 1e-5;
      const char* what[] = {"y", "da", "db", "dw"};
      for (size_t q = 1; q < 4; ++q) {
        INFO(what[q]);
        check_close(f[q], c[q], tol);
      }
    }
}

TEST_CASE("gated_mix: float64 gradients") {
  auto f = [](const std::vector<Tensor>& in) { return gated_mix(in[0], in[1], in[2]); };
  SUBCASE("2-D") { gradcheck(f, {leaf({5, 4}), leaf({5, 4}, -1.5, 1.5, 8), leaf({4}, 0, 1, 9)}); }
  SUBCASE("3-D, odd sizes") { gradcheck(f, {leaf({2, 7, 3}), leaf({2, 7, 3}, -1.5, 1.5, 8), leaf({3}, -1, 2, 9)}); }
  SUBCASE("non-contiguous a and b") {
    gradcheck(f, {transposed_leaf({3, 4, 2}), transposed_leaf({3, 4, 2}, -1.5, 1.5, 10), leaf({2}, 0, 1, 9)});
  }
  SUBCASE("w broadcast from a smaller tensor, inside a larger graph") {
    gradcheck([](const std::vector<Tensor>& in) {
      const Tensor w = reshape(expand(reshape(sigmoid(in[2]), {2, 1}), {2, 3}), {6});
      const Tensor y = gated_mix(tanh(in[0]), in[1] * in[1], w);
      return gated_mix(y, in[0], w);
    }, {leaf({3, 6}), leaf({3, 6}, -1.5, 1.5, 8), leaf({2}, -1, 1, 9)});
  }
}

TEST_CASE("gated_mix: only the needed gradients") {
  Tensor a = leaf({4, 3}), b = rnd({4, 3}, 2), w = rnd({3}, 3);
  sum(gated_mix(a, b, w)).backward();
  CHECK(a.grad().defined());
  Tensor a2 = rnd({4, 3}, 4), b2 = rnd({4, 3}, 5), w2 = leaf({3});
  sum(gated_mix(a2, b2, w2)).backward();
  CHECK(w2.grad().defined());
  CHECK(!gated_mix(a2, b2, w).requires_grad());
  // Empty rows: dw is zero.
  Tensor we = leaf({3});
  sum(gated_mix(rnd({0, 3}, 6), rnd({0, 3}, 7), we)).backward();
  CHECK(vals(we.grad()) == std::vector<double>{0, 0, 0});
}

TEST_CASE("gated_mix: bad input names what is wrong") {
  const Tensor a = rnd({2, 3}, 1), b = rnd({2, 3}, 2), w = rnd({3}, 3);
  check_error([&] { (void)gated_mix(a, rnd({3, 2}, 4), w); }, "b must have the shape of a [2, 3]");
  check_error([&] { (void)gated_mix(a, b, rnd({2}, 5)); }, "w must have shape [3]");
  check_error([&] { (void)gated_mix(a, to_dtype(b, DType::Float32), w); }, "b is float32 but a is float64");
  check_error([&] { (void)gated_mix(rnd({}, 6), rnd({}, 7), w); }, "scalar");
  check_error([&] { (void)gated_mix(a, b, Tensor()); }, "w is undefined");
  check_error([&] { (void)gated_mix(from_vector(std::vector<int64_t>{1, 2}, {2}), from_vector(std::vector<int64_t>{1, 2}, {2}),
                                    from_vector(std::vector<int64_t>{1, 2}, {2})); },
              "floating");
}
