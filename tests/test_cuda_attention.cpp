// The fused CUDA attention kernel (kernels/cuda/attention.cu) against the CPU
// fused kernel and the composite reference (plain ops, T x T, float64;
// tests/helpers/composite_attention.hpp), on random shapes: T not a power of
// two (1 .. 1000), L = 1..4, causal or not, with and without key padding;
// outputs and every gradient.
#include "cuda_test_main.hpp"

#include <cmath>

#include "helpers/composite_attention.hpp"

using namespace hkt;
using hkt::test::composite_attention;

namespace {

struct Inputs {
  std::vector<Tensor> q, k;
  Tensor v, lam, valid;
};

Inputs make_inputs(int64_t B, int64_t H, int64_t T, int64_t dh, int64_t L, bool padded, uint64_t seed) {
  Generator g(seed);
  Inputs in;
  for (int64_t l = 0; l < L; ++l) {
    in.q.push_back(uniform({B, H, hkt_level_len(T, l), dh}, -1, 1, {}, &g));
    in.k.push_back(uniform({B, H, hkt_level_len(T, l), dh}, -1, 1, {}, &g));
  }
  in.v = uniform({B, H, T, dh}, -1, 1, {}, &g);
  in.lam = softmax(uniform({H, L}, -1, 1, {}, &g), -1);
  if (padded) {
    // batch 0: random padding (first key padded); batch 1: right padding; batch 2: all padded.
    const std::vector<float> r = rand({B, T}, {}, &g).to_vector<float>();
    std::vector<int64_t> ok;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        ok.push_back(b % 3 == 0 ? (t >= 1 && r[static_cast<size_t>(b * T + t)] < 0.7)
                                : b % 3 == 1 ? t < (T + 1) / 2 : 0);
    in.valid = gt(from_vector(ok, {B, T}), 0);
  }
  return in;
}

// Outputs and gradients (q..., k..., v, lambda) of sum(attention * w).
std::vector<Tensor> run(const Inputs& src, Device dev, DType dt, bool causal, double scale, bool use_composite) {
  std::vector<Tensor> q, k, leaves;
  auto leaf = [&](const Tensor& t) {
    Tensor x = to_device(to_dtype(t, dt), dev).detach().set_requires_grad(true);
    leaves.push_back(x);
    return x;
  };
  for (const Tensor& t : src.q) q.push_back(leaf(t));
  for (const Tensor& t : src.k) k.push_back(leaf(t));
  const Tensor v = leaf(src.v), lam = leaf(src.lam);
  const Tensor valid = src.valid.defined() ? to_device(src.valid, dev) : Tensor();
  const Tensor o = use_composite ? composite_attention(q, k, v, lam, valid, causal, scale)
                                 : hkt_attention(q, k, v, lam, valid, causal, scale);
  Generator g(3);
  const Tensor w = to_device(uniform(o.shape(), -1, 1, {dt}, &g), dev);
  sum(o * w).backward();
  std::vector<Tensor> out{to_device(to_dtype(o, DType::Float64), Device::cpu())};
  for (const Tensor& x : leaves) out.push_back(to_device(to_dtype(x.grad(), DType::Float64), Device::cpu()));
  return out;
}

// max |a - b| <= rtol * max |b| + 1e-6, per tensor.
void check_all(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what,
               double rtol) {
  REQUIRE(got.size() == want.size());
  for (size_t t = 0; t < got.size(); ++t) {
    const std::vector<double> a = got[t].to_vector<double>(), b = want[t].to_vector<double>();
    REQUIRE(a.size() == b.size());
    double diff = 0, scale = 0;
    bool finite = true;
    for (size_t i = 0; i < a.size(); ++i) {
      finite = finite && std::isfinite(a[i]);
      diff = std::max(diff, std::abs(a[i] - b[i]));
      scale = std::max(scale, std::abs(b[i]));
    }
    INFO(what << ", tensor " << t << " (0 = output, then q[l], k[l], v, lambda): max diff " << diff << ", max |ref| "
              << scale);
    CHECK(finite);
    CHECK(diff <= rtol * scale + 1e-6);
  }
}

}  // namespace

TEST_CASE("cuda attention: fused kernel vs CPU fused and composite, random shapes") {
  HKT_REQUIRE_GPU();
  struct Case {
    int64_t B, H, T, dh, L;
  };
  const std::vector<Case> cases = {{2, 2, 1, 16, 1},  {3, 2, 7, 16, 2},   {3, 2, 63, 32, 3}, {2, 3, 100, 24, 4},
                                   {3, 1, 257, 32, 4}, {1, 2, 1000, 64, 3}, {2, 2, 129, 100, 2}};
  uint64_t seed = 11;
  for (const Case& c : cases)
    for (bool causal : {false, true})
      for (bool padded : {false, true}) {
        const Inputs in = make_inputs(c.B, c.H, c.T, c.dh, c.L, padded, seed++);
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
        const std::string what = "B " + std::to_string(c.B) + " H " + std::to_string(c.H) + " T " +
                                 std::to_string(c.T) + " dh " + std::to_string(c.dh) + " L " + std::to_string(c.L) +
                                 (causal ? " causal" : "") + (padded ? " padded" : "");
        const auto gpu = run(in, Device::cuda(), DType::Float32, causal, scale, false);
        const auto cpu = run(in, Device::cpu(), DType::Float32, causal, scale, false);
        check_all(gpu, cpu, what + ": cuda fused vs cpu fused", 1e-4);
        if (c.T <= 257) {
          const auto ref = run(in, Device::cpu(), DType::Float64, causal, scale, true);
          check_all(gpu, ref, what + ": cuda fused vs float64 composite", 1e-4);
        }
      }
}

TEST_CASE("cuda attention: the composite reference runs on the GPU too; float64 fused") {
  HKT_REQUIRE_GPU();
  const Inputs in = make_inputs(3, 2, 70, 16, 3, true, 5);
  const auto g = run(in, Device::cuda(), DType::Float64, true, 0.25, true);
  const auto ref = run(in, Device::cpu(), DType::Float64, true, 0.25, true);
  check_all(g, ref, "composite cuda vs cpu (float64)", 1e-10);
  const auto f = run(in, Device::cuda(), DType::Float64, true, 0.25, false);
  check_all(f, ref, "fused cuda float64 vs composite", 1e-10);
}

TEST_CASE("cuda attention: MHA (L = 1) through mha_attention") {
  HKT_REQUIRE_GPU();
  Generator g(4);
  const Tensor q = uniform({2, 4, 300, 64}, -1, 1, {}, &g), k = uniform({2, 4, 300, 64}, -1, 1, {}, &g),
               v = uniform({2, 4, 300, 64}, -1, 1, {}, &g);
  for (bool causal : {false, true}) {
    const Tensor a = mha_attention(to_device(q, Device::cuda()), to_device(k, Device::cuda()),
                                   to_device(v, Device::cuda()), Tensor(), causal, 0.125);
    const Tensor b = mha_attention(q, k, v, Tensor(), causal, 0.125);
    check_all({to_dtype(to_device(a, Device::cpu()), DType::Float64)}, {to_dtype(b, DType::Float64)}, "mha", 1e-5);
  }
}
