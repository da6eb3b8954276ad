#include <doctest/doctest.h>

#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"

using namespace hkt;

TEST_CASE("smoke: mul, sum, backward") {
  Tensor a = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  Tensor b = from_vector(std::vector<double>{10, 20, 30}, {3}).set_requires_grad(true);
  Tensor y = sum(a * b + exp(a) * 0.0);
  CHECK(y.item<double>() == doctest::Approx(1 * 10 + 2 * 20 + 3 * 30 + 4 * 10 + 5 * 20 + 6 * 30));
  y.backward();
  CHECK(a.grad().to_vector<double>() == std::vector<double>{10, 20, 30, 10, 20, 30});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{5, 7, 9});
  Tensor t = transpose(a, 0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(contiguous(t).to_vector<double>() == std::vector<double>{1, 4, 2, 5, 3, 6});
}

#include "hkt/ops/gradcheck.hpp"

TEST_CASE("smoke: gradcheck on a broadcast, transposed product") {
  Tensor a = randn({3, 4}, {DType::Float64}).set_requires_grad(true);
  Tensor b = randn({4, 3}, {DType::Float64});
  Tensor bt = transpose(b, 0, 1).detach().set_requires_grad(true);  // non-contiguous leaf
  gradcheck([](const std::vector<Tensor>& in) { return tanh(in[0] * in[1]) / (exp(in[0]) + 1.0); }, {a, bt});
  CHECK_THROWS_AS(gradcheck([](const std::vector<Tensor>& in) { return in[0] * 2.0; },
                            {from_vector(std::vector<float>{1}, {1}).set_requires_grad(true)}),
                  Error);
}
