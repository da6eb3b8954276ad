// HKT attention and MHA: the special cases of docs/hkt.md, gradients, masks.
#include <cmath>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

HKTConfig tiny_hkt(int64_t levels, bool causal, uint64_t seed, Generator& g) {
  (void)seed;
  HKTConfig c;
  c.dim = 8;
  c.heads = 2;
  c.levels = levels;
  c.causal = causal;
  c.dtype = DType::Float64;
  c.gen = &g;
  return c;
}

void set_gate(HKTAttention& a, double v) {
  NoGradGuard ng;
  fill_(a.gate, v);
}

void copy_weights(MultiHeadAttention& m, const HKTAttention& h) {
  NoGradGuard ng;
  copy_(m.wq->weight, h.wq_list->at<Linear>(0)->weight);
  copy_(m.wk->weight, h.wk_list->at<Linear>(0)->weight);
  copy_(m.wv->weight, h.wv->weight);
  copy_(m.wo->weight, h.wo->weight);
}

}  // namespace

TEST_CASE("L = 1 and beta = 1 is exactly multi-head attention") {
  for (bool causal : {false, true}) {
    for (bool hybrid : {false, true}) {
      Generator g(1);
      HKTConfig c = tiny_hkt(1, causal, 1, g);
      c.hybrid = hybrid;
      HKTAttention hkt(c);
      if (hybrid) set_gate(hkt, 800.0);  // sigmoid(800) == 1 exactly
      MultiHeadAttention mha(c);
      copy_weights(mha, hkt);
      const Tensor x = randn({3, 11, 8}, {DType::Float64}, &g);
      const Tensor valid = right_padding({11, 6, 1}, 11);
      CHECK(vals(hkt(x)) == vals(mha(x)));
      CHECK(vals(hkt(x, valid)) == vals(mha(x, valid)));
    }
  }
}

TEST_CASE("beta = 0 is exactly a causal depthwise convolution of V") {
  Generator g(2);
  HKTAttention hkt(tiny_hkt(3, false, 2, g));
  set_gate(hkt, -800.0);  // sigmoid(-800) == 0 exactly
  const Tensor x = randn({2, 9, 8}, {DType::Float64}, &g);
  const Tensor expect = hkt.wo->forward(hkt.conv->forward(hkt.wv->forward(x)));
  CHECK(vals(hkt(x)) == vals(expect));
}

TEST_CASE("conv_only (beta fixed to 0) is the beta = 0 layer without the attention's parameters") {
  Generator g(21);
  for (bool causal : {false, true}) {
    HKTAttention full(tiny_hkt(3, causal, 21, g));
    set_gate(full, -800.0);  // sigmoid(-800) == 0 exactly
    HKTConfig c = tiny_hkt(3, causal, 21, g);
    c.conv_only = true;
    HKTAttention conv(c);
    CHECK(conv.num_parameters() == 2 * 8 * 8 + 8 * 3);  // Wv, Wo, conv taps (no bias)
    CHECK(conv.wq_list->size() == 0);
    CHECK(!conv.theta.defined());
    CHECK(!conv.gate.defined());
    {
      NoGradGuard ng;
      copy_(conv.wv->weight, full.wv->weight);
      copy_(conv.wo->weight, full.wo->weight);
      copy_(conv.conv->weight, full.conv->weight);
    }
    const Tensor x = randn({2, 9, 8}, {DType::Float64}, &g);
    const Tensor valid = right_padding({9, 6}, 9);
    CHECK(vals(conv(x, valid)) == vals(full(x, valid)));
    CHECK(vals(conv.beta()) == std::vector<double>{0, 0});
    check_error([&] { (void)conv.inspect(x); }, "a conv_only layer (beta = 0) has no attention scores");
    check_error([&] { (void)conv.wq(0); }, "a conv_only layer has no Wq");
  }
  HKTConfig c = tiny_hkt(2, false, 21, g);
  c.conv_only = true;
  c.hybrid = false;
  check_error([&] { HKTAttention b(c); }, "conv_only needs the hybrid branch (hybrid = true)");
}

TEST_CASE("lambda is a convex combination; gradients reach every parameter (float64, T = 7, L = 3)") {
  Generator g(3);
  HKTConfig c = tiny_hkt(3, false, 3, g);
  c.dim = 4;
  HKTAttention hkt(c);
  {
    NoGradGuard ng;  // move away from the symmetric start so every path carries gradient
    copy_(hkt.theta, randn({2, 3}, {DType::Float64}, &g));
    copy_(hkt.gate, randn({2}, {DType::Float64}, &g));
  }
  const auto lam = vals(hkt.lambda());
  for (int h = 0; h < 2; ++h) {
    double s = 0;
    for (int l = 0; l < 3; ++l) {
      CHECK(lam[h * 3 + l] > 0);
      s += lam[h * 3 + l];
    }
    CHECK(s == doctest::Approx(1.0).epsilon(1e-15));
  }
  std::vector<std::string> seen;
  std::vector<Tensor> params;
  for (auto& [n, t] : hkt.named_parameters()) {
    seen.push_back(n);
    params.push_back(t);
  }
  for (const char* n : {"wq.2.weight", "wk.1.weight", "wv.weight", "wo.weight", "down.0.conv.weight",
                        "down.1.conv.bias", "down.0.pw.weight", "down.1.ln.weight", "theta", "gate", "conv.weight"})
    CHECK(std::find(seen.begin(), seen.end(), n) != seen.end());
  const Tensor x = leaf({2, 7, 4});
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), params.begin(), params.end());
  gradcheck([&](const std::vector<Tensor>& in) { return hkt(in[0]); }, inputs, {1e-6, 1e-7, 1e-5});
  // Causal mode with padding, too.
  HKTConfig cc = c;
  cc.causal = true;
  HKTAttention causal(cc);
  const Tensor valid = right_padding({7, 5}, 7);
  std::vector<Tensor> cin{leaf({2, 7, 4}, -1.5, 1.5, 21)};
  for (auto& t : causal.parameters()) cin.push_back(t);
  gradcheck([&](const std::vector<Tensor>& in) { return causal(in[0], valid); }, cin, {1e-6, 1e-7, 1e-5});
}

TEST_CASE("causal mode: outputs at positions <= i ignore inputs after i, for L = 1..4") {
  for (int64_t L = 1; L <= 4; ++L) {
    Generator g(40 + static_cast<uint64_t>(L));
    HKTAttention hkt(tiny_hkt(L, true, 4, g));
    {
      NoGradGuard ng;
      copy_(hkt.theta, randn({2, L}, {DType::Float64}, &g));
    }
    const int64_t T = 13;
    const Tensor x = randn({2, T, 8}, {DType::Float64}, &g);
    const Tensor y = hkt(x);
    for (int64_t i : {0, 1, 2, 5, 7, 11}) {
      Tensor x2 = clone(x);
      {
        Tensor tail = slice(x2, 1, i + 1, T);
        copy_(tail, randn(tail.shape(), {DType::Float64}, &g));
      }
      const Tensor y2 = hkt(x2);
      CAPTURE(L);
      CAPTURE(i);
      CHECK(vals(slice(y2, 1, 0, i + 1)) == vals(slice(y, 1, 0, i + 1)));
      if (i + 1 < T) CHECK(vals(slice(y2, 1, i + 1, T)) != vals(slice(y, 1, i + 1, T)));
    }
  }
}

TEST_CASE("padding: real positions ignore padded content; a fully padded row gives zeros") {
  for (bool causal : {false, true}) {
    for (int64_t L : {1, 3}) {
      Generator g(5);
      HKTAttention hkt(tiny_hkt(L, causal, 5, g));
      AttentionConfig mc = tiny_hkt(L, causal, 5, g);
      MultiHeadAttention mha(mc);
      const int64_t T = 10;
      const Tensor valid = right_padding({10, 7, 3, 0}, T);
      const Tensor x = randn({4, T, 8}, {DType::Float64}, &g);
      Tensor x2 = clone(x);
      {
        NoGradGuard ng;
        // Scramble every padded position.
        copy_(x2, where(unsqueeze(valid, -1), x, randn({4, T, 8}, {DType::Float64}, &g) * 100.0));
      }
      for (int which = 0; which < 2; ++which) {
        const Tensor y = which ? mha(x, valid) : hkt(x, valid);
        const Tensor y2 = which ? mha(x2, valid) : hkt(x2, valid);
        CHECK(vals(y) == vals(y2));
        for (double v : vals(select(y, 0, 3))) CHECK(v == 0.0);  // the fully padded row
        for (double v : vals(slice(select(y, 0, 2), 0, 3, T))) CHECK(v == 0.0);
        for (double v : vals(y)) CHECK(std::isfinite(v));
      }
    }
  }
}

TEST_CASE("upsampled scores: S_hier[i, j] = sum_l lambda_l S_l[i >> l, j >> l] (and the causal block map)") {
  for (bool causal : {false, true}) {
    Generator g(6);
    HKTAttention hkt(tiny_hkt(3, causal, 6, g));
    {
      NoGradGuard ng;
      copy_(hkt.theta, randn({2, 3}, {DType::Float64}, &g));
    }
    const int64_t T = 6;
    const HKTScores s = hkt.inspect(randn({1, T, 8}, {DType::Float64}, &g));
    REQUIRE(s.levels.size() == 3);
    CHECK(s.levels[1].shape() == Shape{1, 2, 3, 3});
    CHECK(s.levels[2].shape() == Shape{1, 2, 2, 2});
    CHECK(s.combined.shape() == Shape{1, 2, T, T});
    const auto lam = vals(s.lambda);
    const auto comb = vals(s.combined);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          double want = 0;
          for (int64_t l = 0; l < 3; ++l) {
            const int64_t Tl = s.levels[l].size(2);
            int64_t ci = i >> l, cj = j >> l;
            if (causal && l > 0) {
              ci = ((i + 1) >> l) - 1;
              cj = ((j + 1) >> l) - 1;
              if (ci < 0 || cj < 0) continue;
            }
            want += lam[h * 3 + l] * vals(s.levels[l])[(h * Tl + ci) * Tl + cj];
          }
          CHECK(comb[(h * T + i) * T + j] == doctest::Approx(want).epsilon(1e-13));
        }
  }
  // Hand case: bidirectional, T = 4, level 1 maps (3, 0) to S_1[1, 0].
  CHECK((3 >> 1) == 1);
}

TEST_CASE("ablation switches") {
  Generator g(7);
  HKTConfig c = tiny_hkt(3, false, 7, g);
  const int64_t full = HKTAttention(c).num_parameters();
  c.share_qk = true;
  HKTAttention shared(c);
  CHECK(shared.num_parameters() == full - 2 * 2 * 64);
  CHECK(vals(shared.wq(2)) == vals(shared.wq(0)));
  c = tiny_hkt(3, false, 7, g);
  c.pointwise = false;
  CHECK(HKTAttention(c).num_parameters() == full - 2 * (64 + 8));
  c = tiny_hkt(3, false, 7, g);
  c.learn_lambda = false;
  HKTAttention fixed(c);
  CHECK(!fixed.theta.defined());
  for (double v : vals(fixed.lambda())) CHECK(v == doctest::Approx(1.0 / 3));
  c = tiny_hkt(3, false, 7, g);
  c.hybrid = false;
  HKTAttention nohybrid(c);
  CHECK(!nohybrid.gate.defined());
  CHECK(vals(nohybrid.beta()) == std::vector<double>{1, 1});
  const Tensor x = randn({2, 5, 8}, {DType::Float64}, &g);
  for (HKTAttention* a : {&shared, &fixed, &nohybrid}) CHECK((*a)(x).shape() == Shape{2, 5, 8});
  // L = 1 ablation runs at any T.
  c = tiny_hkt(1, false, 7, g);
  CHECK(HKTAttention(c)(randn({1, 1, 8}, {DType::Float64}, &g)).shape() == Shape{1, 1, 8});
}

TEST_CASE("T = 1 and lengths that are not powers of two, every L") {
  Generator g(8);
  for (int64_t L = 1; L <= 4; ++L)
    for (int64_t T : {1, 2, 3, 5, 17}) {
      HKTAttention a(tiny_hkt(L, L % 2 == 0, 8, g));
      const Tensor y = a(randn({1, T, 8}, {DType::Float64}, &g));
      CHECK(y.shape() == Shape{1, T, 8});
      for (double v : vals(y)) CHECK(std::isfinite(v));
    }
}

TEST_CASE("attention errors") {
  Generator g(9);
  HKTAttention a(tiny_hkt(2, false, 9, g));
  check_error([&] { (void)a(zeros({2, 5, 7}, {DType::Float64})); }, "x must be [B, T, 8], got [2, 5, 7]");
  check_error([&] { (void)a(zeros({2, 5, 8}, {DType::Float64}), zeros({2, 5})); }, "valid must be Bool [2, 5]");
  HKTConfig c = tiny_hkt(2, false, 9, g);
  c.heads = 3;
  check_error([&] { HKTAttention b(c); }, "dim (8) must be a positive multiple of heads (3)");
  c = tiny_hkt(0, false, 9, g);
  check_error([&] { HKTAttention b(c); }, "levels must be >= 1");
  check_error([&] { (void)a.wq(2); }, "level 2 out of range");
}

TEST_CASE("the fused kernel agrees with the composite reference (float64, both modules, every option)") {
  for (bool causal : {false, true})
    for (int64_t L : {1, 2, 3, 4}) {
      Generator g(100 + static_cast<uint64_t>(L));
      HKTConfig c = tiny_hkt(L, causal, 0, g);
      c.fused = true;
      HKTAttention fused(c);
      {
        NoGradGuard ng;
        copy_(fused.theta, randn({2, L}, {DType::Float64}, &g));
        copy_(fused.gate, randn({2}, {DType::Float64}, &g));
      }
      c.fused = false;
      HKTAttention ref(c);
      ref.load_state_dict(fused.state_dict());
      AttentionConfig mc = c;
      mc.fused = true;
      MultiHeadAttention mf(mc);
      mc.fused = false;
      MultiHeadAttention mr(mc);
      mr.load_state_dict(mf.state_dict());
      const int64_t T = 13;
      const Tensor valid = right_padding({13, 9, 0}, T);
      const Tensor x = randn({3, T, 8}, {DType::Float64}, &g);
      for (const Tensor& v : {Tensor(), valid}) {
        const auto a = vals(fused(x, v)), b = vals(ref(x, v));
        const auto m1 = vals(mf(x, v)), m2 = vals(mr(x, v));
        for (size_t i = 0; i < a.size(); ++i) {
          CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12).scale(1.0));
          CHECK(m1[i] == doctest::Approx(m2[i]).epsilon(1e-12).scale(1.0));
        }
      }
      // Gradients to every parameter agree too.
      sum(square(fused(x, valid))).backward();
      sum(square(ref(x, valid))).backward();
      const auto pf = fused.named_parameters(), pr = ref.named_parameters();
      for (size_t i = 0; i < pf.size(); ++i) {
        CAPTURE(pf[i].first);
        const auto ga = vals(pf[i].second.grad()), gb = vals(pr[i].second.grad());
        for (size_t j = 0; j < ga.size(); ++j) CHECK(ga[j] == doctest::Approx(gb[j]).epsilon(1e-10).scale(1.0));
      }
    }
}
