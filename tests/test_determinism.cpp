// Results must not depend on the number of threads: every parallel kernel
// splits work by fixed grains and merges partial results in a fixed order.
#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::test;

static Tensor remainder_ids(Generator& g) {
  std::vector<int64_t> v(8 * 300);
  const auto u = rand({8 * 300}, {DType::Float64}, &g).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(u[i] * 50) % 50;
  return from_vector(v, {8 * 300});
}

namespace {
// Forward and all gradients of a graph touching every parallel reduction.
std::vector<std::vector<float>> run_once() {
  Generator g(99);
  Tensor x = randn({8, 300, 48}, {}, &g).set_requires_grad(true);
  Tensor w = randn({48}, {}, &g).set_requires_grad(true);
  Tensor b = randn({48}, {}, &g).set_requires_grad(true);
  Tensor cw = randn({48, 3}, {}, &g).set_requires_grad(true);
  Tensor emb = randn({50, 48}, {}, &g).set_requires_grad(true);
  Tensor ids = reshape(remainder_ids(g), {8, 300});
  Tensor h = layer_norm(x + embedding(emb, ids), w, b);
  h = causal_depthwise_conv1d(h, cw, Tensor(), 2);
  Tensor logits = sum(softmax(h, -1) * h, {1});
  Tensor tgt = from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}, {8});
  Tensor loss = cross_entropy(logits, tgt) + sum(h) * 1e-3 + mean(var(x, {0, 1}));
  loss.backward();
  return {loss.to_vector<float>(), x.grad().to_vector<float>(), w.grad().to_vector<float>(),
          b.grad().to_vector<float>(), cw.grad().to_vector<float>(), emb.grad().to_vector<float>()};
}
// H-Transformer-1D's fused kernel (one task per (batch, head), the bias gradient
// reduced over the batch in order): float32, padding, bias, both directions.
std::vector<std::vector<float>> run_htransformer(bool causal) {
  Generator g(5);
  const Tensor q = randn({2, 3, 300, 32}, {}, &g).set_requires_grad(true);
  const Tensor k = randn({2, 3, 300, 32}, {}, &g).set_requires_grad(true);
  const Tensor v = randn({2, 3, 300, 32}, {}, &g).set_requires_grad(true);
  const Tensor bias = (0.3 * randn({3, 63}, {}, &g)).set_requires_grad(true);
  const Tensor r = randn({2, 3, 300, 32}, {}, &g);
  const Tensor y = htransformer_attention(q, k, v, right_padding({300, 211}, 300), causal, 0.2, 16, bias);
  sum(y * r).backward();
  return {y.to_vector<float>(), q.grad().to_vector<float>(), k.grad().to_vector<float>(),
          v.grad().to_vector<float>(), bias.grad().to_vector<float>()};
}
}  // namespace

TEST_CASE("same bits with 1, 2 and 3 threads") {
  set_num_threads(1);
  CHECK(get_num_threads() == 1);
  const auto one = run_once();
  set_num_threads(2);
  const auto two = run_once();
  set_num_threads(3);
  const auto three = run_once();
  set_num_threads(0);
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(one[i] == two[i]);
    CHECK(one[i] == three[i]);
  }
  check_error([] { set_num_threads(-1); }, "set_num_threads");
}

TEST_CASE("htransformer_attention: same bits with 1, 2 and 3 threads") {
  for (bool causal : {false, true}) {
    set_num_threads(1);
    const auto one = run_htransformer(causal);
    set_num_threads(2);
    const auto two = run_htransformer(causal);
    set_num_threads(3);
    const auto three = run_htransformer(causal);
    set_num_threads(0);
    for (size_t i = 0; i < one.size(); ++i) {
      CHECK(one[i] == two[i]);
      CHECK(one[i] == three[i]);
    }
  }
}
