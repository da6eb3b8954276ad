// The two pieces of core that data-parallel training (docs/distributed.md)
// rests on: a generator split by batch slices draws the whole batch's bits,
// and backward's gradient-ready hook reports each leaf once, with its final
// gradient. The multi-process behaviour itself: tests/distributed_test.sh.
#include <doctest/doctest.h>

#include "helpers/check.hpp"
#include "hkt/core/grad_hook.hpp"

using namespace hkt;

TEST_CASE("dropout with a batch slice draws the whole batch's mask for those examples") {
  const Tensor x = ones({6, 3, 5}, {DType::Float64});
  Generator whole(7), split(7);
  whole.set_offset(11);
  split.set_offset(11);
  const std::vector<double> full = dropout(x, 0.4, true, &whole).to_vector<double>();
  std::vector<double> parts;
  const uint64_t base = split.offset();
  for (const auto& [first, local] : std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 4}}) {
    split.set_offset(base);  // each rank starts the step at the same offset
    split.set_batch_slice(static_cast<uint64_t>(first), static_cast<uint64_t>(local), 6);
    const Tensor part = ones({local, 3, 5}, {DType::Float64});
    const std::vector<double> v = dropout(part, 0.4, true, &split).to_vector<double>();
    split.clear_batch_slice();
    parts.insert(parts.end(), v.begin(), v.end());
    CHECK(split.offset() == whole.offset());  // advanced by the whole batch's count
  }
  CHECK(parts == full);
  // A random op on a tensor whose leading dimension is not the local batch is refused.
  split.set_batch_slice(0, 4, 6);
  CHECK_THROWS_AS(split.reserve(7), std::invalid_argument);
  split.clear_batch_slice();
  CHECK_THROWS_AS(split.set_batch_slice(5, 2, 6), std::invalid_argument);
  CHECK(split.reserve(7) == whole.offset());  // plain again
}

TEST_CASE("the gradient-ready hook reports each leaf once, with its final gradient") {
  Tensor a = from_vector(std::vector<double>{1, 2, 3}, {3}).set_requires_grad(true);
  Tensor b = from_vector(std::vector<double>{4, 5, 6}, {3}).set_requires_grad(true);
  std::vector<std::pair<const TensorImpl*, std::vector<double>>> seen;
  {
    const GradReadyGuard guard([&](const Tensor& leaf) {
      seen.emplace_back(leaf.unsafe_impl(), leaf.grad().to_vector<double>());
    });
    // a is used twice: its hook comes once, after both contributions.
    sum(mul(a, b) + mul(a, a)).backward();
  }
  REQUIRE(seen.size() == 2);
  for (const auto& [impl, g] : seen) {
    const Tensor& t = impl == a.unsafe_impl() ? a : b;
    CHECK((impl == a.unsafe_impl() || impl == b.unsafe_impl()));
    CHECK(g == t.grad().to_vector<double>());
  }
  CHECK(a.grad().to_vector<double>() == std::vector<double>{6, 9, 12});
  // The guard is gone: no more calls.
  sum(mul(a, b)).backward();
  CHECK(seen.size() == 2);
}
