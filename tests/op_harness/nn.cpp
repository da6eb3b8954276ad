// op_harness entries of the fused neural-network ops (hkt/ops/nn.hpp, hkt/ops/conv.hpp).
#include "op_harness/cases.hpp"

namespace hkt::harness {

void add_nn(std::vector<OpEntry>& out) {
  out.push_back({"softmax", {"softmax", "softmax_backward"}, [](std::mt19937_64& rng) {
                   return rows(rng, [](const Tensor& x, int64_t d) { return softmax(x, d); });
                 }});
  out.back().bad_input = [] { softmax(f32({2, 3}), 2); };
  out.back().bad_needle = "softmax: dim 2 is out of range";
  out.push_back({"log_softmax", {"log_softmax", "log_softmax_backward"}, [](std::mt19937_64& rng) {
                   return rows(rng, [](const Tensor& x, int64_t d) { return log_softmax(x, d); });
                 }});
  out.back().bad_input = [] { log_softmax(f32({2, 3}), -3); };
  out.back().bad_needle = "log_softmax: dim -3 is out of range";

  out.push_back({"layer_norm", {"layer_norm", "layer_norm_backward"}, [](std::mt19937_64& rng) {
                   const Shape s = shape(rng, 3, 2, 5);
                   const int64_t D = s[2];
                   auto affine = [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); };
                   auto plain = [](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), Tensor()); };
                   auto weight = [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], Tensor()); };
                   auto bias = [](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), in[1]); };
                   auto eps3 = [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], 1e-3); };
                   const Arg constant{s, Layout::Contiguous, -1.5, 1.5, false, false, false};
                   return std::vector<Case>{
                       {"affine " + str(s), {{s}, {{D}}, {{D}}}, affine},
                       {"no weight or bias", {{s}}, plain},
                       {"weight only", {{s}, {{D}}}, weight},
                       {"bias only", {{s}, {{D}}}, bias},
                       {"x constant (weight and bias gradients only)", {constant, {{D}}, {{D}}}, affine},
                       {"transposed x, sliced weight", {{{3, D}, Layout::Transposed}, {{D}, Layout::Sliced}, {{D}}},
                        affine},
                       {"eps 1e-3, transposed x", {{{D, 3}, Layout::Transposed}, {{3}}, {{3}}}, eps3},
                       {"rows of 1 [4, 1]", {{{4, 1}}, {{1}}, {{1}}}, affine},
                       {"no rows [0, 4]", {{{0, 4}}, {{4}}, {{4}}}, affine},
                       {"large [2000, 33]", {{{2000, 33}}, {{33}}, {{33}}}, affine, false},
                   };
                 }});
  out.back().bad_input = [] { layer_norm(f32({2, 3}), f32({4}), Tensor()); };
  out.back().bad_needle = "layer_norm: weight must have shape [3]";

  out.push_back({"gated_mix", {"gated_mix", "gated_mix_backward"}, [](std::mt19937_64& rng) {
                   const Shape s = shape(rng, 3, 2, 5);
                   const int64_t C = s[2];
                   auto f = [](const std::vector<Tensor>& in) { return gated_mix(in[0], in[1], in[2]); };
                   return std::vector<Case>{
                       {str(s), {{s}, {s}, {{C}, Layout::Contiguous, 0.0, 1.0}}, f},
                       {"transposed a, sliced b", {{{3, C}, Layout::Transposed}, {{3, C}, Layout::Sliced}, {{C}}}, f},
                       {"one channel [5, 1]", {{{5, 1}}, {{5, 1}}, {{1}}}, f},
                       {"no rows [0, 3]", {{{0, 3}}, {{0, 3}}, {{3}}}, f},
                       {"large [2000, 40]", {{{2000, 40}}, {{2000, 40}}, {{40}}}, f, false},
                   };
                 }});
  out.back().bad_input = [] { gated_mix(f32({2, 3}), f32({2, 3}), f32({2})); };
  out.back().bad_needle = "gated_mix: w must have shape [3]";

  out.push_back({"causal_depthwise_conv1d", {"causal_depthwise_conv1d", "causal_depthwise_conv1d_backward"},
                 [](std::mt19937_64& rng) {
                   const int64_t B = dim(rng, 1, 3), T = dim(rng, 3, 8), C = dim(rng, 1, 4), k = dim(rng, 1, 4);
                   auto f = [](int64_t s) {
                     return [s](const std::vector<Tensor>& in) {
                       return causal_depthwise_conv1d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), s);
                     };
                   };
                   return std::vector<Case>{
                       {"x " + str({B, T, C}) + ", k " + std::to_string(k), {{{B, T, C}}, {{C, k}}, {{C}}}, f(1)},
                       {"stride 2, no bias", {{{B, T, C}}, {{C, k}}}, f(2)},
                       {"transposed x", {{{B, T, C}, Layout::Transposed}, {{C, k}}, {{C}}}, f(1)},
                       {"T = 1", {{{2, 1, 3}}, {{3, 2}}, {{3}}}, f(1)},
                       {"empty batch", {{{0, 4, 3}}, {{3, 2}}, {{3}}}, f(1)},
                       {"large [4, 600, 32]", {{{4, 600, 32}}, {{32, 4}}, {{32}}}, f(1), false},
                   };
                 }});
  out.back().bad_input = [] { causal_depthwise_conv1d(f32({1, 4, 3}), f32({2, 2}), Tensor(), 1); };
  out.back().bad_needle = "causal_depthwise_conv1d: weight";

  out.push_back({"cross_entropy", {"cross_entropy", "cross_entropy_backward", "cross_entropy (target check)"},
                 [](std::mt19937_64& rng) {
                   const int64_t N = dim(rng, 2, 6), C = dim(rng, 2, 6);
                   auto f = [](Reduction r) {
                     return [r](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1], -100, r); };
                   };
                   const Arg t{{N}, Layout::Contiguous, 0.0, static_cast<double>(C), false, true};
                   return std::vector<Case>{
                       {"mean, " + str({N, C}), {{{N, C}}, t}, f(Reduction::Mean)},
                       {"sum, transposed logits", {{{N, C}, Layout::Transposed}, t}, f(Reduction::Sum)},
                       {"none, sliced logits", {{{N, C}, Layout::Sliced}, t}, f(Reduction::None)},
                       {"one class", {{{3, 1}}, {{3}, Layout::Contiguous, 0.0, 1.0, false, true}}, f(Reduction::Mean)},
                       {"no rows, none", {{{0, 3}}, {{0}, Layout::Contiguous, 0.0, 3.0, false, true}},
                        f(Reduction::None)},
                       {"large [600, 100]", {{{600, 100}}, {{600}, Layout::Contiguous, 0.0, 100.0, false, true}},
                        f(Reduction::Mean), false},
                   };
                 }});
  out.back().bad_input = [] { cross_entropy(f32({2, 3}), from_vector(std::vector<int64_t>{0, 3}, {2})); };
  out.back().bad_needle = "cross_entropy: target 3 at row 1 is outside [0, 3";

  out.push_back({"dropout", {"dropout"}, [](std::mt19937_64& rng) {
                   // A generator of its own per call: every evaluation draws the same mask.
                   auto f = [](const std::vector<Tensor>& in) {
                     Generator g(11);
                     return dropout(in[0], 0.3, true, &g);
                   };
                   return one_input(rng, "dropout", f);
                 }});
  out.back().bad_input = [] { dropout(f32({2}), 1.5, true); };
  out.back().bad_needle = "dropout: p must be in [0, 1)";

  for (const bool approx : {false, true}) {
    out.push_back({approx ? "bias_gelu (tanh)" : "bias_gelu", {"bias_gelu", "bias_gelu_backward"},
                   [approx](std::mt19937_64& rng) {
                     const Shape s = shape(rng, 3, 2, 5);
                     const int64_t C = s[2];
                     auto f = [approx](const std::vector<Tensor>& in) { return bias_gelu(in[0], in[1], approx); };
                     return std::vector<Case>{
                         {str(s), {{s}, {{C}}}, f},
                         {"transposed x, sliced b", {{{3, C}, Layout::Transposed}, {{C}, Layout::Sliced}}, f},
                         {"one channel [4, 1]", {{{4, 1}}, {{1}}}, f},
                         {"no rows [0, 3]", {{{0, 3}}, {{3}}}, f},
                         {"large [1000, 70]", {{{1000, 70}}, {{70}}}, f, false},
                     };
                   }});
    out.back().bad_input = [] { bias_gelu(f32({2, 3}), f32({2})); };
    out.back().bad_needle = "bias_gelu: b must have shape [3]";
  }
}

}  // namespace hkt::harness
