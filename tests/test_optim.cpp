// Optimizers, their fused update ops, gradient clipping and LR schedules.
#include <cmath>
#include <limits>
#include <numbers>

#include "helpers/check.hpp"
#include "hkt/models/layers.hpp"
#include "hkt/models/optim.hpp"
#include "hkt/models/schedule.hpp"
#include "hkt/ops/optim.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

using Vec = std::vector<double>;

// Max elementwise relative difference |a - b| / max(|b|, 0.01). The floor keeps
// parameters passing near 0 (where the float32 rounding of earlier, larger
// values dominates) from turning absolute noise into large ratios.
double rel_diff(const Vec& a, const Vec& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(a[i] - b[i]) / std::max(std::abs(b[i]), 1e-2));
  return m;
}

Vec random_vec(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Generator g(seed);
  return vals(uniform({static_cast<int64_t>(n)}, lo, hi, {DType::Float64}, &g));
}

// The published AdamW rule, written out plainly in float64.
struct RefAdamW {
  double lr, b1, b2, eps, wd;
  Vec m, v;
  int64_t t = 0;
  void step(Vec& p, const Vec& g) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] -= lr * wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(b1, static_cast<double>(t)));
      const double v_hat = v[i] / (1 - std::pow(b2, static_cast<double>(t)));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

// torch.optim.SGD, written out plainly in float64.
struct RefSGD {
  double lr, momentum, dampening, wd;
  bool nesterov;
  Vec buf;
  void step(Vec& p, const Vec& g) {
    const bool first = buf.empty();
    if (first) buf.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + wd * p[i];
      if (momentum != 0) {
        buf[i] = first ? d : momentum * buf[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  }
};

Tensor from_doubles(const Vec& v, const Shape& s, DType dt) {
  return from_vector(v, s, {dt});
}

// Runs `steps` AdamW steps on two parameters of dtype dt against RefAdamW;
// returns the max relative difference seen over all steps.
double adamw_vs_reference(DType dt, double wd, int steps = 20) {
  const std::vector<Shape> shapes{{7, 5}, {40000}};  // the second one spans several parallel chunks
  std::vector<Tensor> params;
  std::vector<Vec> ref_p;
  for (size_t k = 0; k < shapes.size(); ++k) {
    Vec init = random_vec(static_cast<size_t>(numel_of(shapes[k])), 100 + k);
    params.push_back(from_doubles(init, shapes[k], dt).set_requires_grad(true));
    ref_p.push_back(vals(params.back()));  // start from the same (rounded) values
  }
  // Fixed pre-generated gradients, one set per step, of varied magnitude.
  std::vector<std::vector<Vec>> grads(static_cast<size_t>(steps));
  for (int s = 0; s < steps; ++s)
    for (size_t k = 0; k < shapes.size(); ++k) {
      Vec g = random_vec(static_cast<size_t>(numel_of(shapes[k])), 1000 + 10 * s + k, -2.0, 2.0);
      for (double& x : g) x *= std::pow(10.0, (s % 5) - 2);
      grads[s].push_back(vals(from_doubles(g, shapes[k], dt)));  // the gradients the optimizer sees
    }
  const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  AdamW opt(params, lr, wd, b1, b2, eps);
  std::vector<RefAdamW> ref(shapes.size(), RefAdamW{lr, b1, b2, eps, wd, {}, {}});
  double worst = 0.0;
  for (int s = 0; s < steps; ++s) {
    for (size_t k = 0; k < shapes.size(); ++k) {
      params[k].set_grad(from_doubles(grads[s][k], shapes[k], dt));
      ref[k].step(ref_p[k], grads[s][k]);
    }
    opt.step();
    for (size_t k = 0; k < shapes.size(); ++k) worst = std::max(worst, rel_diff(vals(params[k]), ref_p[k]));
  }
  CHECK(opt.steps() == steps);
  return worst;
}

struct TinyNet : Module {
  std::shared_ptr<Linear> lin;
  std::shared_ptr<LayerNorm> norm;
  TinyNet() : Module("TinyNet") {
    Generator g(3);
    lin = register_module("lin", std::make_shared<Linear>(4, 3, true, LayerOptions{DType::Float32, &g}));
    norm = register_module("norm", std::make_shared<LayerNorm>(3));
  }
};

NamedTensors snapshot(const NamedTensors& s) {
  NamedTensors out;
  for (const auto& [n, t] : s) out.emplace_back(n, clone(t.detach()));
  return out;
}

}  // namespace

TEST_CASE("adamw matches the published update rule (float64 and float32)") {
  const double d64 = adamw_vs_reference(DType::Float64, 0.0);
  const double d64_wd = adamw_vs_reference(DType::Float64, 0.1);
  const double d32 = adamw_vs_reference(DType::Float32, 0.0);
  const double d32_wd = adamw_vs_reference(DType::Float32, 0.1);
  MESSAGE("AdamW max relative difference: float64 " << d64 << " (wd 0.1: " << d64_wd << "), float32 " << d32
                                                      << " (wd 0.1: " << d32_wd << ")");
  CHECK(d64 < 1e-6);
  CHECK(d64_wd < 1e-6);
  CHECK(d32 < 1e-5);
  CHECK(d32_wd < 1e-5);
}

TEST_CASE("sgd matches torch.optim.SGD semantics") {
  struct Cfg {
    double momentum, dampening, wd;
    bool nesterov;
  };
  for (Cfg c : {Cfg{0, 0, 0, false}, Cfg{0, 0, 0.05, false}, Cfg{0.9, 0, 0, false}, Cfg{0.9, 0.3, 0.01, false},
                Cfg{0.8, 0, 0.02, true}}) {
    CAPTURE(c.momentum);
    CAPTURE(c.dampening);
    CAPTURE(c.nesterov);
    const Shape shape{50000};
    Tensor p = from_doubles(random_vec(50000, 5), shape, DType::Float64).set_requires_grad(true);
    Vec ref_p = vals(p);
    SGD opt({p}, 0.05, c.wd, c.momentum, c.dampening, c.nesterov);
    RefSGD ref{0.05, c.momentum, c.dampening, c.wd, c.nesterov, {}};
    double worst = 0.0;
    for (int s = 0; s < 12; ++s) {
      const Vec g = random_vec(50000, 77 + s, -1.0, 1.0);
      p.set_grad(from_doubles(g, shape, DType::Float64));
      ref.step(ref_p, g);
      opt.step();
      worst = std::max(worst, rel_diff(vals(p), ref_p));
    }
    CHECK(worst < 1e-12);
    const NamedTensors st = opt.state_dict();
    CHECK(st.size() == (c.momentum != 0 ? 3u : 2u));  // step, group.0.lr_factor (, state.0.momentum_buffer)
  }
}

TEST_CASE("parameters without a gradient are skipped; lr factor scales every group") {
  Tensor a = from_vector(Vec{1.0, 2.0}, {2}).set_requires_grad(true);
  Tensor b = from_vector(Vec{3.0}, {1}).set_requires_grad(true);
  SGD opt(std::vector<ParamGroup>{{{a}, 0.5, 0.0, "a"}, {{b}, 0.1, 0.0, "b"}});
  a.set_grad(from_vector(Vec{1.0, -1.0}, {2}));
  opt.set_lr_factor(0.5);
  CHECK(opt.lr(0) == 0.25);
  CHECK(opt.lr(1) == doctest::Approx(0.05));
  opt.step();
  CHECK(vals(a) == Vec{0.75, 2.25});
  CHECK(vals(b) == Vec{3.0});
  opt.zero_grad();
  CHECK(!a.grad().defined());
  opt.step();  // no gradients at all: nothing changes, the step still counts
  CHECK(vals(a) == Vec{0.75, 2.25});
  CHECK(opt.steps() == 2);

  // AdamW state appears only for updated parameters, with their own step count.
  AdamW adam(std::vector<Tensor>{a, b}, 0.1, 0.0);
  a.set_grad(from_vector(Vec{1.0, 1.0}, {2}));
  adam.step();
  adam.step();
  b.set_grad(from_vector(Vec{-4.0}, {1}));
  a.set_grad(Tensor());
  adam.step();
  // b's first update: bias-corrected m_hat = g, v_hat = g^2, so it moves by lr * sign(g) (up to eps).
  CHECK(vals(b)[0] == doctest::Approx(3.1).epsilon(1e-9));
  const NamedTensors st = adam.state_dict();
  std::vector<std::string> names;
  for (const auto& [n, t] : st) names.push_back(n);
  CHECK(names == std::vector<std::string>{"step", "group.0.lr_factor", "state.0.exp_avg", "state.0.exp_avg_sq",
                                          "state.0.step", "state.1.exp_avg", "state.1.exp_avg_sq", "state.1.step"});
  CHECK(st[0].second.item<int64_t>() == 3);
  CHECK(st[4].second.item<int64_t>() == 2);
  CHECK(st[7].second.item<int64_t>() == 1);
}

TEST_CASE("update ops: argument checks and version bumps") {
  Tensor p = zeros({4}, {DType::Float64});
  Tensor g = ones({4}, {DType::Float64});
  Tensor m = zeros({4}, {DType::Float64}), v = zeros({4}, {DType::Float64});
  const uint64_t pv = p.storage()->version(), mv = m.storage()->version(), vv = v.storage()->version();
  adamw_update_(p, g, m, v, 0.1, 0.9, 0.999, 1e-8, 0.0, 1);
  CHECK(p.storage()->version() == pv + 1);
  CHECK(m.storage()->version() == mv + 1);
  CHECK(v.storage()->version() == vv + 1);
  CHECK(vals(p)[0] == doctest::Approx(-0.1));

  Tensor g3 = ones({3}, {DType::Float64});
  check_error([&] { adamw_update_(p, g3, m, v, 0.1, 0.9, 0.999, 1e-8, 0.0, 2); },
              "adamw_update_: grad is float64[3] on cpu but param is float64[4] on cpu");
  Tensor m32 = zeros({4});
  check_error([&] { adamw_update_(p, g, m32, v, 0.1, 0.9, 0.999, 1e-8, 0.0, 2); },
              "adamw_update_: exp_avg is float32[4]");
  check_error([&] { adamw_update_(p, g, m, v, 0.1, 0.9, 0.999, 1e-8, 0.0, 0); }, "step must be >= 1");
  check_error([&] { adamw_update_(p, g, m, m, 0.1, 0.9, 0.999, 1e-8, 0.0, 2); }, "share storage");
  Tensor base = zeros({2, 4}, {DType::Float64});
  Tensor strided = transpose(base, 0, 1).detach();  // [4, 2], not contiguous
  Tensor g2 = ones({4, 2}, {DType::Float64}), m2 = zeros({4, 2}, {DType::Float64}),
         v2 = zeros({4, 2}, {DType::Float64});
  check_error([&] { adamw_update_(strided, g2, m2, v2, 0.1, 0.9, 0.999, 1e-8, 0.0, 1); }, "must be contiguous");

  Tensor none;
  check_error([&] { sgd_update_(p, g, none, 0.1, 0.9, 0.0, 0.0, false, true); },
              "sgd_update_: momentum_buf is undefined");
  check_error([&] { sgd_update_(p, g, none, 0.1, 0.0, 0.0, 0.0, true, true); }, "nesterov");
  Tensor pi = zeros({4}, {DType::Int64}), gi = zeros({4}, {DType::Int64});
  check_error([&] { sgd_update_(pi, gi, none, 0.1, 0.0, 0.0, 0.0, false, true); }, "float32 or float64");
  const uint64_t before = p.storage()->version();
  sgd_update_(p, g, none, 0.1, 0.0, 0.0, 0.0, false, true);  // no momentum: the buffer may be undefined
  CHECK(p.storage()->version() == before + 1);

  // Optimizer-level checks.
  Tensor w = zeros({2}).set_requires_grad(true);
  check_error([&] { SGD({w}, 0.0); }, "positive finite learning rate");
  check_error([&] { SGD({w}, 0.1, 0.0, 0.0, 0.0, true); }, "nesterov needs momentum > 0");
  check_error([&] { AdamW({w}, 0.1, 0.0, 1.0); }, "beta1 must be in [0, 1)");
  check_error([&] { AdamW({w, w}, 0.1); }, "appears more than once");
  check_error([&] { AdamW(std::vector<Tensor>{}, 0.1); }, "hold no parameters");
  AdamW opt({w}, 0.1);
  check_error([&] { opt.set_lr_factor(-1.0); }, "set_lr_factor");
}

TEST_CASE("decay_groups: weights decay, biases and norms do not") {
  TinyNet net;
  const auto groups = decay_groups(net, 0.1, 0.5);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].name == "decay");
  CHECK(groups[0].weight_decay == 0.5);
  REQUIRE(groups[0].params.size() == 1);
  CHECK(groups[0].params[0].is_same(net.lin->weight));
  CHECK(groups[1].name == "no_decay");
  CHECK(groups[1].weight_decay == 0.0);
  REQUIRE(groups[1].params.size() == 3);
  CHECK(groups[1].params[0].is_same(net.lin->bias));
  CHECK(groups[1].params[1].is_same(net.norm->weight));
  CHECK(groups[1].params[2].is_same(net.norm->bias));

  // With zero gradients AdamW's only effect is the decoupled decay.
  AdamW opt(groups);
  const NamedTensors before = snapshot(net.state_dict());
  for (Tensor& p : net.parameters()) p.set_grad(zeros_like(p));
  opt.step();
  const NamedTensors after = net.state_dict();
  for (size_t k = 0; k < after.size(); ++k) {
    CAPTURE(after[k].first);
    const Vec b = vals(before[k].second), a = vals(after[k].second);
    const double f = after[k].first == "lin.weight" ? 1.0 - 0.1 * 0.5 : 1.0;
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i] * f).epsilon(1e-6));
  }
}

TEST_CASE("clip_grad_norm_") {
  Tensor a = zeros({2}, {DType::Float64}).set_requires_grad(true);
  Tensor b = zeros({1}).set_requires_grad(true);  // float32
  Tensor c = zeros({3}, {DType::Float64}).set_requires_grad(true);  // no gradient
  a.set_grad(from_vector(Vec{3.0, 4.0}, {2}));
  b.set_grad(from_vector(std::vector<float>{12.0f}, {1}));
  const std::vector<Tensor> ps{a, b, c};

  // Below the threshold: nothing changes.
  CHECK(clip_grad_norm_(ps, 26.0) == 13.0);
  CHECK(vals(a.grad()) == Vec{3.0, 4.0});
  CHECK(vals(b.grad()) == Vec{12.0});

  // Above: scaled by max_norm / (norm + 1e-6), in place.
  const Tensor ga = a.grad();
  const uint64_t ver = ga.storage()->version();
  CHECK(clip_grad_norm_(ps, 6.5) == 13.0);
  const double f = 6.5 / (13.0 + 1e-6);
  CHECK(vals(a.grad()) == Vec{3.0 * f, 4.0 * f});
  CHECK(vals(b.grad())[0] == doctest::Approx(12.0 * f).epsilon(1e-7));
  CHECK(ga.storage()->version() == ver + 1);
  CHECK(clip_grad_norm_(ps, 100.0) == doctest::Approx(6.5).epsilon(1e-6));

  // A large tensor: the norm is exact in double and deterministic.
  Tensor big = zeros({100000}, {DType::Float64}).set_requires_grad(true);
  big.set_grad(full({100000}, 0.5, {DType::Float64}));
  CHECK(clip_grad_norm_({big}, 1000.0) == std::sqrt(25000.0));
  CHECK(sum_of_squares(big.grad()) == 25000.0);

  // Non-finite: grads untouched, the norm is returned.
  a.set_grad(from_vector(Vec{std::numeric_limits<double>::infinity(), 1.0}, {2}));
  CHECK(std::isinf(clip_grad_norm_(ps, 1.0)));
  CHECK(vals(a.grad())[1] == 1.0);
  a.set_grad(from_vector(Vec{std::nan(""), 1.0}, {2}));
  CHECK(std::isnan(clip_grad_norm_(ps, 1.0)));
  CHECK(vals(a.grad())[1] == 1.0);
  check_error([&] { clip_grad_norm_(ps, 0.0); }, "max_norm must be positive");
}

TEST_CASE("sum_of_squares_multi and scale_multi_: each tensor as the one-tensor ops, checked before any write") {
  // Mixed dtypes, an empty tensor, a non-contiguous one (copied first, as
  // sum_of_squares copies it) and one above a kernel chunk (16384 elements).
  Generator g(4);
  const Tensor a = uniform({3, 5}, -1, 1, {DType::Float32}, &g);
  const Tensor b = uniform({7}, -2, 2, {DType::Float64}, &g);
  const Tensor e = zeros({0});
  const Tensor big = uniform({40000}, -1, 1, {DType::Float32}, &g);
  const Tensor nc = transpose(uniform({4, 6}, -1, 1, {DType::Float64}, &g), 0, 1);
  const std::vector<Tensor> ts{a, b, e, big, nc};
  const std::vector<double> s = sum_of_squares_multi(ts);
  REQUIRE(s.size() == ts.size());
  for (size_t i = 0; i < ts.size(); ++i) CHECK(s[i] == sum_of_squares(ts[i]));
  CHECK(s[2] == 0.0);
  CHECK(sum_of_squares_multi({}).empty());

  // scale_multi_ writes what scale_ writes, bumping each storage's version once.
  std::vector<Tensor> x{clone(a), clone(b), clone(e), clone(big)}, y{clone(a), clone(b), clone(e), clone(big)};
  std::vector<uint64_t> ver;
  for (const Tensor& t : x) ver.push_back(t.storage()->version());
  scale_multi_(x, 0.37);
  for (size_t i = 0; i < y.size(); ++i) {
    scale_(y[i], 0.37);
    CHECK(vals(x[i]) == vals(y[i]));
    CHECK(x[i].storage()->version() == ver[i] + 1);
  }
  scale_multi_({}, 2.0);

  // Bad input names the tensor, and nothing is written.
  const Vec before = vals(x[0]);
  check_error([&] { sum_of_squares_multi({a, Tensor()}); }, "sum_of_squares_multi: tensor 1 is undefined");
  check_error([&] { sum_of_squares_multi({a, zeros({2}, {DType::Int64})}); },
              "sum_of_squares_multi: tensor 1 must be float32 or float64");
  check_error([&] { scale_multi_({x[0], Tensor()}, 2.0); }, "scale_multi_: tensor 1 is undefined");
  check_error([&] { scale_multi_({x[0], nc}, 2.0); }, "scale_multi_: tensor 1 (");
  check_error([&] { scale_multi_({x[0], zeros({2}, {DType::Int64})}, 2.0); },
              "scale_multi_: expected a float32 or float64 tensor 1");
  const Tensor whole = zeros({10});
  check_error([&] { scale_multi_({x[0], narrow(whole, 0, 0, 6), narrow(whole, 0, 4, 6)}, 2.0); },
              "scale_multi_: tensors 1 and 2 overlap in memory");
  scale_multi_({narrow(whole, 0, 0, 5), narrow(whole, 0, 5, 5)}, 2.0);  // adjacent views are fine
  const Tensor w = zeros({3}).set_requires_grad(true);
  check_error([&] { scale_multi_({x[0], w}, 2.0); }, "scale_multi_: in-place write to a tensor 1 that requires grad");
  CHECK(vals(x[0]) == before);
}

TEST_CASE("lr schedules") {
  const LRSchedule c = LRSchedule::constant(4);
  CHECK(c.factor(0) == 0.25);
  CHECK(c.factor(1) == 0.5);
  CHECK(c.factor(3) == 1.0);
  CHECK(c.factor(1000000) == 1.0);
  CHECK(LRSchedule::constant().factor(0) == 1.0);

  const LRSchedule cos = LRSchedule::warmup_cosine(10, 110, 0.1);
  CHECK(cos.factor(0) == 0.1);
  CHECK(cos.factor(4) == 0.5);
  CHECK(cos.factor(9) == 1.0);
  CHECK(cos.factor(10) == 1.0);
  CHECK(cos.factor(35) == doctest::Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 0.25))).epsilon(1e-14));
  CHECK(cos.factor(60) == doctest::Approx(0.55).epsilon(1e-14));
  CHECK(cos.factor(109) == doctest::Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 0.99))).epsilon(1e-14));
  CHECK(cos.factor(110) == 0.1);
  CHECK(cos.factor(5000) == 0.1);

  const LRSchedule lin = LRSchedule::warmup_linear(10, 110);
  CHECK(lin.factor(10) == 1.0);
  CHECK(lin.factor(35) == 0.75);
  CHECK(lin.factor(60) == 0.5);
  CHECK(lin.factor(110) == 0.0);
  const LRSchedule nowarm = LRSchedule::warmup_linear(0, 4, 0.2);
  CHECK(nowarm.factor(0) == 1.0);
  CHECK(nowarm.factor(2) == doctest::Approx(0.6).epsilon(1e-15));
  CHECK(nowarm.factor(4) == 0.2);
  CHECK(LRSchedule::warmup_cosine(5, 5).factor(5) == 0.0);  // no decay span: straight to min_factor

  check_error([] { LRSchedule::warmup_cosine(200, 100); }, "warmup_steps (200) exceeds total_steps (100)");
  check_error([] { LRSchedule::warmup_linear(0, 0); }, "total_steps must be >= 1");
  check_error([] { LRSchedule::warmup_linear(0, 10, 1.5); }, "min_factor must be in [0, 1]");
  check_error([] { LRSchedule::constant(-1); }, "warmup_steps must be >= 0");
  check_error([&] { cos.factor(-1); }, "step must be >= 0");
  LRSchedule bad{LRSchedule::Kind::WarmupCosine, 50, 10, 0.0};
  check_error([&] { bad.factor(0); }, "exceeds total_steps");

  CHECK(LRSchedule::parse("cosine:warmup=10,total=110,min=0.1") == cos);
  CHECK(LRSchedule::parse("linear:total=110,warmup=10") == lin);
  CHECK(LRSchedule::parse("constant:warmup=4") == c);
  CHECK(LRSchedule::parse(cos.str()) == cos);
  check_error([] { LRSchedule::parse("step"); }, "unknown kind 'step'");
  check_error([] { LRSchedule::parse("cosine:warmup=10"); }, "total_steps must be >= 1");
  check_error([] { LRSchedule::parse("cosine:total=abc"); }, "bad value 'abc'");
  check_error([] { LRSchedule::parse("cosine:total=10,gamma=2"); }, "unknown key 'gamma'");
}

namespace {

struct Regression {
  std::shared_ptr<Linear> model;
  std::unique_ptr<Optimizer> opt;
  LRSchedule sched = LRSchedule::warmup_cosine(3, 15, 0.1);
};

Regression make_regression(bool adam, uint64_t init_seed) {
  Generator g(init_seed);
  Regression r;
  r.model = std::make_shared<Linear>(3, 2, true, LayerOptions{DType::Float32, &g});
  if (adam)
    r.opt = std::make_unique<AdamW>(decay_groups(*r.model, 0.05, 0.01));
  else
    r.opt = std::make_unique<SGD>(decay_groups(*r.model, 0.05, 0.01), 0.9, 0.1);
  return r;
}

float train_step(Regression& r, const Tensor& x, const Tensor& y) {
  r.opt->zero_grad();
  Tensor loss = mean(square(r.model->forward(x) - y));
  loss.backward();
  clip_grad_norm_(r.model->parameters(), 1.0);
  r.opt->set_lr_factor(r.sched.factor(r.opt->steps()));
  r.opt->step();
  return loss.item<float>();
}

}  // namespace

TEST_CASE("state round trip: resumed training is bit-identical") {
  Generator dg(11);
  const Tensor x = randn({16, 3}, {}, &dg);
  const Tensor y = randn({16, 2}, {}, &dg);
  for (bool adam : {true, false}) {
    CAPTURE(adam);
    Regression a = make_regression(adam, 1);
    for (int s = 0; s < 5; ++s) train_step(a, x, y);
    const NamedTensors model_state = snapshot(a.model->state_dict());
    const NamedTensors opt_state = a.opt->state_dict();
    std::vector<float> first, second;
    for (int s = 0; s < 10; ++s) first.push_back(train_step(a, x, y));

    Regression b = make_regression(adam, 2);  // different initial values
    b.model->load_state_dict(model_state);
    b.opt->load_state_dict(opt_state);
    CHECK(b.opt->steps() == 5);
    for (int s = 0; s < 10; ++s) second.push_back(train_step(b, x, y));
    for (int s = 0; s < 10; ++s) {
      CAPTURE(s);
      CHECK(first[s] == second[s]);
    }
    CHECK(first.back() < first.front());
    const NamedTensors pa = a.model->state_dict(), pb = b.model->state_dict();
    for (size_t k = 0; k < pa.size(); ++k) CHECK(vals(pa[k].second) == vals(pb[k].second));
  }
}

TEST_CASE("an optimizer that owns its schedule steps as one given the factor by hand") {
  Generator dg(11);
  const Tensor x = randn({16, 3}, {}, &dg);
  const Tensor y = randn({16, 2}, {}, &dg);
  for (bool adam : {true, false}) {
    CAPTURE(adam);
    Regression by_hand = make_regression(adam, 1), owner = make_regression(adam, 1);
    owner.opt->set_schedule(owner.sched);
    REQUIRE(owner.opt->schedule().has_value());
    CHECK(*owner.opt->schedule() == owner.sched);
    for (int s = 0; s < 15; ++s) {
      CAPTURE(s);
      train_step(by_hand, x, y);
      owner.opt->zero_grad();
      mean(square(owner.model->forward(x) - y)).backward();
      clip_grad_norm_(owner.model->parameters(), 1.0);
      owner.opt->set_lr_factor(7.0);  // overridden by the schedule at the step
      owner.opt->step();
      CHECK(owner.opt->lr(0) == by_hand.opt->lr(0));  // the rate of the step just taken
      const NamedTensors pa = by_hand.model->state_dict(), pb = owner.model->state_dict();
      for (size_t k = 0; k < pa.size(); ++k) CHECK(vals(pa[k].second) == vals(pb[k].second));
    }
    // The state holds the same tensors, under the same names: the schedule is not part of it.
    const NamedTensors sa = by_hand.opt->state_dict(), sb = owner.opt->state_dict();
    REQUIRE(sa.size() == sb.size());
    for (size_t k = 0; k < sa.size(); ++k) {
      CHECK(sa[k].first == sb[k].first);
      CHECK(vals(sa[k].second) == vals(sb[k].second));
    }
  }
  Regression r = make_regression(true, 1);
  LRSchedule bad{LRSchedule::Kind::WarmupCosine, 50, 10, 0.0};
  check_error([&] { r.opt->set_schedule(bad); }, "warmup_steps (50) exceeds total_steps (10)");
  CHECK(!r.opt->schedule().has_value());
}

TEST_CASE("optimizer load_state_dict errors modify nothing") {
  Generator dg(5);
  const Tensor x = randn({8, 3}, {}, &dg), y = randn({8, 2}, {}, &dg);
  Regression a = make_regression(true, 1);
  for (int s = 0; s < 2; ++s) train_step(a, x, y);
  const NamedTensors good = a.opt->state_dict();

  Regression b = make_regression(true, 2);
  train_step(b, x, y);
  const NamedTensors b_before = b.opt->state_dict();
  auto without = [&](const std::string& name) {
    NamedTensors s;
    for (const auto& e : good)
      if (e.first != name) s.push_back(e);
    return s;
  };
  auto replaced = [&](const std::string& name, Tensor t) {
    NamedTensors s = good;
    for (auto& e : s)
      if (e.first == name) e.second = t;
    return s;
  };
  check_error([&] { b.opt->load_state_dict(without("state.0.exp_avg_sq")); },
              "AdamW.load_state_dict: missing tensor 'state.0.exp_avg_sq'");
  check_error([&] { b.opt->load_state_dict(without("step")); }, "missing tensor 'step'");
  check_error([&] { b.opt->load_state_dict(without("group.1.lr_factor")); }, "missing tensor 'group.1.lr_factor'");
  NamedTensors extra = good;
  extra.emplace_back("state.9.exp_avg", zeros({2}));
  check_error([&] { b.opt->load_state_dict(extra); }, "unexpected tensor 'state.9.exp_avg'");
  NamedTensors sgd_like = good;
  sgd_like.emplace_back("state.0.momentum_buffer", zeros({2, 3}));
  check_error([&] { b.opt->load_state_dict(sgd_like); }, "unexpected tensor 'state.0.momentum_buffer'");
  check_error([&] { b.opt->load_state_dict(replaced("state.0.exp_avg", zeros({3, 2}))); },
              "tensor 'state.0.exp_avg' has shape [3, 2] but AdamW expects [2, 3]");
  check_error([&] { b.opt->load_state_dict(replaced("state.1.exp_avg", zeros({2}, {DType::Float64}))); },
              "tensor 'state.1.exp_avg' is float64 but AdamW expects float32");
  check_error([&] { b.opt->load_state_dict(replaced("step", scalar_tensor(1.0))); },
              "tensor 'step' is float32 but AdamW expects int64");

  // Nothing changed in b.
  CHECK(b.opt->steps() == 1);
  const NamedTensors b_after = b.opt->state_dict();
  REQUIRE(b_after.size() == b_before.size());
  for (size_t k = 0; k < b_after.size(); ++k) {
    CHECK(b_after[k].first == b_before[k].first);
    CHECK(vals(b_after[k].second) == vals(b_before[k].second));
  }
  // And the good state loads; it is a snapshot, unaffected by later steps of a.
  train_step(a, x, y);
  b.opt->load_state_dict(good);
  CHECK(b.opt->steps() == 2);
}
