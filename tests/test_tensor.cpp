// Tensors: factories, dtypes, printing, random numbers, copies.
#include <sstream>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::test;

TEST_CASE("factories and metadata") {
  Tensor z = zeros({2, 3});
  CHECK(z.dtype() == DType::Float32);
  CHECK(z.device() == Device::cpu());
  CHECK(z.numel() == 6);
  CHECK(z.strides() == Strides{3, 1});
  CHECK(z.is_contiguous());
  CHECK(ones({2}, {DType::Float64}).to_vector<double>() == std::vector<double>{1, 1});
  CHECK(full({2}, 7.0, {DType::Int64}).to_vector<int64_t>() == std::vector<int64_t>{7, 7});
  CHECK(arange(5).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(1, 2, 0.25, {DType::Float64}).to_vector<double>() == std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(from_vector(std::vector<int64_t>{1, 2}, {2, 1}).shape() == Shape{2, 1});
  CHECK(scalar_tensor(2.5).dim() == 0);
  CHECK(scalar_tensor(2.5).item<float>() == 2.5f);
  CHECK(to_dtype(full({1}, 2.7), DType::Int64).item<int64_t>() == 2);
  CHECK(zeros({0, 4}).numel() == 0);
  check_error([] { (void)from_vector(std::vector<float>{1, 2, 3}, {2, 2}); }, "3 values do not fill shape [2, 2]");
  check_error([] { (void)zeros({2}).data<double>(); }, "requested float64 but the tensor is float32");
  check_error([] { (void)zeros({2}).item<float>(); }, "item: tensor has 2 elements");
  check_error([] { (void)zeros({-1}); }, "negative dimension");
  check_error([] { (void)zeros({2}).to_vector<float>()[0]; (void)Tensor().shape(); }, "undefined Tensor");
  // "no backend for device cuda:0" (CPU-only build) or "... (cuda:0) but no CUDA device is available" (no GPU).
  if (!cuda_is_available()) check_error([] { (void)zeros({1}, {DType::Float32, Device::cuda()}); }, "cuda:0");
}

TEST_CASE("printing shows values, shape and dtype") {
  std::ostringstream os;
  os << from_vector(std::vector<float>{1, 2.5, -3}, {3});
  CHECK(os.str() == "Tensor([1, 2.5, -3], shape=[3], dtype=float32)");
  const std::string big = arange(100).str();
  CHECK(big.find("..., 97, 98, 99]") != std::string::npos);
  CHECK(big.find("shape=[100], dtype=int64") != std::string::npos);
}

TEST_CASE("counter-based random numbers are seeded and reproducible") {
  Generator g1(42), g2(42), g3(43);
  const auto a = randn({1000}, {}, &g1).to_vector<float>();
  const auto b = randn({1000}, {}, &g2).to_vector<float>();
  const auto c = randn({1000}, {}, &g3).to_vector<float>();
  CHECK(a == b);
  CHECK(a != c);
  // The next draw continues the stream instead of repeating it.
  CHECK(randn({1000}, {}, &g1).to_vector<float>() != a);
  // manual_seed resets the global generator.
  manual_seed(7);
  const auto d = rand({10}).to_vector<float>();
  manual_seed(7);
  CHECK(rand({10}).to_vector<float>() == d);
  // Moments of a large sample.
  Generator g(1);
  const Tensor n = randn({200000}, {DType::Float64}, &g);
  CHECK(mean(n).item<double>() == doctest::Approx(0.0).epsilon(0.01).scale(1));
  CHECK(var(n).item<double>() == doctest::Approx(1.0).epsilon(0.02));
  const Tensor u = rand({200000}, {DType::Float64}, &g);
  CHECK(max(u).item<double>() < 1.0);
  CHECK(mean(u).item<double>() == doctest::Approx(0.5).epsilon(0.01));
  // Known Philox-4x32-10 answer (Random123 known-answer test, counter = key = 0).
  const auto r = philox4x32(0, 0, 0);
  CHECK(r[0] == 0x6627e8d5u);
  CHECK(r[1] == 0xe169c58du);
  CHECK(r[2] == 0xbc57ac4cu);
  CHECK(r[3] == 0x9b00dbd8u);
}

TEST_CASE("copies: clone, contiguous, to_dtype, copy_ with broadcast") {
  Tensor x = reshape(arange(0, 6, 1, {DType::Float64}), {2, 3});
  Tensor t = transpose(x, 0, 1);
  Tensor c = contiguous(t);
  CHECK(c.is_contiguous());
  CHECK(c.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  CHECK(contiguous(x).is_same(x));
  Tensor d = zeros({2, 3}, {DType::Float64});
  copy_(d, from_vector(std::vector<double>{1, 2, 3}, {3}));
  CHECK(d.to_vector<double>() == std::vector<double>{1, 2, 3, 1, 2, 3});
  check_error([&] { copy_(d, zeros({4}, {DType::Float64})); }, "copy_: ");
  // Self-overlapping copy reads the source before writing.
  Tensor s = from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
  Tensor st = transpose(s, 0, 1);
  copy_(s, st);
  CHECK(s.to_vector<double>() == std::vector<double>{1, 3, 2, 4});
  gradcheck([](const std::vector<Tensor>& in) { return clone(in[0]) * 2.0; }, {transposed_leaf({2, 3})});
  gradcheck([](const std::vector<Tensor>& in) { return to_dtype(to_dtype(in[0], DType::Float32), DType::Float64); },
            {leaf({3})}, {1e-3, 1e-4, 1e-3});
}
