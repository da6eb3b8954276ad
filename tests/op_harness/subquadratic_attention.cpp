// op_harness entries of the sub-quadratic attentions: H-Transformer-1D
// (hkt/ops/htransformer.hpp) and local attention (hkt/ops/local_attention.hpp).
#include "op_harness/cases.hpp"

namespace hkt::harness {

// H-Transformer-1D attention (hkt/ops/htransformer.hpp): q, k [B, H, T, dh], v [B, H, T, dv],
// the relative-position bias [H, 4 Nr - 1] and a validity mask drawn as 0/1 integers; T not a
// multiple of the block nor a power of two (the op pads).
void add_htransformer(std::vector<OpEntry>& out) {
  out.push_back({"htransformer_attention", {"htransformer_attention", "htransformer_attention_backward"},
                 [](std::mt19937_64& rng) {
                   const int64_t B = dim(rng, 1, 2), H = dim(rng, 1, 2), T = dim(rng, 5, 13), dh = dim(rng, 1, 4);
                   const int64_t N = 2 * dim(rng, 1, 2), dv = dim(rng, 1, 3);
                   const Shape s{B, H, T, dh}, sv{B, H, T, dv}, sb{H, 4 * N - 1};
                   auto f = [N](bool causal, bool masked, bool biased) {
                     return [=](const std::vector<Tensor>& in) {
                       const Tensor bias = biased ? in[3] : Tensor();
                       const Tensor valid = masked ? gt(in[biased ? 4 : 3], 0.0) : Tensor();
                       return htransformer_attention(in[0], in[1], in[2], valid, causal, 0.8, N, bias);
                     };
                   };
                   const Arg mask{{B, T}, Layout::Contiguous, 0, 2, false, true};
                   return std::vector<Case>{
                       {str(s) + " block " + std::to_string(N), {{s}, {s}, {sv}}, f(false, false, false)},
                       {"causal " + str(s), {{s}, {s}, {sv}}, f(true, false, false)},
                       {"bias " + str(sb), {{s}, {s}, {sv}, {sb}}, f(false, false, true)},
                       {"masked " + str(s), {{s}, {s}, {sv}, mask}, f(false, true, false)},
                       {"causal, masked, bias", {{s}, {s}, {sv}, {sb}, mask}, f(true, true, true)},
                       {"transposed q", {{s, Layout::Transposed}, {s}, {sv}}, f(false, false, false)},
                       {"one token [1, 1, 1, 3]", {{{1, 1, 1, 3}}, {{1, 1, 1, 3}}, {{1, 1, 1, 3}}}, f(true, false, false)},
                       {"large [2, 2, 300, 16]", {{{2, 2, 300, 16}}, {{2, 2, 300, 16}}, {{2, 2, 300, 16}}},
                        f(false, false, false), false},
                   };
                 }});
  out.back().bad_input = [] {
    const Tensor x = f32({1, 2, 5, 3});
    htransformer_attention(x, x, x, {}, false, 1.0, 0);
  };
  out.back().bad_needle = "htransformer_attention: block (Nr) must be even and >= 2, got 0";
}

void add_local_attention(std::vector<OpEntry>& out) {
  out.push_back({"local_attention", {"local_attention", "local_attention_backward"}, [](std::mt19937_64& rng) {
                   const Shape s = attention_shape(rng, 3, 11);
                   const int64_t w = dim(rng, 1, 3), T = s[2];
                   auto f = [](int64_t w, bool causal, Tensor valid = Tensor()) {
                     return [=](const std::vector<Tensor>& in) {
                       return local_attention(in[0], in[1], in[2], valid, w, causal, 0.7);
                     };
                   };
                   const std::string ws = " w " + std::to_string(w);
                   const Shape big{2, 3, 300, 16};
                   return std::vector<Case>{
                       {"bidirectional " + str(s) + ws, {{s}, {s}, {s}}, f(w, false)},
                       {"causal " + str(s) + ws, {{s}, {s}, {s}}, f(w, true)},
                       {"padded, bidirectional" + ws, {{s}, {s}, {s}}, f(w, false, padding_mask(s[0], T))},
                       {"padded, causal" + ws, {{s}, {s}, {s}}, f(w, true, padding_mask(s[0], T))},
                       {"w = 0", {{s}, {s}, {s}}, f(0, false)},
                       {"w >= T", {{s}, {s}, {s}}, f(T + 2, true)},
                       {"transposed q, sliced v", {{s, Layout::Transposed}, {s}, {s, Layout::Sliced}}, f(w, false)},
                       {"T = 1", {{{1, 2, 1, 3}}, {{1, 2, 1, 3}}, {{1, 2, 1, 3}}}, f(1, true)},
                       {"large " + str(big) + " w 20", {{big}, {big}, {big}}, f(20, false), false},
                   };
                 }});
  out.back().bad_input = [] { local_attention(f32({1, 1, 4, 2}), f32({1, 1, 4, 2}), f32({1, 1, 4, 2}), Tensor(), -1, false, 1.0); };
  out.back().bad_needle = "local_attention: window must be >= 0, got -1";
}

}  // namespace hkt::harness
