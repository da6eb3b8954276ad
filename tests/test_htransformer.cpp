// H-Transformer-1D attention (hkt/ops/htransformer.hpp), the op: the fused
// kernels against the composite on random shapes (T not a power of two, masks,
// causal, the relative-position bias, dv != dh), the special case T <= 2 Nr
// (exact softmax attention), float64 central-difference gradients of both,
// float32 against float64, thread-count independence, errors, and the layer
// nn::HTransformerAttention. The layout itself (the dense partition, coverage,
// causal no-leak, padding) is tests/test_htransformer_layout.cpp; agreement
// with the NumPy reference of the published algorithm is reference_numpy_htransformer.
#include <cmath>
#include <initializer_list>
#include <random>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

struct QKV {
  Tensor q, k, v;
};
QKV random_qkv(int64_t B, int64_t H, int64_t T, int64_t dh, uint64_t seed, DType dt = DType::Float64) {
  Generator g(seed);
  return {randn({B, H, T, dh}, {dt}, &g), randn({B, H, T, dh}, {dt}, &g), randn({B, H, T, dh}, {dt}, &g)};
}

// y's values, then the gradients of ts (after a backward), in one list.
std::vector<double> values_and_grads(const Tensor& y, std::initializer_list<Tensor> ts) {
  std::vector<double> all = vals(y);
  for (const Tensor& t : ts) {
    const std::vector<double> gr = vals(t.grad());
    all.insert(all.end(), gr.begin(), gr.end());
  }
  return all;
}

}  // namespace

TEST_CASE("fused htransformer: forward and gradients equal the composite's on random shapes") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t B = 1 + static_cast<int64_t>(rng() % 3), H = 1 + static_cast<int64_t>(rng() % 3);
    const int64_t Nr = 2 * (1 + static_cast<int64_t>(rng() % 4)), T = 1 + static_cast<int64_t>(rng() % 90);
    const int64_t dh = 1 + static_cast<int64_t>(rng() % 6), dv = 1 + static_cast<int64_t>(rng() % 5);
    const bool causal = rng() % 2, masked = rng() % 2, biased = rng() % 3 != 0;
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < B; ++b) lengths.push_back(static_cast<int64_t>(rng() % (T + 1)));
    const Tensor valid = masked ? right_padding(lengths, T) : Tensor();
    INFO("B " << B << " H " << H << " T " << T << " dh " << dh << " dv " << dv << " Nr " << Nr << " causal "
              << causal << " masked " << masked << " bias " << biased);
    Generator g(static_cast<uint64_t>(trial));
    const Tensor q0 = randn({B, H, T, dh}, {DType::Float64}, &g), k0 = randn({B, H, T, dh}, {DType::Float64}, &g);
    const Tensor v0 = randn({B, H, T, dv}, {DType::Float64}, &g), r = randn({B, H, T, dv}, {DType::Float64}, &g);
    const Tensor b0 = randn({H, 4 * Nr - 1}, {DType::Float64}, &g) * 0.5;
    std::vector<std::vector<double>> outs;
    for (bool fused : {true, false}) {
      const Tensor q = clone(q0).set_requires_grad(true), k = clone(k0).set_requires_grad(true);
      const Tensor v = clone(v0).set_requires_grad(true), bias = clone(b0).set_requires_grad(true);
      const Tensor bb = biased ? bias : Tensor();
      const Tensor y = fused ? htransformer_attention(q, k, v, valid, causal, 0.6, Nr, bb)
                             : htransformer_attention_reference(q, k, v, valid, causal, 0.6, Nr, bb);
      sum(y * r).backward();
      std::vector<double> all = vals(y);
      for (const Tensor& t : {q, k, v}) {
        const std::vector<double> gr = vals(t.grad());
        all.insert(all.end(), gr.begin(), gr.end());
      }
      if (biased) {
        const std::vector<double> gr = vals(bias.grad());
        all.insert(all.end(), gr.begin(), gr.end());
      }
      outs.push_back(all);
    }
    check_close(outs[0], outs[1], 1e-11);
  }
}

// The float32 kernel (tile products, AVX2 + FMA where the CPU has them) against the float32
// composite: T not a power of two (padding inside the op) and key padding, Nr a multiple of 8
// (segments without padding columns) or not, dh and dv not multiples of 8.
TEST_CASE("fused htransformer float32: forward and gradients agree with the float32 composite") {
  struct Cfg {
    int64_t T, Nr, dh, dv;
    bool causal;
  };
  int trial = 0;
  for (const Cfg c : {Cfg{37, 16, 32, 32, false}, Cfg{100, 16, 32, 32, true}, Cfg{300, 16, 32, 24, false},
                      Cfg{300, 8, 5, 7, true}, Cfg{100, 6, 12, 8, false}, Cfg{37, 4, 3, 9, true}}) {
    INFO("T " << c.T << " Nr " << c.Nr << " dh " << c.dh << " dv " << c.dv << " causal " << c.causal);
    Generator g(static_cast<uint64_t>(100 + trial++));
    const DType f = DType::Float32;
    const Tensor q0 = randn({2, 2, c.T, c.dh}, {f}, &g), k0 = randn({2, 2, c.T, c.dh}, {f}, &g);
    const Tensor v0 = randn({2, 2, c.T, c.dv}, {f}, &g), r = randn({2, 2, c.T, c.dv}, {f}, &g);
    const Tensor b0 = randn({2, 4 * c.Nr - 1}, {f}, &g) * 0.5;
    const Tensor valid = right_padding({c.T, c.T - c.T / 3}, c.T);
    std::vector<std::vector<double>> outs;
    for (bool fused : {true, false}) {
      const Tensor q = clone(q0).set_requires_grad(true), k = clone(k0).set_requires_grad(true);
      const Tensor v = clone(v0).set_requires_grad(true), bias = clone(b0).set_requires_grad(true);
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
      const Tensor y = fused ? htransformer_attention(q, k, v, valid, c.causal, scale, c.Nr, bias)
                             : htransformer_attention_reference(q, k, v, valid, c.causal, scale, c.Nr, bias);
      sum(y * r).backward();
      outs.push_back(values_and_grads(y, {q, k, v, bias}));
    }
    check_close(outs[0], outs[1], 2e-4);
  }
}

// Level 0 read from the inputs and the gradients written into the outputs in place (dh, dv
// multiples of 8, T = Nr 2^L, no masked token; the outputs only with Nr a multiple of 8), float64
// and float32 against the composite, with an all-true mask too.
TEST_CASE("fused htransformer: inputs and outputs used in place agree with the composite") {
  struct Cfg {
    int64_t T, Nr, dh, dv;
    bool causal, mask;
  };
  int trial = 0;
  for (const Cfg c : {Cfg{64, 8, 8, 16, false, false}, Cfg{64, 8, 16, 8, true, true}, Cfg{32, 4, 8, 8, false, true},
                      Cfg{128, 16, 32, 32, false, false}, Cfg{128, 16, 32, 32, true, false}})
    for (DType f : {DType::Float64, DType::Float32}) {
      INFO("T " << c.T << " Nr " << c.Nr << " dh " << c.dh << " dv " << c.dv << " causal " << c.causal << " mask "
                << c.mask << " " << f);
      Generator g(static_cast<uint64_t>(200 + trial++));
      const Tensor q0 = randn({2, 2, c.T, c.dh}, {f}, &g), k0 = randn({2, 2, c.T, c.dh}, {f}, &g);
      const Tensor v0 = randn({2, 2, c.T, c.dv}, {f}, &g), r = randn({2, 2, c.T, c.dv}, {f}, &g);
      const Tensor b0 = randn({2, 4 * c.Nr - 1}, {f}, &g) * 0.5;
      const Tensor valid = c.mask ? right_padding({c.T, c.T}, c.T) : Tensor();
      std::vector<std::vector<double>> outs;
      for (bool fused : {true, false}) {
        const Tensor q = clone(q0).set_requires_grad(true), k = clone(k0).set_requires_grad(true);
        const Tensor v = clone(v0).set_requires_grad(true), bias = clone(b0).set_requires_grad(true);
        const Tensor y = fused ? htransformer_attention(q, k, v, valid, c.causal, 0.4, c.Nr, bias)
                               : htransformer_attention_reference(q, k, v, valid, c.causal, 0.4, c.Nr, bias);
        sum(y * r).backward();
        outs.push_back(values_and_grads(y, {q, k, v, bias}));
      }
      check_close(outs[0], outs[1], f == DType::Float64 ? 1e-11 : 2e-4);
    }
}

// An odd block (T <= 2 Nr: Nr' = (T + 1) / 2 rounded to the even Tp / 2) in float32: the row
// passes' odd last row, against float64.
TEST_CASE("fused htransformer float32: an odd block agrees with float64") {
  for (int64_t T : {5, 9, 11})
    for (bool causal : {false, true}) {
      INFO("T " << T << " causal " << causal);
      const QKV x = random_qkv(2, 2, T, 8, 11, DType::Float32);
      Generator g(5);
      const Tensor b0 = randn({2, 4 * 6 - 1}, {}, &g);
      auto d = [](const Tensor& t) { return to_dtype(t, DType::Float64); };
      std::vector<std::vector<double>> outs;
      for (bool f64 : {false, true}) {
        const Tensor q = (f64 ? d(x.q) : clone(x.q)).set_requires_grad(true);
        const Tensor k = (f64 ? d(x.k) : clone(x.k)).set_requires_grad(true);
        const Tensor v = (f64 ? d(x.v) : clone(x.v)).set_requires_grad(true);
        const Tensor bias = (f64 ? d(b0) : clone(b0)).set_requires_grad(true);
        const Tensor y = htransformer_attention(q, k, v, {}, causal, 0.35, 6, bias);
        sum(y * y).backward();
        outs.push_back(values_and_grads(y, {q, k, v, bias}));
      }
      check_close(outs[0], outs[1], 1e-4);
    }
}

TEST_CASE("fused htransformer: float32 with 1 and 2 threads gives the same bits") {
  const QKV x = random_qkv(2, 3, 77, 8, 4, DType::Float32);
  const Tensor valid = right_padding({77, 40}, 77);
  Generator g(2);
  const Tensor b0 = randn({3, 15}, {}, &g);
  std::vector<std::vector<double>> outs;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const Tensor bias = clone(b0).set_requires_grad(true);
    const Tensor y = htransformer_attention(x.q, x.k, x.v, valid, false, 0.3, 4, bias);
    sum(y * y).backward();
    std::vector<double> all = vals(y), gb = vals(bias.grad());
    all.insert(all.end(), gb.begin(), gb.end());
    outs.push_back(all);
  }
  set_num_threads(0);
  CHECK(outs[0] == outs[1]);
}

TEST_CASE("htransformer: T <= 2 Nr is softmax attention (mha_attention)") {
  for (bool causal : {false, true}) {
    for (int64_t T : {1, 5, 8, 16}) {
      const QKV x = random_qkv(2, 3, T, 4, 7);
      const Tensor valid = right_padding({T, (T + 1) / 2}, T);
      for (const Tensor& m : {Tensor(), valid}) {
        const Tensor y = htransformer_attention(x.q, x.k, x.v, m, causal, 0.5, 8);
        // (mha_attention leaves padded query rows to the layer; this op zeroes them)
        const Tensor rows =
            m.defined() ? reshape(to_dtype(m, DType::Float64), {2, 1, T, 1}) : ones({1}, {DType::Float64});
        check_close(vals(y), vals(mha_attention(x.q, x.k, x.v, m, causal, 0.5) * rows), 1e-12);
      }
    }
  }
}

TEST_CASE("htransformer float64 gradients (central differences), q, k, v and the bias") {
  struct Cfg {
    int64_t T, Nr;
    bool causal, masked;
  };
  for (const Cfg c : {Cfg{9, 2, false, false}, Cfg{9, 2, true, true}, Cfg{13, 2, false, true}, Cfg{20, 4, true, false},
                      Cfg{4, 8, false, true}, Cfg{17, 4, false, true}}) {
    INFO("T " << c.T << " Nr " << c.Nr << " causal " << c.causal << " masked " << c.masked);
    const Tensor valid = c.masked ? right_padding({c.T, c.T - 3}, c.T) : Tensor();
    const int64_t B = c.masked ? 2 : 1;
    const Tensor q = leaf({B, 2, c.T, 3}, -1.5, 1.5, 1), k = leaf({B, 2, c.T, 3}, -1.5, 1.5, 2);
    const Tensor v = leaf({B, 2, c.T, 2}, -1.5, 1.5, 3), bias = leaf({2, 4 * c.Nr - 1}, -0.5, 0.5, 4);
    for (bool fused : {true, false})
      gradcheck(
          [&](const std::vector<Tensor>& in) {
            return fused ? htransformer_attention(in[0], in[1], in[2], valid, c.causal, 0.9, c.Nr, in[3])
                         : htransformer_attention_reference(in[0], in[1], in[2], valid, c.causal, 0.9, c.Nr, in[3]);
          },
          {q, k, v, bias});
  }
  // Non-contiguous inputs.
  const Tensor qt = transposed_leaf({1, 2, 6, 3}, -1.5, 1.5, 4);
  const Tensor k = leaf({1, 2, 6, 3}, -1.5, 1.5, 5), v = leaf({1, 2, 6, 3}, -1.5, 1.5, 6);
  gradcheck(
      [](const std::vector<Tensor>& in) { return htransformer_attention(in[0], in[1], in[2], {}, false, 1.0, 2); },
      {qt, k, v});
}

TEST_CASE("htransformer float32 agrees with float64") {
  const QKV x = random_qkv(2, 2, 45, 8, 9, DType::Float32);
  const Tensor valid = right_padding({45, 30}, 45);
  Generator g(3);
  const Tensor bias = randn({2, 15}, {}, &g);
  for (bool causal : {false, true}) {
    const Tensor y32 = htransformer_attention(x.q, x.k, x.v, valid, causal, 0.35, 4, bias);
    auto d = [](const Tensor& t) { return to_dtype(t, DType::Float64); };
    const Tensor y64 = htransformer_attention(d(x.q), d(x.k), d(x.v), valid, causal, 0.35, 4, d(bias));
    check_close(vals(y32), vals(y64), 1e-5);
  }
}

TEST_CASE("htransformer bad configurations") {
  const Tensor q = zeros({1, 2, 5, 3}, {DType::Float32});
  check_error([&] { htransformer_attention(q, q, q, {}, false, 1.0, 0); }, "block (Nr) must be even and >= 2, got 0");
  check_error([&] { htransformer_attention(q, q, q, {}, false, 1.0, 5); }, "block (Nr) must be even and >= 2, got 5");
  check_error([&] { htransformer_attention(q, zeros({1, 2, 4, 3}), q, {}, false, 1.0, 2); },
              "k must have q's shape [1, 2, 5, 3], got [1, 2, 4, 3]");
  check_error([&] { htransformer_attention(q, q, zeros({1, 2, 4, 3}), {}, false, 1.0, 2); },
              "v must be [B, H, T, dv] with q's B, H, T");
  check_error([&] { htransformer_attention(zeros({2, 5, 3}), zeros({2, 5, 3}), zeros({2, 5, 3}), {}, false, 1.0, 2); },
              "q must be [B, H, T, dh]");
  check_error([&] { htransformer_attention(q, q, to_dtype(q, DType::Float64), {}, false, 1.0, 2); },
              "v is float64 but q is float32");
  check_error([&] { htransformer_attention(q, q, q, right_padding({5}, 4), false, 1.0, 2); }, "valid must be Bool [1, 5]");
  check_error([&] { htransformer_attention(q, q, q, {}, false, NAN, 2); }, "scale must be finite");
  check_error([&] { htransformer_attention(q, q, q, {}, false, 1.0, 2, zeros({2, 6})); },
              "bias must be [H, 4 block - 1] = [2, 7], got [2, 6]");
  const Tensor e = zeros({1, 2, 0, 3});
  check_error([&] { htransformer_attention(e, e, e, {}, false, 1.0, 2); }, "the sequence is empty");
  HTransformerConfig c;
  c.block_size = 3;
  check_error([&] { HTransformerAttention a(c); }, "HTransformerAttention: block_size (Nr) must be even and >= 2");
}

TEST_CASE("HTransformerAttention: MHA's parameters, forward and backward, hkt-small length") {
  Generator g(3);
  HTransformerConfig c;
  c.dim = 16;
  c.heads = 2;
  c.gen = &g;
  HTransformerAttention h(c);
  MultiHeadAttention m(c);
  // MHA's projections plus the relative-position bias, heads x (4 Nr - 1), N(0, 0.1^2).
  CHECK(h.num_parameters() == m.num_parameters() + 2 * 63);
  REQUIRE(h.rpb.shape() == Shape{2, 63});
  const double sd = std::sqrt(vals(mean(h.rpb * h.rpb))[0]);
  CHECK((sd > 0.05 && sd < 0.15));
  const auto hp = h.named_parameters(), mp = m.named_parameters();
  REQUIRE(hp.size() == mp.size() + 1);
  CHECK(hp.front().first == "rpb");  // a module's own parameters come before its submodules'
  for (size_t i = 0; i < mp.size(); ++i) {
    CHECK(hp[i + 1].first == mp[i].first);
    CHECK(hp[i + 1].second.shape() == mp[i].second.shape());
  }
  // T = 512 (hkt-small's length) with the default block size 16: 5 levels.
  const Tensor x = randn({2, 512, 16}, {}, &g);
  const Tensor valid = right_padding({512, 300}, 512);
  const Tensor y = h(x, valid);
  CHECK(y.shape() == x.shape());
  sum(y * y).backward();
  for (auto& [name, p] : h.named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    const double total = vals(sum(abs(p.grad())))[0];
    CHECK(std::isfinite(total));
    CHECK(total > 0.0);
  }
  CHECK(vals(max(abs(narrow(select(y, 0, 1), 0, 300, 212))))[0] == 0.0);  // padded rows
  // The layer equals projections around the op (causal too).
  c.causal = true;
  c.dtype = DType::Float64;
  HTransformerAttention hc(c);
  const Tensor x64 = randn({1, 19, 16}, {DType::Float64}, &g);
  auto heads = [](const Tensor& t) { return permute(reshape(t, {1, 19, 2, 8}), {0, 2, 1, 3}); };
  const Tensor a = htransformer_attention(heads(hc.wq->forward(x64)), heads(hc.wk->forward(x64)),
                                          heads(hc.wv->forward(x64)), {}, true, 1.0 / std::sqrt(8.0), 16, hc.rpb);
  const Tensor want = hc.wo->forward(reshape(permute(a, {0, 2, 1, 3}), {1, 19, 16}));
  check_close(vals(hc(x64)), vals(want), 1e-12);
  HTransformerConfig cr = c;
  cr.fused = false;
  HTransformerAttention hr(cr);
  {
    NoGradGuard ng;
    for (size_t i = 0; i < 5; ++i) {
      Tensor dst = hr.named_parameters()[i].second;
      copy_(dst, hc.named_parameters()[i].second);
    }
  }
  check_close(vals(hr(x64)), vals(hc(x64)), 1e-12);
}

TEST_CASE("HTransformerAttention: relative_bias = false has MHA's parameters and no bias") {
  HTransformerConfig c;
  c.dim = 16;
  c.heads = 2;
  c.relative_bias = false;
  HTransformerAttention h(c);
  MultiHeadAttention m(c);
  CHECK(h.num_parameters() == m.num_parameters());
  CHECK(!h.rpb.defined());
  Generator g(1);
  const Tensor x = randn({1, 40, 16}, {}, &g);
  CHECK(h(x).shape() == x.shape());
}
