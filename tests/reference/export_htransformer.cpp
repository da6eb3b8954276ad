// hkt-reference-htransformer OUT_DIR: writes the cases that
// tests/reference/check_htransformer.py recomputes with NumPy from the
// definition in hkt/ops/htransformer.hpp (sharing no code with hkt). One
// safetensors file per case holding input.q, input.k, input.v [B, H, T, dh],
// input.valid (BOOL [B, T], when the case has a mask), output (what
// htransformer_attention computed) and, for float64 cases, input.r and
// grad.q, grad.k, grad.v = d sum(output * r) / d(q, k, v); "__metadata__"
// holds block, levels, causal, scale. cases.txt lists the case names.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "hkt/hkt.hpp"

using namespace hkt;

namespace {

struct Case {
  std::string name;
  int64_t B, H, T, dh, block, levels;
  bool causal;
  std::vector<int64_t> lengths;  // empty: no mask
  DType dtype = DType::Float64;
};

Tensor right_padding(const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<int64_t> v;
  for (int64_t n : lengths)
    for (int64_t t = 0; t < T; ++t) v.push_back(t < n);
  return gt(from_vector(v, {static_cast<int64_t>(lengths.size()), T}), 0.0);
}

void write_case(const std::string& dir, const Case& c, uint64_t seed) {
  Generator g(seed);
  const Shape s{c.B, c.H, c.T, c.dh};
  const TensorOptions o{c.dtype};
  Tensor q = randn(s, o, &g), k = randn(s, o, &g), v = randn(s, o, &g), r = randn(s, o, &g);
  const Tensor valid = c.lengths.empty() ? Tensor() : right_padding(c.lengths, c.T);
  const bool grads = c.dtype == DType::Float64;
  for (Tensor* t : {&q, &k, &v}) t->set_requires_grad(grads);
  const double scale = 0.75;
  const Tensor y = htransformer_attention(q, k, v, valid, c.causal, scale, c.block, c.levels);
  std::vector<std::pair<std::string, Tensor>> out = {
      {"input.q", q.detach()}, {"input.k", k.detach()}, {"input.v", v.detach()}, {"output", y.detach()}};
  if (valid.defined()) out.push_back({"input.valid", valid});
  if (grads) {
    sum(y * r).backward();
    out.push_back({"input.r", r});
    out.push_back({"grad.q", q.grad()});
    out.push_back({"grad.k", k.grad()});
    out.push_back({"grad.v", v.grad()});
  }
  save_safetensors(dir + "/" + c.name + ".safetensors", out,
                   {{"block", std::to_string(c.block)},
                    {"levels", std::to_string(c.levels)},
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
  const std::vector<Case> cases = {
      {"bidir_T16_N4", 1, 2, 16, 3, 4, 0, false, {}},
      {"causal_T16_N4", 1, 2, 16, 3, 4, 0, true, {}},
      {"bidir_T23_N3_masked", 2, 2, 23, 4, 3, 0, false, {23, 14}},
      {"causal_T29_N2_masked", 2, 1, 29, 2, 2, 0, true, {29, 9}},
      {"bidir_T37_N5_levels2", 1, 2, 37, 3, 5, 2, false, {}},
      {"causal_T19_N4_levels1", 2, 1, 19, 3, 4, 1, true, {19, 11}},
      {"bidir_T6_N8_one_block", 1, 1, 6, 5, 8, 0, false, {}},
      {"float32_T50_N4_masked", 2, 2, 50, 8, 4, 0, false, {50, 33}, DType::Float32},
      {"float32_causal_T50_N4", 1, 2, 50, 8, 4, 0, true, {}, DType::Float32},
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
