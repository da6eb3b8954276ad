// hkt-reference-htransformer OUT_DIR: writes the cases that
// tests/reference/check_htransformer.py recomputes with the NumPy reference of
// the published algorithm (tests/reference/h1d_published.py, sharing no code
// with hkt). One safetensors file per case holding input.q, input.k [B, H, T,
// dh], input.v [B, H, T, dv], input.valid (BOOL [B, T], when the case has a
// mask), input.bias ([H, 4 block - 1], when it has one), output (what
// htransformer_attention computed) and, for float64 cases, input.r and grad.q,
// grad.k, grad.v, grad.bias = d sum(output * r) / d(q, k, v, bias);
// "__metadata__" holds block, causal, scale. cases.txt lists the case names.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "hkt/hkt.hpp"

using namespace hkt;

namespace {

struct Case {
  std::string name;
  int64_t B, H, T, dh, dv, block;
  bool causal, bias;
  std::vector<int64_t> lengths;  // empty: no mask; -1: a random mask
  DType dtype = DType::Float64;
};

Tensor make_mask(const std::vector<int64_t>& lengths, int64_t T, Generator& g) {
  std::vector<int64_t> v;
  for (int64_t n : lengths) {
    const std::vector<double> u = rand({T}, {DType::Float64}, &g).to_vector<double>();
    for (int64_t t = 0; t < T; ++t) v.push_back(n < 0 ? u[static_cast<size_t>(t)] < 0.7 : t < n);
  }
  return gt(from_vector(v, {static_cast<int64_t>(lengths.size()), T}), 0.0);
}

void write_case(const std::string& dir, const Case& c, uint64_t seed) {
  Generator g(seed);
  const Shape s{c.B, c.H, c.T, c.dh}, sv{c.B, c.H, c.T, c.dv};
  const TensorOptions o{c.dtype};
  Tensor q = randn(s, o, &g) * 1.5, k = randn(s, o, &g) * 1.5, v = randn(sv, o, &g), r = randn(sv, o, &g);
  Tensor bias = c.bias ? randn({c.H, 4 * c.block - 1}, o, &g) * 0.3 : Tensor();
  const Tensor valid = c.lengths.empty() ? Tensor() : make_mask(c.lengths, c.T, g);
  const bool grads = c.dtype == DType::Float64;
  for (Tensor* t : {&q, &k, &v, &bias})
    if (t->defined()) t->set_requires_grad(grads);
  const double scale = 0.75;
  const Tensor y = htransformer_attention(q, k, v, valid, c.causal, scale, c.block, bias);
  std::vector<std::pair<std::string, Tensor>> out = {
      {"input.q", q.detach()}, {"input.k", k.detach()}, {"input.v", v.detach()}, {"output", y.detach()}};
  if (valid.defined()) out.push_back({"input.valid", valid});
  if (bias.defined()) out.push_back({"input.bias", bias.detach()});
  if (grads) {
    sum(y * r).backward();
    out.push_back({"input.r", r});
    out.push_back({"grad.q", q.grad()});
    out.push_back({"grad.k", k.grad()});
    out.push_back({"grad.v", v.grad()});
    if (bias.defined()) out.push_back({"grad.bias", bias.grad()});
  }
  save_safetensors(dir + "/" + c.name + ".safetensors", out,
                   {{"block", std::to_string(c.block)},
                    {"causal", c.causal ? "true" : "false"},
                    {"scale", std::to_string(scale)}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hkt-reference-htransformer OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  // T a power of two times Nr and not (the op pads), masks (right padding, random), the bias, dv != dh,
  // T <= 2 Nr (the published geometry clamps Nr), float32.
  const std::vector<Case> cases = {
      {"bidir_T64_N4", 1, 2, 64, 3, 3, 4, false, false, {}},
      {"causal_T64_N4_bias", 1, 2, 64, 3, 2, 4, true, true, {}},
      {"bidir_T128_N8_bias", 1, 1, 128, 4, 4, 8, false, true, {}},
      {"bidir_T23_N2_masked_bias", 2, 2, 23, 4, 3, 2, false, true, {23, 14}},
      {"causal_T29_N2_masked", 2, 1, 29, 2, 3, 2, true, false, {29, 9}},
      {"bidir_T50_N6_random_mask_bias", 2, 2, 50, 3, 2, 6, false, true, {-1, -1}},
      {"causal_T37_N4_random_mask_bias", 2, 1, 37, 3, 4, 4, true, true, {-1, 20}},
      {"bidir_T6_N8_short_bias", 1, 2, 6, 5, 3, 8, false, true, {}},
      {"causal_T11_N16_short_bias", 2, 1, 11, 3, 3, 16, true, true, {11, 7}},
      {"float32_T90_N4_masked_bias", 2, 2, 90, 8, 8, 4, false, true, {90, 33}, DType::Float32},
      {"float32_causal_T70_N4_bias", 1, 2, 70, 8, 8, 4, true, true, {}, DType::Float32},
  };
  try {
    std::ofstream list(dir + "/cases.txt");
    uint64_t seed = 1;
    for (const Case& c : cases) {
      write_case(dir, c, seed++);
      list << c.name << "\n";
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "hkt-reference-htransformer: %s\n", e.what());
    return 1;
  }
  std::printf("hkt-reference-htransformer: %zu cases in %s\n", cases.size(), dir.c_str());
  return 0;
}
