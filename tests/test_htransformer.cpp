// H-Transformer-1D attention (hkt/ops/htransformer.hpp): against a dense loop
// reference written from the header's definition, the special cases (one block
// = softmax attention, one level = block-diagonal attention), causal no-leak,
// padding, gradients, errors, and the layer nn::HTransformerAttention.
#include <cmath>
#include <random>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

// The hierarchical matrix entry by entry, O(T^2 dh) loops on float64 values: for
// every pair (i, j) find the level whose block holds it, average q and k over
// that level's groups of valid tokens, and normalise once. Shares no code with the op.
std::vector<double> dense_reference(const Tensor& qt, const Tensor& kt, const Tensor& vt, const Tensor& valid,
                                    bool causal, double scale, int64_t N, int64_t levels) {
  const int64_t B = qt.size(0), H = qt.size(1), T = qt.size(2), dh = qt.size(3);
  const std::vector<double> q = vals(qt), k = vals(kt), v = vals(vt);
  std::vector<bool> ok(static_cast<size_t>(B * T), true);
  if (valid.defined()) {
    const std::vector<double> m = vals(to_dtype(valid, DType::Float64));
    for (size_t i = 0; i < ok.size(); ++i) ok[i] = m[i] > 0.5;
  }
  int64_t L = 1;
  while ((N << (L - 1)) < T) ++L;  // the levels that have an off-diagonal block
  if (levels > 0 && levels < L) L = levels;
  std::vector<double> y(static_cast<size_t>(B * H * T * dh), 0.0);
  auto at = [&](const std::vector<double>& x, int64_t b, int64_t h, int64_t t, int64_t d) {
    return x[static_cast<size_t>(((b * H + h) * T + t) * dh + d)];
  };
  // The mean of x over the valid tokens of [t0, t0 + g) (positions >= T are padding).
  auto group_mean = [&](const std::vector<double>& x, int64_t b, int64_t h, int64_t t0, int64_t g,
                        std::vector<double>& out) {
    out.assign(static_cast<size_t>(dh), 0.0);
    int64_t n = 0;
    for (int64_t t = t0; t < t0 + g && t < T; ++t) {
      if (!ok[static_cast<size_t>(b * T + t)]) continue;
      ++n;
      for (int64_t d = 0; d < dh; ++d) out[static_cast<size_t>(d)] += at(x, b, h, t, d);
    }
    for (double& o : out) o = n ? o / static_cast<double>(n) : 0.0;
    return n;
  };
  std::vector<double> qc, kc, s(static_cast<size_t>(T));
  std::vector<bool> on(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        if (!ok[static_cast<size_t>(b * T + i)]) continue;
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          on[static_cast<size_t>(j)] = false;
          if (!ok[static_cast<size_t>(b * T + j)]) continue;
          if (i / N == j / N) {  // level 0
            if (causal && j > i) continue;
            double d = 0;
            for (int64_t c = 0; c < dh; ++c) d += at(q, b, h, i, c) * at(k, b, h, j, c);
            s[static_cast<size_t>(j)] = d * scale;
          } else {
            int64_t l = 1;
            while (((i / (N << (l - 1))) ^ 1) != j / (N << (l - 1))) ++l;
            if (l >= L) continue;  // beyond the levels used
            const int64_t g = int64_t{1} << (l - 1);
            if (causal && j > i) continue;  // the super-diagonal block
            if (causal) {
              qc.assign(static_cast<size_t>(dh), 0.0);
              for (int64_t c = 0; c < dh; ++c) qc[static_cast<size_t>(c)] = at(q, b, h, i, c);
            } else {
              group_mean(q, b, h, i / g * g, g, qc);
            }
            group_mean(k, b, h, j / g * g, g, kc);
            double d = 0;
            for (int64_t c = 0; c < dh; ++c) d += qc[static_cast<size_t>(c)] * kc[static_cast<size_t>(c)];
            s[static_cast<size_t>(j)] = d * scale;
          }
          on[static_cast<size_t>(j)] = true;
          mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        double z = 0;
        std::vector<double> acc(static_cast<size_t>(dh), 0.0);
        for (int64_t j = 0; j < T; ++j) {
          if (!on[static_cast<size_t>(j)]) continue;
          const double w = std::exp(s[static_cast<size_t>(j)] - mx);
          z += w;
          for (int64_t c = 0; c < dh; ++c) acc[static_cast<size_t>(c)] += w * at(v, b, h, j, c);
        }
        for (int64_t c = 0; c < dh; ++c)
          y[static_cast<size_t>(((b * H + h) * T + i) * dh + c)] = z > 0 ? acc[static_cast<size_t>(c)] / z : 0.0;
      }
  return y;
}

Tensor padding(const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<int64_t> v;
  for (int64_t n : lengths)
    for (int64_t t = 0; t < T; ++t) v.push_back(t < n);
  return gt(from_vector(v, {static_cast<int64_t>(lengths.size()), T}), 0.0);
}

struct QKV {
  Tensor q, k, v;
};
QKV random_qkv(int64_t B, int64_t H, int64_t T, int64_t dh, uint64_t seed, DType dt = DType::Float64) {
  Generator g(seed);
  return {randn({B, H, T, dh}, {dt}, &g), randn({B, H, T, dh}, {dt}, &g), randn({B, H, T, dh}, {dt}, &g)};
}

}  // namespace

TEST_CASE("htransformer_levels: 1 + ceil(log2(ceil(T / block)))") {
  CHECK(htransformer_levels(1, 4) == 1);
  CHECK(htransformer_levels(4, 4) == 1);
  CHECK(htransformer_levels(5, 4) == 2);
  CHECK(htransformer_levels(8, 4) == 2);
  CHECK(htransformer_levels(9, 4) == 3);
  CHECK(htransformer_levels(512, 16) == 6);
  CHECK(htransformer_levels(513, 16) == 7);
}

TEST_CASE("htransformer matches the dense entry-by-entry reference on random shapes") {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t B = 1 + static_cast<int64_t>(rng() % 2), H = 1 + static_cast<int64_t>(rng() % 2);
    const int64_t N = 1 + static_cast<int64_t>(rng() % 4), T = 1 + static_cast<int64_t>(rng() % 29);
    const int64_t dh = 1 + static_cast<int64_t>(rng() % 4), levels = static_cast<int64_t>(rng() % 4);
    const bool causal = rng() % 2, masked = rng() % 2;
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < B; ++b) lengths.push_back(b == 0 ? T : static_cast<int64_t>(rng() % (T + 1)));
    const Tensor valid = masked ? padding(lengths, T) : Tensor();
    const QKV x = random_qkv(B, H, T, dh, 100 + static_cast<uint64_t>(trial));
    const double scale = 0.7;
    INFO("B " << B << " H " << H << " T " << T << " dh " << dh << " N " << N << " levels " << levels << " causal "
              << causal << " masked " << masked);
    const std::vector<double> want = dense_reference(x.q, x.k, x.v, valid, causal, scale, N, levels);
    const Tensor y = htransformer_attention(x.q, x.k, x.v, valid, causal, scale, N, levels);
    CHECK(y.shape() == x.q.shape());
    check_close(vals(y), want, 1e-12);
    check_close(vals(htransformer_attention_reference(x.q, x.k, x.v, valid, causal, scale, N, levels)), want, 1e-12);
  }
}

TEST_CASE("fused htransformer: forward and gradients equal the composite's on random shapes") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t B = 1 + static_cast<int64_t>(rng() % 3), H = 1 + static_cast<int64_t>(rng() % 3);
    const int64_t N = 1 + static_cast<int64_t>(rng() % 6), T = 1 + static_cast<int64_t>(rng() % 70);
    const int64_t dh = 1 + static_cast<int64_t>(rng() % 6), levels = static_cast<int64_t>(rng() % 4);
    const bool causal = rng() % 2, masked = rng() % 2;
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < B; ++b) lengths.push_back(static_cast<int64_t>(rng() % (T + 1)));
    const Tensor valid = masked ? padding(lengths, T) : Tensor();
    INFO("B " << B << " H " << H << " T " << T << " dh " << dh << " N " << N << " levels " << levels << " causal "
              << causal << " masked " << masked);
    const QKV x = random_qkv(B, H, T, dh, 300 + static_cast<uint64_t>(trial));
    Generator g(trial);
    const Tensor r = randn(x.q.shape(), {DType::Float64}, &g);
    std::vector<std::vector<double>> outs;
    for (bool fused : {true, false}) {
      const Tensor q = clone(x.q).set_requires_grad(true), k = clone(x.k).set_requires_grad(true);
      const Tensor v = clone(x.v).set_requires_grad(true);
      const Tensor y = fused ? htransformer_attention(q, k, v, valid, causal, 0.6, N, levels)
                             : htransformer_attention_reference(q, k, v, valid, causal, 0.6, N, levels);
      sum(y * r).backward();
      std::vector<double> all = vals(y);
      for (const Tensor& t : {q, k, v}) {
        const std::vector<double> gr = vals(t.grad());
        all.insert(all.end(), gr.begin(), gr.end());
      }
      outs.push_back(all);
    }
    check_close(outs[0], outs[1], 1e-11);
  }
}

TEST_CASE("fused htransformer: float32 with 1 and 2 threads gives the same bits") {
  const QKV x = random_qkv(2, 3, 77, 8, 4, DType::Float32);
  const Tensor valid = padding({77, 40}, 77);
  std::vector<std::vector<double>> outs;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    outs.push_back(vals(htransformer_attention(x.q, x.k, x.v, valid, false, 0.3, 4)));
  }
  set_num_threads(0);
  CHECK(outs[0] == outs[1]);
}

TEST_CASE("htransformer: T <= block is softmax attention (mha_attention)") {
  for (bool causal : {false, true}) {
    for (int64_t T : {1, 5, 8}) {
      const QKV x = random_qkv(2, 3, T, 4, 7);
      const Tensor valid = padding({T, (T + 1) / 2}, T);
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

TEST_CASE("htransformer with one level is softmax attention within each block") {
  for (bool causal : {false, true}) {
    const int64_t T = 23, N = 5;
    const QKV x = random_qkv(2, 2, T, 3, 11);
    const Tensor valid = padding({T, 17}, T);
    const Tensor y = htransformer_attention(x.q, x.k, x.v, valid, causal, 0.8, N, 1);
    std::vector<Tensor> parts;
    for (int64_t t0 = 0; t0 < T; t0 += N) {
      const int64_t n = std::min(N, T - t0);
      auto cut = [&](const Tensor& t) { return contiguous(narrow(t, 2, t0, n)); };
      parts.push_back(mha_attention(cut(x.q), cut(x.k), cut(x.v), contiguous(narrow(valid, 1, t0, n)), causal, 0.8));
    }
    check_close(vals(y), vals(cat(parts, 2) * reshape(to_dtype(valid, DType::Float64), {2, 1, T, 1})), 1e-12);
    // And with every level it is not (the off-diagonal blocks contribute).
    const Tensor full = htransformer_attention(x.q, x.k, x.v, valid, causal, 0.8, N);
    CHECK(max(abs(full - y)).item<double>() > 1e-3);
  }
}

TEST_CASE("htransformer causal: changing a future token changes no earlier output") {
  const int64_t T = 37, N = 4;
  const QKV x = random_qkv(1, 2, T, 3, 5);
  const Tensor y = htransformer_attention(x.q, x.k, x.v, Tensor(), true, 1.0, N);
  for (int64_t t : {1, 4, 9, 16, 31, 36}) {
    auto bump = [&](const Tensor& a) {
      Tensor b = clone(a);
      Tensor row = narrow(b, 2, t, 1);
      copy_(row, narrow(a, 2, t, 1) + 3.0);
      return b;
    };
    const Tensor y2 = htransformer_attention(bump(x.q), bump(x.k), bump(x.v), Tensor(), true, 1.0, N);
    INFO("changed token " << t);
    CHECK(vals(narrow(y2, 2, 0, t)) == vals(narrow(y, 2, 0, t)));
    CHECK(max(abs(narrow(y2, 2, t, 1) - narrow(y, 2, t, 1))).item<double>() > 1e-6);  // it does see itself
  }
  // Bidirectional does see later tokens (through the coarse levels too).
  const Tensor b1 = htransformer_attention(x.q, x.k, x.v, Tensor(), false, 1.0, N);
  Tensor k2 = clone(x.k);
  Tensor last = narrow(k2, 2, T - 1, 1);
  fill_(last, 2.0);
  const Tensor b2 = htransformer_attention(x.q, k2, x.v, Tensor(), false, 1.0, N);
  CHECK(max(abs(narrow(b2, 2, 0, 1) - narrow(b1, 2, 0, 1))).item<double>() > 1e-9);
}

TEST_CASE("htransformer padding: zero outputs at padding, valid outputs as for the cut sequence") {
  for (bool causal : {false, true}) {
    const int64_t T = 26, n = 15, N = 3;
    QKV x = random_qkv(1, 2, T, 4, 21);
    const Tensor valid = padding({n}, T);
    const Tensor y = htransformer_attention(x.q, x.k, x.v, valid, causal, 0.6, N);
    CHECK(max(abs(narrow(y, 2, n, T - n))).item<double>() == 0.0);
    auto cut = [&](const Tensor& t) { return contiguous(narrow(t, 2, 0, n)); };
    const Tensor short_y = htransformer_attention(cut(x.q), cut(x.k), cut(x.v), Tensor(), causal, 0.6, N);
    check_close(vals(narrow(y, 2, 0, n)), vals(short_y), 1e-12);
    // The padded tokens' values do not matter.
    Tensor q2 = clone(x.q);
    Tensor tail = narrow(q2, 2, n, T - n);
    fill_(tail, 1e3);
    CHECK(vals(htransformer_attention(q2, x.k * 1.0, x.v, valid, causal, 0.6, N)) == vals(y));
  }
  // A row of all-padded keys gives 0, not NaN.
  const QKV x = random_qkv(1, 1, 9, 2, 3);
  const Tensor none = padding({0}, 9);
  CHECK(max(abs(htransformer_attention(x.q, x.k, x.v, none, false, 1.0, 2))).item<double>() == 0.0);
}

TEST_CASE("htransformer float64 gradients (central differences)") {
  struct Cfg {
    int64_t T, N, levels;
    bool causal, masked;
  };
  for (const Cfg c : {Cfg{7, 2, 0, false, false}, Cfg{7, 2, 0, true, true}, Cfg{13, 3, 0, false, true},
                      Cfg{11, 2, 2, true, false}, Cfg{4, 8, 0, false, true}}) {
    INFO("T " << c.T << " N " << c.N << " levels " << c.levels << " causal " << c.causal);
    const Tensor valid = c.masked ? padding({c.T, c.T - 3}, c.T) : Tensor();
    const int64_t B = c.masked ? 2 : 1;
    const Tensor q = leaf({B, 2, c.T, 3}, -1.5, 1.5, 1), k = leaf({B, 2, c.T, 3}, -1.5, 1.5, 2);
    const Tensor v = leaf({B, 2, c.T, 3}, -1.5, 1.5, 3);
    gradcheck(
        [&](const std::vector<Tensor>& in) {
          return htransformer_attention(in[0], in[1], in[2], valid, c.causal, 0.9, c.N, c.levels);
        },
        {q, k, v});
    gradcheck(
        [&](const std::vector<Tensor>& in) {
          return htransformer_attention_reference(in[0], in[1], in[2], valid, c.causal, 0.9, c.N, c.levels);
        },
        {q, k, v});
  }
  // Non-contiguous inputs.
  const Tensor qt = transposed_leaf({1, 2, 6, 3}, -1.5, 1.5, 4);
  const Tensor k = leaf({1, 2, 6, 3}, -1.5, 1.5, 5), v = leaf({1, 2, 6, 3}, -1.5, 1.5, 6);
  gradcheck(
      [](const std::vector<Tensor>& in) { return htransformer_attention(in[0], in[1], in[2], {}, false, 1.0, 1); },
      {qt, k, v});
}

TEST_CASE("htransformer float32 agrees with float64") {
  const QKV x = random_qkv(2, 2, 45, 8, 9, DType::Float32);
  const Tensor valid = padding({45, 30}, 45);
  for (bool causal : {false, true}) {
    const Tensor y32 = htransformer_attention(x.q, x.k, x.v, valid, causal, 0.35, 4);
    auto d = [](const Tensor& t) { return to_dtype(t, DType::Float64); };
    const Tensor y64 = htransformer_attention(d(x.q), d(x.k), d(x.v), valid, causal, 0.35, 4);
    check_close(vals(y32), vals(y64), 1e-5);
  }
}

TEST_CASE("htransformer bad configurations") {
  const Tensor q = zeros({1, 2, 5, 3}, {DType::Float32});
  check_error([&] { htransformer_attention(q, q, q, {}, false, 1.0, 0); }, "block must be >= 1, got 0");
  check_error([&] { htransformer_attention(q, q, q, {}, false, 1.0, 2, -1); }, "levels must be >= 1");
  check_error([&] { htransformer_attention(q, zeros({1, 2, 4, 3}), q, {}, false, 1.0, 2); },
              "k must have q's shape [1, 2, 5, 3], got [1, 2, 4, 3]");
  check_error([&] { htransformer_attention(zeros({2, 5, 3}), zeros({2, 5, 3}), zeros({2, 5, 3}), {}, false, 1.0, 2); },
              "q must be [B, H, T, dh]");
  check_error([&] { htransformer_attention(q, q, to_dtype(q, DType::Float64), {}, false, 1.0, 2); },
              "v is float64 but q is float32");
  check_error([&] { htransformer_attention(q, q, q, padding({5}, 4), false, 1.0, 2); }, "valid must be Bool [1, 5]");
  check_error([&] { htransformer_attention(q, q, q, {}, false, NAN, 2); }, "scale must be finite");
  const Tensor e = zeros({1, 2, 0, 3});
  check_error([&] { htransformer_attention(e, e, e, {}, false, 1.0, 2); }, "the sequence is empty");
  HTransformerConfig c;
  c.block = 0;
  check_error([&] { HTransformerAttention a(c); }, "HTransformerAttention: block must be >= 1");
}

TEST_CASE("HTransformerAttention: MHA's parameters, forward and backward, hkt-small length") {
  Generator g(3);
  HTransformerConfig c;
  c.dim = 16;
  c.heads = 2;
  c.gen = &g;
  HTransformerAttention h(c);
  MultiHeadAttention m(c);
  CHECK(h.num_parameters() == m.num_parameters());
  const auto hp = h.named_parameters(), mp = m.named_parameters();
  REQUIRE(hp.size() == mp.size());
  for (size_t i = 0; i < hp.size(); ++i) {
    CHECK(hp[i].first == mp[i].first);
    CHECK(hp[i].second.shape() == mp[i].second.shape());
  }
  // T = 512 (hkt-small's length) with the default block 16: 6 levels.
  const Tensor x = randn({2, 512, 16}, {}, &g);
  const Tensor valid = padding({512, 300}, 512);
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
                                          heads(hc.wv->forward(x64)), {}, true, 1.0 / std::sqrt(8.0), 16);
  const Tensor want = hc.wo->forward(reshape(permute(a, {0, 2, 1, 3}), {1, 19, 16}));
  check_close(vals(hc(x64)), vals(want), 1e-12);
  HTransformerConfig cr = c;
  cr.fused = false;
  HTransformerAttention hr(cr);
  {
    NoGradGuard ng;
    for (size_t i = 0; i < 4; ++i) {
      Tensor dst = hr.named_parameters()[i].second;
      copy_(dst, hc.named_parameters()[i].second);
    }
  }
  check_close(vals(hr(x64)), vals(hc(x64)), 1e-12);
}
