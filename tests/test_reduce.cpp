// Reductions over any set of dims, with keepdim; gradients; determinism.
#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::test;

TEST_CASE("reduction values") {
  const Tensor x = reshape(arange(0, 24, 1, {DType::Float64}), {2, 3, 4});
  CHECK(sum(x).item<double>() == 276.0);
  CHECK(sum(x, {1}).shape() == Shape{2, 4});
  CHECK(sum(x, {1}).to_vector<double>() == std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57});
  CHECK(sum(x, {0, 2}, true).shape() == Shape{1, 3, 1});
  CHECK(sum(x, {0, 2}).to_vector<double>() == std::vector<double>{60, 92, 124});
  CHECK(sum(x, {-1}).to_vector<double>()[0] == 6.0);
  CHECK(mean(x, {2}).to_vector<double>()[0] == 1.5);
  CHECK(max(x, {1}).to_vector<double>() == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  CHECK(max(x).item<double>() == 23.0);
  // var of 0..3 = 1.6667 (unbiased), 1.25 (population)
  CHECK(var(x, {2}).to_vector<double>()[0] == doctest::Approx(5.0 / 3.0));
  CHECK(var(x, {2}, 0).to_vector<double>()[0] == doctest::Approx(1.25));
  CHECK(sum(arange(5)).item<int64_t>() == 10);
  // Non-contiguous input.
  CHECK(sum(transpose(x, 0, 2), {2}).shape() == Shape{4, 3});
  CHECK(vals(sum(transpose(x, 0, 2), {2})) == vals(transpose(sum(x, {0}), 0, 1)));
  // Empty reductions.
  CHECK(sum(zeros({0, 3}), {0}).to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("float32 sums are accurate and independent of chunking") {
  // 1e6 ones: a naive float accumulation would be exact here too, so use 0.1.
  const Tensor x = full({1000003}, 0.1);
  CHECK(sum(x).item<float>() == doctest::Approx(100000.3).epsilon(1e-6));
  const Tensor y = randn({3, 70001});
  const auto a = sum(y, {1}).to_vector<float>();
  const auto b = sum(y, {1}).to_vector<float>();
  CHECK(a == b);
}

TEST_CASE("reduction gradients") {
  gradcheck([](const std::vector<Tensor>& in) { return sum(in[0]); }, {leaf({3, 4})});
  gradcheck([](const std::vector<Tensor>& in) { return sum(in[0], {0, 2}); }, {leaf({2, 3, 4})});
  gradcheck([](const std::vector<Tensor>& in) { return sum(in[0], {1}, true); }, {transposed_leaf({4, 3, 2})});
  gradcheck([](const std::vector<Tensor>& in) { return mean(in[0], {-1}); }, {leaf({3, 5})});
  gradcheck([](const std::vector<Tensor>& in) { return mean(in[0], {0, 1}, true); }, {transposed_leaf({3, 2})});
  gradcheck([](const std::vector<Tensor>& in) { return max(in[0], {1}); }, {leaf({3, 5})});
  gradcheck([](const std::vector<Tensor>& in) { return max(in[0], {0, 2}, true); }, {transposed_leaf({4, 3, 2})});
  gradcheck([](const std::vector<Tensor>& in) { return var(in[0], {1}); }, {leaf({3, 6})});
  gradcheck([](const std::vector<Tensor>& in) { return var(in[0], {0, 1}, 0, true); }, {transposed_leaf({3, 4})});
  // Ties in max share the gradient equally.
  Tensor t = from_vector(std::vector<double>{2, 5, 5, 1}, {4}).set_requires_grad(true);
  max(t).backward();
  CHECK(t.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0});
  // sum_to inverts broadcasting.
  gradcheck([](const std::vector<Tensor>& in) { return sum_to(in[0], {3, 1}); }, {leaf({2, 3, 4})});
}

TEST_CASE("reduction errors") {
  check_error([] { (void)sum(zeros({2, 3}), {2}); }, "sum: dim 2 is out of range");
  check_error([] { (void)sum(zeros({2, 3}), {1, -1}); }, "given twice");
  check_error([] { (void)max(zeros({0, 3}), {0}); }, "over an empty dim");
  check_error([] { (void)var(zeros({1, 3}), {0}); }, "no degrees of freedom");
  check_error([] { (void)mean(arange(3)); }, "mean: expected a floating tensor");
}

TEST_CASE("column sums (reduced dims outer, kept dims contiguous) give the same bits as the strided walk") {
  // [40000, 37]: three row chunks of the reduction; the same values laid out
  // column-major take the general (one strided walk per output) path.
  manual_seed(11);
  const Tensor x = randn({40000, 37});
  const Tensor xt = transpose(contiguous(transpose(x, 0, 1)), 0, 1);  // same values, strides (1, 40000)
  CHECK(x.strides() != xt.strides());
  CHECK(sum(x, {0}).to_vector<float>() == sum(xt, {0}).to_vector<float>());
  CHECK(mean(x, {0}).to_vector<float>() == mean(xt, {0}).to_vector<float>());
  const Tensor y = randn({5, 300, 7});
  const Tensor yt = transpose(contiguous(transpose(y, 0, 2)), 0, 2);  // same values, other strides
  CHECK(sum(y, {0, 1}).to_vector<float>() == sum(yt, {0, 1}).to_vector<float>());
}
