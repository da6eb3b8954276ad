// The CUDA runtime seen from the API: runs in every build. Without a GPU it
// checks that asking for CUDA fails with a clear hkt::Error (not a crash);
// with one, host <-> device copies and the caching allocator.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "helpers/check.hpp"

using namespace hkt;

TEST_CASE("cuda: availability is reported consistently") {
  const int n = cuda_device_count();
  CHECK(n >= 0);
  CHECK(cuda_is_available() == (n > 0));
  if (!cuda_is_built()) CHECK(n == 0);
  if (cuda_is_available()) {
    CHECK(cuda_unavailable_reason().empty());
  } else {
    CHECK(!cuda_unavailable_reason().empty());
    MESSAGE("no GPU here: " << cuda_unavailable_reason());
  }
}

TEST_CASE("cuda: without a GPU, asking for one is a clear error") {
  if (cuda_is_available()) {
    MESSAGE("SKIPPED: a GPU is present (this case checks the no-GPU errors)");
    return;
  }
  const Tensor x = ones({2, 3});
  test::check_error([&] { (void)to_device(x, Device::cuda()); }, "cuda:0");
  test::check_error([&] { (void)zeros({4}, {DType::Float32, Device::cuda()}); }, "cuda:0");
  test::check_error([&] { (void)Tensor::empty({4}, DType::Float32, Device::cuda()); }, "cuda:0");
  test::check_error([&] { require_cuda("hkt-train --device cuda"); }, "hkt-train --device cuda: CUDA was requested");
  if (cuda_is_built()) test::check_error([&] { (void)to_device(x, Device::cuda()); }, "no CUDA device");
  cuda_synchronize();  // a no-op without a GPU
  CHECK(cuda_memory_stats().device_mallocs == 0);
  cuda_empty_cache();
}

TEST_CASE("cuda: copies round-trip, any layout and dtype") {
  if (!cuda_is_available()) {
    MESSAGE("SKIPPED (no GPU): " << cuda_unavailable_reason());
    return;
  }
  const Tensor a = randn({5, 7}, {DType::Float32});
  const Tensor g = to_device(a, Device::cuda());
  CHECK(g.device() == Device::cuda());
  CHECK(to_device(g, Device::cpu()).to_vector<float>() == a.to_vector<float>());
  // Non-contiguous sources are made contiguous on their device first.
  const Tensor at = transpose(a, 0, 1);
  CHECK(to_device(to_device(at, Device::cuda()), Device::cpu()).to_vector<float>() == at.to_vector<float>());
  const Tensor gt = transpose(g, 0, 1);
  CHECK(to_device(gt, Device::cpu()).to_vector<float>() == at.to_vector<float>());
  const Tensor i = from_vector(std::vector<int64_t>{3, -1, 7}, {3});
  CHECK(to_device(to_device(i, Device::cuda()), Device::cpu()).to_vector<int64_t>() == i.to_vector<int64_t>());
  // from_vector / full straight onto the device.
  const Tensor f = full({3}, 2.5, {DType::Float64, Device::cuda()});
  CHECK(to_device(f, Device::cpu()).to_vector<double>() == std::vector<double>{2.5, 2.5, 2.5});
  // Gradients flow back across the copy.
  Tensor leaf = randn({4}).set_requires_grad(true);
  sum(to_device(leaf, Device::cuda()) * 3.0).backward();
  CHECK(leaf.grad().device() == Device::cpu());
  CHECK(leaf.grad().to_vector<float>() == std::vector<float>(4, 3.0f));
  // Only cuda:0 is used.
  test::check_error([&] { (void)to_device(a, Device::cuda(1)); }, "cuda:1");
}

TEST_CASE("cuda: the caching allocator reuses blocks in steady state") {
  if (!cuda_is_available()) {
    MESSAGE("SKIPPED (no GPU): " << cuda_unavailable_reason());
    return;
  }
  const Tensor x = randn({256, 256}, {DType::Float32, Device::cuda()});
  auto step = [&] { return sum(matmul(x, x) + x).item_double(); };
  (void)step();
  const uint64_t mallocs = cuda_memory_stats().device_mallocs;
  for (int i = 0; i < 5; ++i) (void)step();
  CHECK(cuda_memory_stats().device_mallocs == mallocs);
  CHECK(cuda_memory_stats().cache_hits > 0);
  cuda_empty_cache();
  CHECK(cuda_memory_stats().cached_bytes == 0);
}

TEST_CASE("cuda: HKT_CUDA_FILL_UNINITIALIZED=1 hands out every block, cached or new, filled with NaN") {
  if (!cuda_is_available()) {
    MESSAGE("SKIPPED (no GPU): " << cuda_unavailable_reason());
    return;
  }
  const char* fill = std::getenv("HKT_CUDA_FILL_UNINITIALIZED");
  if (!fill || std::string(fill) != "1") {
    MESSAGE("SKIPPED: HKT_CUDA_FILL_UNINITIALIZED=1 is not set (the emulated entry sets it)");
    return;
  }
  for (int round = 0; round < 2; ++round) {  // round 1 gets round 0's block back from the cache
    Tensor t = empty({1000}, {DType::Float32, Device::cuda()});
    for (float v : to_device(t, Device::cpu()).to_vector<float>()) REQUIRE(std::isnan(v));
    fill_(t, 1.5);
    CHECK(to_device(t, Device::cpu()).to_vector<float>() == std::vector<float>(1000, 1.5f));
  }
  const Tensor i = empty({10}, {DType::Int64, Device::cuda()});
  CHECK(to_device(i, Device::cpu()).to_vector<int64_t>() == std::vector<int64_t>(10, -1));
}
