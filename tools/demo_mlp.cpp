// hkt-demo: trains a 2-layer MLP (Linear-GELU-Linear) by full-batch SGD with
// momentum on a generated regression problem,
//   y = sin(3 x1) * cos(2 x2) + 0.05 * noise,   x uniform in [-1, 1]^2,
// and checks that the mean squared error falls by at least 5x.
//
//   hkt-demo [--steps N] [--seed S] [--hidden H] [--lr LR]
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/random.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/reduce.hpp"

namespace {

struct Options {
  int64_t steps = 1000;
  uint64_t seed = 0;
  int64_t hidden = 64;
  double lr = 0.05;
};

[[noreturn]] void usage(const char* prog, int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: %s [--steps N] [--seed S] [--hidden H] [--lr LR]\n"
               "  trains y = sin(3 x1) cos(2 x2) + noise with a 2-layer MLP (defaults: --steps 1000 --seed 0 "
               "--hidden 64 --lr 0.05)\n",
               prog);
  std::exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") usage(argv[0], 0);
    if (arg != "--steps" && arg != "--seed" && arg != "--hidden" && arg != "--lr") {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: missing value for %s\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
    const char* val = argv[++i];
    char* end = nullptr;
    errno = 0;
    bool ok = true;
    if (arg == "--steps") {
      o.steps = std::strtoll(val, &end, 10);
      ok = o.steps > 0;
    } else if (arg == "--seed") {
      o.seed = std::strtoull(val, &end, 10);
      ok = val[0] != '-';  // strtoull would wrap a negative value
    } else if (arg == "--hidden") {
      o.hidden = std::strtoll(val, &end, 10);
      ok = o.hidden > 0;
    } else if (arg == "--lr") {
      o.lr = std::strtod(val, &end);
      ok = o.lr > 0 && std::isfinite(o.lr);
    }
    if (!ok || errno != 0 || end == val || *end != '\0') {
      std::fprintf(stderr, "%s: invalid value '%s' for %s\n", argv[0], val, arg.c_str());
      usage(argv[0], 2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hkt;
  const Options opt = parse(argc, argv);
  manual_seed(opt.seed);
  const auto t0 = std::chrono::steady_clock::now();

  // Data: N points in [-1, 1]^2 and their noisy targets.
  constexpr int64_t N = 1024;
  const Tensor x = uniform({N, 2}, -1.0, 1.0);
  const std::vector<float> xv = x.to_vector<float>(), nv = randn({N}).to_vector<float>();
  std::vector<float> yv(N);
  for (int64_t i = 0; i < N; ++i)
    yv[i] = std::sin(3.0f * xv[2 * i]) * std::cos(2.0f * xv[2 * i + 1]) + 0.05f * nv[i];
  const Tensor y = from_vector(yv, {N, 1});

  // Parameters (leaves): He-style init for the GELU layer.
  const int64_t H = opt.hidden;
  Tensor w1 = normal({2, H}, 0.0, std::sqrt(2.0 / 2.0)).set_requires_grad(true);
  Tensor b1 = zeros({H}).set_requires_grad(true);
  Tensor w2 = normal({H, 1}, 0.0, std::sqrt(1.0 / static_cast<double>(H))).set_requires_grad(true);
  Tensor b2 = zeros({1}).set_requires_grad(true);
  std::vector<Tensor*> params{&w1, &b1, &w2, &b2};
  std::vector<Tensor> velocity;
  for (Tensor* p : params) velocity.push_back(zeros_like(*p));
  constexpr double kMomentum = 0.9;

  std::printf("hkt-demo: 2-layer MLP (2 -> %lld -> 1, GELU), %lld samples, SGD lr %g momentum %g, seed %llu\n\n",
              static_cast<long long>(H), static_cast<long long>(N), opt.lr, kMomentum,
              static_cast<unsigned long long>(opt.seed));
  std::printf("| step | loss (MSE) |\n|-----:|-----------:|\n");

  const int64_t every = std::max<int64_t>(1, opt.steps / 10);
  double first = 0, last = 0;
  for (int64_t step = 0; step < opt.steps; ++step) {
    const Tensor hidden = gelu(add(matmul(x, w1), b1));
    const Tensor pred = add(matmul(hidden, w2), b2);
    const Tensor loss = mean(square(pred - y));
    loss.backward();
    last = loss.item_double();
    if (step == 0) first = last;
    if (!std::isfinite(last)) {
      std::printf("| %4lld | %10s |\n", static_cast<long long>(step), "non-finite");
      break;
    }
    if (step % every == 0) std::printf("| %4lld | %10.6f |\n", static_cast<long long>(step), last);

    NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor& p = *params[i];
      copy_(velocity[i], velocity[i] * kMomentum + p.grad());
      copy_(p, p - velocity[i] * opt.lr);
      p.set_grad(Tensor());
    }
  }
  // The loss after the last update.
  {
    NoGradGuard no_grad;
    last = mean(square(add(matmul(gelu(add(matmul(x, w1), b1)), w2), b2) - y)).item_double();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("| %4lld | %10.6f |\n\n", static_cast<long long>(opt.steps), last);
  const double factor = first / last;
  const bool ok = std::isfinite(last) && factor >= 5.0;
  std::printf("loss fell from %.6f to %.6f (%.1fx) in %lld steps, %.2f s: %s\n", first, last, factor,
              static_cast<long long>(opt.steps), secs, ok ? "ok" : "FAILED (expected at least 5x)");
  return ok ? 0 : 1;
}
