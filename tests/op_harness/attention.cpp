// op_harness entries of the fused attention (hkt/ops/attention.hpp): hkt_attention,
// whose q and k are lists of tensors (one per level), and mha_attention (its L = 1
// case). A case's inputs are flat: q_0..q_{L-1}, k_0..k_{L-1}, v, lambda; the
// case's function cuts them back into lists. The key mask (Bool, not an Arg) is
// made inside the function from a fixed pattern, on the inputs' device.
#include <cmath>

#include "helpers/op_harness.hpp"

namespace hkt::harness {
namespace {

struct AttnCase {
  int64_t B, H, T, dh, L;
  bool causal, masked;
  Layout layout = Layout::Contiguous;  // of every q, k and v
};

std::string label(const AttnCase& a, const std::string& what) {
  return what + " B" + std::to_string(a.B) + " H" + std::to_string(a.H) + " T" + std::to_string(a.T) + " dh" +
         std::to_string(a.dh) + " L" + std::to_string(a.L) + (a.causal ? " causal" : "") +
         (a.masked ? " masked" : "");
}

// valid[b, j], as the fused-attention suite's masks: batch 0 (mod 3) has every
// fourth key and the first two padded (causal rows 0 and 1 see no key: output 0),
// batch 1 right padding to ceil(T / 2), batch 2 every key padded.
Tensor key_mask(int64_t B, int64_t T, Device dev) {
  std::vector<int64_t> ok;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < T; ++j)
      ok.push_back(b % 3 == 0 ? (j >= 2 && j % 4 != 3) : b % 3 == 1 ? j < (T + 1) / 2 : 0);
  return to_device(gt(from_vector(ok, {B, T}), 0), dev);
}

// The list-of-levels shape generator: q_l, k_l [B, H, T_l, dh], v [B, H, T, dh], lambda [H, L].
std::vector<Arg> attn_args(const AttnCase& a) {
  std::vector<Arg> args;
  for (int side = 0; side < 2; ++side)
    for (int64_t l = 0; l < a.L; ++l) args.push_back({{a.B, a.H, hkt_level_len(a.T, l), a.dh}, a.layout});
  args.push_back({{a.B, a.H, a.T, a.dh}, a.layout});
  args.push_back({{a.H, a.L}, Layout::Contiguous, 0.2, 1.2});
  return args;
}

Fn hkt_fn(const AttnCase& a) {
  return [a](const std::vector<Tensor>& in) {
    const auto L = static_cast<size_t>(a.L);
    const std::vector<Tensor> q(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(L));
    const std::vector<Tensor> k(in.begin() + static_cast<std::ptrdiff_t>(L),
                                in.begin() + static_cast<std::ptrdiff_t>(2 * L));
    const Tensor valid = a.masked ? key_mask(a.B, a.T, in[0].device()) : Tensor();
    return hkt_attention(q, k, in[2 * L], in[2 * L + 1], valid, a.causal, 1.0 / std::sqrt(double(a.dh)));
  };
}

Fn mha_fn(const AttnCase& a) {
  return [a](const std::vector<Tensor>& in) {
    const Tensor valid = a.masked ? key_mask(a.B, a.T, in[0].device()) : Tensor();
    return mha_attention(in[0], in[1], in[2], valid, a.causal, 0.7);
  };
}

// Every level count with and without the causal mask and padding (a batch of 3
// when padded: every kind of padded row), lengths that are not powers of two;
// then every layout, size-1 dims, an empty batch, and one problem large enough
// for several tiles and thread tasks.
std::vector<AttnCase> problems(std::mt19937_64& rng, int64_t max_levels) {
  std::vector<AttnCase> p;
  for (int64_t L = 1; L <= max_levels; ++L)
    for (int mask = 0; mask < 4; ++mask) {
      const bool pad = (mask & 2) != 0;
      p.push_back({pad ? 3 : 1, 2, dim(rng, 3, 13), dim(rng, 1, 6), L, (mask & 1) != 0, pad});
    }
  p.push_back({2, 2, dim(rng, 5, 11), 3, max_levels, true, false, Layout::Transposed});
  p.push_back({2, 1, dim(rng, 5, 11), 4, max_levels, false, true, Layout::Sliced});
  p.push_back({1, 1, 1, 1, 1, true, false});
  p.push_back({0, 2, 5, 3, max_levels, false, false});
  p.push_back({2, 2, 150, 16, max_levels, true, true});
  return p;
}

std::vector<Case> cases(std::mt19937_64& rng, bool mha) {
  std::vector<Case> out;
  for (const AttnCase& a : problems(rng, mha ? 1 : 3)) {
    const bool large = a.T > 100;
    std::vector<Arg> args = attn_args(a);
    if (mha) args.pop_back();  // no lambda
    out.push_back({label(a, large ? "large (several tiles and tasks)" : ""), args, mha ? mha_fn(a) : hkt_fn(a),
                   !large});
  }
  return out;
}

}  // namespace

void add_attention(std::vector<OpEntry>& out) {
  const std::vector<std::string> kernels = {"hkt_attention", "hkt_attention_backward"};
  out.push_back({"hkt_attention", kernels, [](std::mt19937_64& rng) { return cases(rng, false); }});
  out.back().tol32 = 1e-3;  // float32 softmax and products over up to 150 keys
  out.back().tol_device = 1e-3;
  out.back().bad_input = [] {
    const Tensor v = zeros({1, 2, 5, 4});
    hkt_attention({zeros({1, 2, 5, 4}), zeros({1, 2, 2, 4})}, {zeros({1, 2, 5, 4}), zeros({1, 2, 3, 4})}, v,
                  ones({2, 2}), Tensor(), false, 1.0);
  };
  out.back().bad_needle = "hkt_attention: q[1] must be [1, 2, 3, 4]";
  out.push_back({"mha_attention", kernels, [](std::mt19937_64& rng) { return cases(rng, true); }});
  out.back().tol32 = 1e-3;
  out.back().tol_device = 1e-3;
  out.back().bad_input = [] { mha_attention(zeros({1, 5, 4}), zeros({1, 5, 4}), zeros({1, 5, 4}), Tensor(), false, 1.0); };
  out.back().bad_needle = "mha_attention: v must be [B, H, T, dh], got [1, 5, 4]";
}

}  // namespace hkt::harness
