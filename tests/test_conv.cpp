// causal_depthwise_conv1d: forward against a naive loop, causality, float64
// gradient checks, float32 / float64 agreement, determinism, errors.
#include <cmath>
#include <vector>

#include "helpers/check.hpp"
#include "hkt/ops/conv.hpp"

using namespace hkt;
using namespace hkt::test;

namespace {

struct Case {
  int64_t B, T, C, k, s;
};

// y[b, t, c] = bias[c] + sum_j w[c, j] * x[b, s*t + s - 1 - j, c], zeros outside [0, T).
std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& w,
                              const std::vector<double>* bias, const Case& p) {
  const int64_t T_out = (p.T + p.s - 1) / p.s;
  std::vector<double> y(static_cast<size_t>(p.B * T_out * p.C));
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t t = 0; t < T_out; ++t)
      for (int64_t c = 0; c < p.C; ++c) {
        double acc = bias ? (*bias)[static_cast<size_t>(c)] : 0.0;
        for (int64_t j = 0; j < p.k; ++j) {
          const int64_t i = p.s * t + p.s - 1 - j;
          if (i < 0 || i >= p.T) continue;
          acc += w[static_cast<size_t>(c * p.k + j)] * x[static_cast<size_t>((b * p.T + i) * p.C + c)];
        }
        y[static_cast<size_t>((b * T_out + t) * p.C + c)] = acc;
      }
  return y;
}

Tensor rnd(const Shape& s, uint64_t seed, DType dt = DType::Float64) {
  Generator g(seed);
  return uniform(s, -1.0, 1.0, {dt}, &g);
}

}  // namespace

TEST_CASE("causal_depthwise_conv1d: a tiny example by hand") {
  // B = 1, T = 5, C = 2, k = 3, s = 2 -> T_out = 3; output t reads inputs 2t+1, 2t, 2t-1.
  // channel 0: x = 1..5, w = [1, 10, 100], bias 0.5
  //   t=0: w0*x[1] + w1*x[0]            = 2 + 10          -> 12.5
  //   t=1: w0*x[3] + w1*x[2] + w2*x[1]  = 4 + 30 + 200    -> 234.5
  //   t=2: w0*0    + w1*x[4] + w2*x[3]  = 0 + 50 + 400    -> 450.5  (x[5] is past the end)
  // channel 1: x = 1, w = [1, 2, 3], bias 0 -> 3, 6, 5
  Tensor x = from_vector(std::vector<double>{1, 1, 2, 1, 3, 1, 4, 1, 5, 1}, {1, 5, 2});
  Tensor w = from_vector(std::vector<double>{1, 10, 100, 1, 2, 3}, {2, 3});
  Tensor b = from_vector(std::vector<double>{0.5, 0}, {2});
  Tensor y = causal_depthwise_conv1d(x, w, b, 2);
  CHECK(y.shape() == Shape{1, 3, 2});
  CHECK(y.to_vector<double>() == std::vector<double>{12.5, 3, 234.5, 6, 450.5, 5});
  // Without bias, stride 1, k = 2: y[t] = w0 x[t] + w1 x[t-1].
  Tensor y1 = causal_depthwise_conv1d(x, narrow(w, 1, 0, 2), Tensor(), 1);
  CHECK(y1.shape() == Shape{1, 5, 2});
  CHECK(y1.to_vector<double>() == std::vector<double>{1, 1, 12, 3, 23, 3, 34, 3, 45, 3});
  // float32 gives the same small integers.
  Tensor y32 = causal_depthwise_conv1d(to_dtype(x, DType::Float32), to_dtype(w, DType::Float32),
                                       to_dtype(b, DType::Float32), 2);
  CHECK(y32.dtype() == DType::Float32);
  CHECK(vals(y32) == std::vector<double>{12.5, 3, 234.5, 6, 450.5, 5});
}

TEST_CASE("causal_depthwise_conv1d: forward matches a naive loop") {
  const std::vector<Case> cases = {
      {1, 1, 1, 1, 1},  {2, 1, 3, 3, 2},  {2, 7, 3, 3, 2},  {3, 8, 5, 3, 2},  {2, 9, 4, 1, 1},
      {2, 9, 4, 1, 3},  {1, 4, 2, 7, 1},  {2, 3, 3, 6, 2},  {2, 10, 5, 3, 3}, {2, 11, 6, 5, 3},
      {1, 13, 17, 4, 4}, {2, 5, 3, 2, 7}, {3, 64, 33, 3, 1}, {2, 100, 40, 3, 2},
  };
  uint64_t seed = 100;
  for (const Case& p : cases) {
    INFO("B=" << p.B << " T=" << p.T << " C=" << p.C << " k=" << p.k << " s=" << p.s);
    Tensor x = rnd({p.B, p.T, p.C}, seed++), w = rnd({p.C, p.k}, seed++), b = rnd({p.C}, seed++);
    const auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
    Tensor y = causal_depthwise_conv1d(x, w, b, p.s);
    CHECK(y.shape() == Shape{p.B, (p.T + p.s - 1) / p.s, p.C});
    check_close(y.to_vector<double>(), reference(xv, wv, &bv, p), 1e-13);
    Tensor yn = causal_depthwise_conv1d(x, w, Tensor(), p.s);
    check_close(yn.to_vector<double>(), reference(xv, wv, nullptr, p), 1e-13);
    // float32 agrees to float precision.
    Tensor y32 = causal_depthwise_conv1d(to_dtype(x, DType::Float32), to_dtype(w, DType::Float32),
                                         to_dtype(b, DType::Float32), p.s);
    check_close(vals(y32), reference(xv, wv, &bv, p), 1e-5);
  }
  // A non-contiguous x gives the same values as its contiguous copy.
  Tensor xt = transpose(rnd({2, 6, 5}, 1), 0, 2);  // [5, 6, 2]
  REQUIRE(!xt.is_contiguous());
  Tensor w = rnd({2, 3}, 2), b = rnd({2}, 3);
  CHECK(causal_depthwise_conv1d(xt, w, b, 2).to_vector<double>() ==
        causal_depthwise_conv1d(contiguous(xt), w, b, 2).to_vector<double>());
}

TEST_CASE("causal_depthwise_conv1d: output t depends only on inputs <= s*(t+1) - 1") {
  const std::vector<Case> cases = {{2, 9, 3, 3, 2}, {1, 8, 2, 3, 1}, {1, 10, 2, 5, 3}, {1, 7, 2, 1, 2}};
  for (const Case& p : cases) {
    INFO("T=" << p.T << " k=" << p.k << " s=" << p.s);
    const int64_t T_out = (p.T + p.s - 1) / p.s;
    Tensor x = rnd({p.B, p.T, p.C}, 11), w = rnd({p.C, p.k}, 12), b = rnd({p.C}, 13);
    const auto y0 = causal_depthwise_conv1d(x, w, b, p.s).to_vector<double>();
    for (int64_t i = 0; i < p.T; ++i) {
      auto xv = x.to_vector<double>();
      for (int64_t bb = 0; bb < p.B; ++bb)
        for (int64_t c = 0; c < p.C; ++c) xv[static_cast<size_t>((bb * p.T + i) * p.C + c)] += 10.0;
      const auto y1 = causal_depthwise_conv1d(from_vector(xv, x.shape()), w, b, p.s).to_vector<double>();
      for (int64_t t = 0; t < T_out; ++t) {
        // Output t reads inputs s*t + s - k .. s*t + s - 1.
        const bool reads = i <= p.s * (t + 1) - 1 && i >= p.s * (t + 1) - p.k;
        for (int64_t bb = 0; bb < p.B; ++bb)
          for (int64_t c = 0; c < p.C; ++c) {
            const size_t o = static_cast<size_t>((bb * T_out + t) * p.C + c);
            INFO("i=" << i << " t=" << t);
            if (p.s * (t + 1) - 1 < i) CHECK(y1[o] == y0[o]);  // causality
            CHECK((y1[o] != y0[o]) == reads);                   // exactly the receptive field
          }
      }
    }
  }
}

TEST_CASE("causal_depthwise_conv1d: float64 gradients") {
  auto conv = [](int64_t s) {
    return [s](const std::vector<Tensor>& in) { return causal_depthwise_conv1d(in[0], in[1], in[2], s); };
  };
  auto conv_nb = [](int64_t s) {
    return [s](const std::vector<Tensor>& in) { return causal_depthwise_conv1d(in[0], in[1], Tensor(), s); };
  };
  SUBCASE("stride 1") { gradcheck(conv(1), {leaf({2, 6, 3}), leaf({3, 3}, -1.5, 1.5, 8), leaf({3}, -1.5, 1.5, 9)}); }
  SUBCASE("stride 2, T divisible") {
    gradcheck(conv(2), {leaf({2, 8, 3}), leaf({3, 3}, -1.5, 1.5, 8), leaf({3}, -1.5, 1.5, 9)});
  }
  SUBCASE("stride 2, T not divisible") {
    gradcheck(conv(2), {leaf({2, 7, 4}), leaf({4, 3}, -1.5, 1.5, 8), leaf({4}, -1.5, 1.5, 9)});
  }
  SUBCASE("stride 3, k > s, T not divisible") {
    gradcheck(conv(3), {leaf({2, 10, 2}), leaf({2, 5}, -1.5, 1.5, 8), leaf({2}, -1.5, 1.5, 9)});
  }
  SUBCASE("k > T, T = 1, k = 1, s > k") {
    gradcheck(conv(1), {leaf({2, 3, 2}), leaf({2, 6}, -1.5, 1.5, 8), leaf({2}, -1.5, 1.5, 9)});
    gradcheck(conv(2), {leaf({3, 1, 2}), leaf({2, 3}, -1.5, 1.5, 8), leaf({2}, -1.5, 1.5, 9)});
    gradcheck(conv(1), {leaf({2, 5, 3}), leaf({3, 1}, -1.5, 1.5, 8), leaf({3}, -1.5, 1.5, 9)});
    gradcheck(conv(3), {leaf({2, 7, 3}), leaf({3, 2}, -1.5, 1.5, 8), leaf({3}, -1.5, 1.5, 9)});
  }
  SUBCASE("without bias") {
    gradcheck(conv_nb(2), {leaf({2, 9, 3}), leaf({3, 3}, -1.5, 1.5, 8)});
    gradcheck(conv_nb(1), {leaf({1, 5, 2}), leaf({2, 3}, -1.5, 1.5, 8)});
  }
  SUBCASE("non-contiguous x") {
    gradcheck(conv(2), {transposed_leaf({2, 7, 3}), leaf({3, 3}, -1.5, 1.5, 8), leaf({3}, -1.5, 1.5, 9)});
    gradcheck(conv(1), {transposed_leaf({3, 4, 2}), transposed_leaf({2, 3}, -1.5, 1.5, 10),
                        leaf({2}, -1.5, 1.5, 9)});
  }
  SUBCASE("inside a larger graph") {
    gradcheck([](const std::vector<Tensor>& in) {
      Tensor h = causal_depthwise_conv1d(tanh(in[0]), in[1], in[2], 2);
      return causal_depthwise_conv1d(h * h, in[1], in[2], 1);
    }, {leaf({2, 7, 3}), leaf({3, 3}, -1.5, 1.5, 8), leaf({3}, -1.5, 1.5, 9)});
  }
}

TEST_CASE("causal_depthwise_conv1d: only the needed gradients") {
  Tensor x = leaf({2, 5, 3}), w = rnd({3, 3}, 2), b = rnd({3}, 3);
  sum(causal_depthwise_conv1d(x, w, b, 2)).backward();
  CHECK(x.grad().defined());
  CHECK(!w.grad().defined());
  Tensor x2 = rnd({2, 5, 3}, 4), w2 = leaf({3, 3});
  sum(causal_depthwise_conv1d(x2, w2, Tensor(), 2)).backward();
  CHECK(w2.grad().defined());
  CHECK(!x2.grad().defined());
  // No input requires grad: no graph.
  CHECK(!causal_depthwise_conv1d(x2, w, b, 1).requires_grad());
}

TEST_CASE("causal_depthwise_conv1d: float32 agrees with float64; backward is reproducible") {
  for (int64_t s : {int64_t{1}, int64_t{2}}) {
    INFO("stride " << s);
    const int64_t B = 4, T = 333, C = 64, k = 3, T_out = (T + s - 1) / s;
    Tensor x64 = rnd({B, T, C}, 21), w64 = rnd({C, k}, 22), b64 = rnd({C}, 23), g64 = rnd({B, T_out, C}, 24);
    auto run = [&](DType dt) {
      Tensor x = to_dtype(x64, dt).set_requires_grad(true);
      Tensor w = to_dtype(w64, dt).set_requires_grad(true);
      Tensor b = to_dtype(b64, dt).set_requires_grad(true);
      Tensor y = causal_depthwise_conv1d(x, w, b, s);
      y.backward(to_dtype(g64, dt));
      return std::vector<std::vector<double>>{vals(y), vals(x.grad()), vals(w.grad()), vals(b.grad())};
    };
    const auto r64 = run(DType::Float64), r32 = run(DType::Float32);
    const char* what[] = {"y", "dx", "dw", "db"};
    for (size_t q = 0; q < 4; ++q) {
      INFO(what[q]);
      // dw and db sum B * T_out products: scale the tolerance with the sum's size.
      check_close(r32[q], r64[q], q >= 2 ? 1e-5 * std::sqrt(static_cast<double>(B * T_out)) : 1e-5);
    }
    // Same inputs, same bits.
    const auto again = run(DType::Float32);
    for (size_t q = 0; q < 4; ++q) CHECK(again[q] == r32[q]);
    // The gradients match the definition computed by a naive loop in double.
    const auto xv = x64.to_vector<double>(), wv = w64.to_vector<double>(), gv = g64.to_vector<double>();
    std::vector<double> dx(xv.size(), 0.0), dw(wv.size(), 0.0), db(static_cast<size_t>(C), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T_out; ++t)
        for (int64_t c = 0; c < C; ++c) {
          const double g = gv[static_cast<size_t>((b * T_out + t) * C + c)];
          db[static_cast<size_t>(c)] += g;
          for (int64_t j = 0; j < k; ++j) {
            const int64_t i = s * t + s - 1 - j;
            if (i < 0 || i >= T) continue;
            const size_t xi = static_cast<size_t>((b * T + i) * C + c);
            dx[xi] += wv[static_cast<size_t>(c * k + j)] * g;
            dw[static_cast<size_t>(c * k + j)] += xv[xi] * g;
          }
        }
    check_close(r64[1], dx, 1e-12);
    check_close(r64[2], dw, 1e-11);
    check_close(r64[3], db, 1e-11);
  }
}

TEST_CASE("causal_depthwise_conv1d: errors") {
  Tensor x = zeros({2, 5, 3}), w = zeros({3, 3}), b = zeros({3});
  check_error([&] { (void)causal_depthwise_conv1d(zeros({5, 3}), w, b); },
              "causal_depthwise_conv1d: x must be 3-D [B, T, C], got [5, 3]");
  check_error([&] { (void)causal_depthwise_conv1d(x, zeros({4, 3}), b); },
              "causal_depthwise_conv1d: weight must have shape [C, k] with C = 3 (the last dim of x [2, 5, 3]) "
              "and k >= 1, got [4, 3]");
  check_error([&] { (void)causal_depthwise_conv1d(x, zeros({3}), b); }, "got [3]");
  check_error([&] { (void)causal_depthwise_conv1d(x, zeros({3, 0}), b); }, "k >= 1, got [3, 0]");
  check_error([&] { (void)causal_depthwise_conv1d(x, w, zeros({4})); },
              "causal_depthwise_conv1d: bias must have shape [3] (the last dim of x [2, 5, 3]), got [4]");
  check_error([&] { (void)causal_depthwise_conv1d(x, w, b, 0); },
              "causal_depthwise_conv1d: stride must be >= 1, got 0");
  check_error([&] { (void)causal_depthwise_conv1d(x, w, b, -2); }, "stride must be >= 1, got -2");
  check_error([&] { (void)causal_depthwise_conv1d(x, zeros({3, 3}, {DType::Float64}), b); },
              "causal_depthwise_conv1d: weight is float64 but x is float32");
  check_error([&] { (void)causal_depthwise_conv1d(x, w, zeros({3}, {DType::Float64})); },
              "causal_depthwise_conv1d: bias is float64 but x is float32");
  check_error([&] { (void)causal_depthwise_conv1d(zeros({2, 5, 3}, {DType::Int64}), w, b); },
              "causal_depthwise_conv1d: expected a floating x, got int64");
}
