// Random attention problems, the CPU's results for them and the comparison,
// shared by the checks of the fused CUDA kernels against the CPU: the suites'
// (tests/test_cuda_attention.cpp on a GPU, tests/test_emulated_attention.cpp
// in the CUDA emulator) and the lab's (tools/cuda-lab/tests/test_lab_emulated.cpp).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hkt/hkt.hpp"
#include "hkt/models/composite_attention.hpp"

namespace hkt::test {

struct Inputs {
  std::vector<Tensor> q, k;
  Tensor v, lam, valid;
};

// q[l], k[l] of every level, v and lambda uniform in [-1, 1) (lambda a
// softmax per head).
inline Inputs make_inputs(int64_t B, int64_t H, int64_t T, int64_t dh, int64_t L, bool padded, uint64_t seed) {
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

// The weights w of the loss sum(attention * w): the output gradient.
inline Tensor output_weights(const Shape& shape, DType dt) {
  Generator g(3);
  return uniform(shape, -1, 1, {dt}, &g);
}

// Outputs and gradients (q..., k..., v, lambda) of sum(attention * w), as
// float64 tensors: of the fused kernel (hkt_attention) on `dev`, or of the
// composite reference (hkt::nn::composite_attention) with use_composite.
inline std::vector<Tensor> run(const Inputs& src, Device dev, DType dt, bool causal, double scale, bool use_composite) {
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
  const Tensor o = use_composite ? nn::composite_attention(q, k, v, lam, valid, causal, scale)
                                 : hkt_attention(q, k, v, lam, valid, causal, scale);
  const Tensor w = to_device(output_weights(o.shape(), dt), dev);
  sum(o * w).backward();
  std::vector<Tensor> out{to_device(to_dtype(o, DType::Float64), Device::cpu())};
  for (const Tensor& x : leaves) out.push_back(to_device(to_dtype(x.grad(), DType::Float64), Device::cpu()));
  return out;
}

// max |a - b| <= rtol * max |b| + 1e-6, per tensor.
inline void check_all(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what,
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

}  // namespace hkt::test
