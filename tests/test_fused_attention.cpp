// The fused attention op (hkt_attention, mha_attention) against a composite
// reference built from plain ops (tests/helpers/composite_attention.hpp, the
// same formulas as models/src/attention.cpp: combined_scores +
// masked_attention): what the op harness (tests/op_harness/attention.cpp) cannot
// say. Its float64 gradchecks and thread checks are in the harness.
#include <algorithm>
#include <cmath>

#include "helpers/check.hpp"
#include "helpers/composite_attention.hpp"
#include "hkt/ops/attention.hpp"
#include "hkt/ops/threads.hpp"

using namespace hkt;
using namespace hkt::test;

namespace {

// Batch 0: random keys valid with the first two padded (causal rows 0, 1 see
// no key); batch 1: right padding to ceil(T / 2); batch 2: fully padded.
Tensor make_valid(int64_t B, int64_t T, Generator& g) {
  const std::vector<double> r = vals(rand({B, T}, {DType::Float64}, &g));
  std::vector<int64_t> v;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      bool ok = true;
      if (b % 3 == 0) ok = t >= 2 && r[static_cast<size_t>(b * T + t)] < 0.7;
      if (b % 3 == 1) ok = t < (T + 1) / 2;
      if (b % 3 == 2) ok = false;
      v.push_back(ok);
    }
  return gt(from_vector(v, {B, T}), 0.0);
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double x : vals(t)) m = std::max(m, std::abs(x));
  return m;
}

// max |a - b| / max(max |b|, floor). The floor covers gradients that are 0
// in exact arithmetic (a level whose coarse scores are constant along every
// row only shifts the softmax), where float32 leaves rounding noise.
double rel_err(const Tensor& a, const Tensor& b, double floor = 0) {
  const std::vector<double> x = vals(a), y = vals(b);
  REQUIRE(x.size() == y.size());
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  const double m = std::max(max_abs(b), floor);
  return m > 0 ? d / m : d;
}

struct Case {
  int64_t B, H, T, dh, L;
  bool causal, pad;
};

struct Inputs {
  std::vector<Tensor> q, k;
  Tensor v, lam, valid, w;
};

Inputs make_inputs(const Case& c, uint64_t seed) {
  Generator g(seed);
  Inputs in;
  const TensorOptions f64{DType::Float64};
  for (int64_t l = 0; l < c.L; ++l) {
    in.q.push_back(randn({c.B, c.H, hkt_level_len(c.T, l), c.dh}, f64, &g) * 1.5);
    in.k.push_back(randn({c.B, c.H, hkt_level_len(c.T, l), c.dh}, f64, &g) * 1.5);
  }
  in.v = randn({c.B, c.H, c.T, c.dh}, f64, &g);
  in.lam = uniform({c.H, c.L}, 0.1, 1.0, f64, &g);
  in.w = randn({c.B, c.H, c.T, c.dh}, f64, &g);
  if (c.pad) in.valid = make_valid(c.B, c.T, g);
  return in;
}

// Leaves of dtype dt (copies) in the order q..., k..., v, lambda.
std::vector<Tensor> leaves(const Inputs& in, DType dt) {
  std::vector<Tensor> r;
  for (const Tensor& t : in.q) r.push_back(to_dtype(t, dt).detach().set_requires_grad(true));
  for (const Tensor& t : in.k) r.push_back(to_dtype(t, dt).detach().set_requires_grad(true));
  r.push_back(to_dtype(in.v, dt).detach().set_requires_grad(true));
  r.push_back(to_dtype(in.lam, dt).detach().set_requires_grad(true));
  return r;
}

using AttnFn = Tensor (*)(const std::vector<Tensor>&, const std::vector<Tensor>&, const Tensor&, const Tensor&,
                          const Tensor&, bool, double);

// Output and gradients of sum(out * w) for leaves `x`.
std::vector<Tensor> run(AttnFn f, const std::vector<Tensor>& x, const Case& c, const Inputs& in, DType dt) {
  const size_t L = static_cast<size_t>(c.L);
  std::vector<Tensor> q(x.begin(), x.begin() + static_cast<long>(L));
  std::vector<Tensor> k(x.begin() + static_cast<long>(L), x.begin() + static_cast<long>(2 * L));
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
  const Tensor out = f(q, k, x[2 * L], x[2 * L + 1], in.valid, c.causal, scale);
  sum(out * to_dtype(in.w, dt)).backward();
  std::vector<Tensor> r{out.detach()};
  for (const Tensor& t : x) r.push_back(t.grad());
  return r;
}

struct Worst {
  double fwd = 0, grad = 0;
};

void check_case(const Case& c, uint64_t seed, Worst& worst) {
  INFO("B=" << c.B << " H=" << c.H << " T=" << c.T << " dh=" << c.dh << " L=" << c.L << " causal=" << c.causal
            << " pad=" << c.pad);
  const Inputs in = make_inputs(c, seed);
  const std::vector<Tensor> ref = run(&composite_attention, leaves(in, DType::Float64), c, in, DType::Float64);
  const std::vector<Tensor> got = run(&hkt_attention, leaves(in, DType::Float32), c, in, DType::Float32);
  REQUIRE(got.size() == ref.size());
  const double ef = rel_err(got[0], ref[0]);
  CHECK(ef < 1e-5);
  worst.fwd = std::max(worst.fwd, ef);
  for (size_t i = 1; i < got.size(); ++i) {
    INFO("gradient of input " << i - 1 << " (q..., k..., v, lambda)");
    REQUIRE(got[i].defined());
    CHECK(got[i].shape() == ref[i].shape());
    INFO("max |reference gradient| = " << max_abs(ref[i]));
    const double eg = rel_err(got[i], ref[i], 1.0);
    CHECK(eg < 1e-4);
    worst.grad = std::max(worst.grad, eg);
  }
  if (c.pad) {
    // Fully padded batch (b = 2): zero output, never NaN.
    const std::vector<double> o = vals(got[0]);
    CHECK(std::all_of(o.begin(), o.end(), [](double x) { return std::isfinite(x); }));
    if (c.B >= 3) CHECK(max_abs(select(got[0], 0, 2)) == 0.0);
  }
}

}  // namespace

TEST_CASE("fused attention matches the composite reference (float32 vs float64 composite)") {
  Worst worst;
  uint64_t seed = 100;
  int n = 0;
  for (int64_t T : {1, 7, 63, 64, 100, 257})
    for (int64_t L = 1; L <= 4; ++L)
      for (int mask = 0; mask < 4; ++mask) {
        const bool causal = mask & 1, pad = mask & 2;
        const int64_t dh = (n++ % 2) ? 32 : 16;
        check_case({pad ? 3 : 1, 2, T, dh, L, causal, pad}, seed++, worst);
      }
  // T = 1000 (many tiles, the last one partial; the backward splits key tiles
  // into groups), dh = 64 and a coarse level wider than the default tile
  // (L = 5: tiles of 128; L = 8: tiles of 1024).
  for (int mask = 0; mask < 4; ++mask)
    check_case({mask >= 2 ? 2 : 1, 1, 1000, 16, 1 + mask, (mask & 1) != 0, mask >= 2}, seed++, worst);
  check_case({1, 2, 100, 64, 3, true, true}, seed++, worst);
  check_case({2, 1, 200, 64, 5, true, false}, seed++, worst);
  check_case({1, 1, 300, 8, 8, false, false}, seed++, worst);
  check_case({1, 1, 300, 8, 8, true, false}, seed++, worst);
  check_case({3, 1, 300, 5, 8, true, true}, seed++, worst);
  MESSAGE("max relative error, float32 fused vs float64 composite: forward " << worst.fwd << ", gradients "
                                                                            << worst.grad);
}

TEST_CASE("mha_attention is the L = 1 case with lambda = 1") {
  const Case c{2, 3, 37, 16, 1, true, true};
  Inputs in = make_inputs(c, 7);
  in.lam = ones({c.H, 1}, {DType::Float64});
  const std::vector<Tensor> ref = run(&composite_attention, leaves(in, DType::Float64), c, in, DType::Float64);
  const double scale = 0.25;
  const Tensor q = to_dtype(in.q[0], DType::Float32), k = to_dtype(in.k[0], DType::Float32);
  const Tensor v = to_dtype(in.v, DType::Float32);
  const Tensor out = mha_attention(q, k, v, in.valid, c.causal, scale);
  CHECK(rel_err(out, ref[0]) < 1e-5);
  const Tensor out2 = hkt_attention({q}, {k}, v, ones({c.H, 1}), in.valid, c.causal, scale);
  CHECK(vals(out) == vals(out2));
}

// A sequence shorter than a 64-wide tile runs in one smaller tile (AttnPlan):
// its output and gradients must be, bit for bit, those of the same rows of a
// sequence of 64 - off positions whose extra keys are padded and whose extra
// rows get no upstream gradient (one 64-wide tile there).
TEST_CASE("fused attention: a short sequence's small tile gives the bits of a 64-wide one") {
  uint64_t seed = 900;
  for (DType dt : {DType::Float32, DType::Float64})
    for (int64_t Ts : {1, 7, 13, 31, 40})
      for (int64_t L = 1; L <= 4; ++L)
        for (bool causal : {false, true}) {
          const int64_t Te = causal ? 63 : 64;
          INFO("dtype=" << dtype_name(dt) << " T=" << Ts << " L=" << L << " causal=" << causal);
          const Case ce{2, 2, Te, 12, L, causal, false};
          Inputs ext = make_inputs(ce, seed++);
          Inputs in = ext;
          for (int64_t l = 0; l < L; ++l) {
            const auto i = static_cast<size_t>(l);
            in.q[i] = clone(narrow(ext.q[i], 2, 0, hkt_level_len(Ts, l)));
            in.k[i] = clone(narrow(ext.k[i], 2, 0, hkt_level_len(Ts, l)));
          }
          in.v = clone(narrow(ext.v, 2, 0, Ts));
          in.w = clone(narrow(ext.w, 2, 0, Ts));
          ext.w = cat({in.w, zeros({2, 2, Te - Ts, 12}, {DType::Float64})}, 2);
          std::vector<int64_t> ok;
          for (int64_t b = 0; b < 2; ++b)
            for (int64_t t = 0; t < Te; ++t) ok.push_back(t < Ts);
          ext.valid = gt(from_vector(ok, {2, Te}), 0.0);
          const Case cs{2, 2, Ts, 12, L, causal, false};
          const std::vector<Tensor> a = run(&hkt_attention, leaves(in, dt), cs, in, dt);
          const std::vector<Tensor> b = run(&hkt_attention, leaves(ext, dt), ce, ext, dt);
          REQUIRE(a.size() == b.size());
          CHECK(vals(a[0]) == vals(narrow(b[0], 2, 0, Ts)));
          for (size_t i = 1; i < a.size(); ++i) {
            INFO("gradient of input " << i - 1 << " (q..., k..., v, lambda)");
            const Tensor bi = b[i].dim() == 4 ? narrow(b[i], 2, 0, a[i].size(2)) : b[i];
            CHECK(vals(a[i]) == vals(bi));
          }
        }
}

TEST_CASE("fused attention: gradients only where needed; non-contiguous inputs") {
  const Case c{2, 2, 19, 4, 2, false, true};
  const Inputs in = make_inputs(c, 31);
  Tensor q0 = in.q[0].detach().set_requires_grad(true);
  // k[0] as a transposed view of a [B, H, dh, T] tensor.
  Tensor k0 = transpose(clone(transpose(in.k[0], 2, 3)), 2, 3).detach().set_requires_grad(true);
  REQUIRE(!k0.is_contiguous());
  const Tensor out = hkt_attention({q0, in.q[1]}, {k0, in.k[1]}, in.v, in.lam, in.valid, false, 0.5);
  const Tensor ref = composite_attention({in.q[0], in.q[1]}, {in.k[0], in.k[1]}, in.v, in.lam, in.valid, false, 0.5);
  CHECK(rel_err(out, ref) < 1e-12);
  sum(out * in.w).backward();
  CHECK(q0.grad().defined());
  CHECK(k0.grad().defined());
  CHECK(k0.grad().shape() == k0.shape());
}

TEST_CASE("fused attention errors") {
  const TensorOptions f32{DType::Float32};
  const Tensor q = zeros({1, 2, 8, 4}, f32), q1 = zeros({1, 2, 4, 4}, f32), v = zeros({1, 2, 8, 4}, f32);
  const Tensor lam = ones({2, 2}, f32);
  check_error([&] { hkt_attention({}, {}, v, lam, Tensor(), false, 1.0); }, "L >= 1");
  check_error([&] { hkt_attention({q, q1}, {q}, v, lam, Tensor(), false, 1.0); }, "levels");
  check_error([&] { hkt_attention({q, q}, {q, q1}, v, lam, Tensor(), false, 1.0); }, "q[1] must be [1, 2, 4, 4]");
  check_error([&] { hkt_attention({q, q1}, {q, q1}, v, ones({2, 3}, f32), Tensor(), false, 1.0); },
              "lambda must be [H, L]");
  check_error([&] { hkt_attention({q, q1}, {q, q1}, v, lam, ones({1, 8}, f32), false, 1.0); },
              "valid must be Bool");
  check_error([&] { hkt_attention({q}, {q}, zeros({1, 2, 8, 4}, {DType::Float64}), ones({2, 1}, f32), Tensor(),
                                  false, 1.0); },
              "but v is");
  check_error([&] { hkt_attention({q}, {q}, zeros({2, 8, 4}, f32), ones({2, 1}, f32), Tensor(), false, 1.0); },
              "v must be [B, H, T, dh]");
}

TEST_CASE("hkt_level_len is ceil(T / 2^l)") {
  static_assert(hkt_level_len(1024, 3) == 128);
  for (int64_t T : {1, 2, 7, 63, 64, 100, 257, 1000})
    for (int64_t l = 0; l <= 10; ++l)
      CHECK(hkt_level_len(T, l) == static_cast<int64_t>(std::ceil(static_cast<double>(T) / std::ldexp(1.0, int(l)))));
  CHECK(hkt_level_len(0, 2) == 0);
}
