// op_harness: every op on the op list through the harness (tests/helpers/op_harness.hpp).
// An entry per op: the list entries it exercises, its case generator (random
// shapes, non-contiguous and broadcast operands, size-1 and empty dims, and one
// case large enough to be split over threads) and a bad input. The elementwise
// entries are generated from the same lists as the ops (hkt/kernels/elementwise_defs.hpp);
// the fused attention's are in attention.cpp.
// Linked against the emulated CUDA backend where the tree builds it, so the
// device comparisons run without a GPU; the exit status is the failure count.
#include <iostream>

#include "helpers/op_harness.hpp"

using namespace hkt;
using namespace hkt::harness;

namespace hkt::harness {
void add_attention(std::vector<OpEntry>& out);  // op_harness/attention.cpp
}

namespace {

std::string str(const Shape& s) { return shape_str(s); }
Tensor f32(const Shape& s) { return zeros(s, {DType::Float32}); }

// Domain of an op's operands: ops undefined (or not differentiable) somewhere get a safe range.
std::pair<double, double> range(const std::string& op, size_t arg) {
  if (op == "log" || op == "sqrt" || op == "rsqrt") return {0.3, 2.0};
  if ((op == "div" && arg == 1) || (op == "pow" && arg == 0)) return {0.5, 2.0};
  return {-1.5, 1.5};
}

// One-operand cases: every layout, size-1, empty and 0-dim shapes, and a large one.
std::vector<Case> one_input(std::mt19937_64& rng, const std::string& op, const Fn& fn, size_t min_rank = 0) {
  const auto [lo, hi] = range(op, 0);
  const Shape s2 = shape(rng, 2, 2, 5), s3 = shape(rng, 3, 1, 4);
  std::vector<Case> c = {
      {"contiguous " + str(s3), {{s3, Layout::Contiguous, lo, hi}}, fn},
      {"transposed " + str(s2), {{s2, Layout::Transposed, lo, hi}}, fn},
      {"sliced " + str(s2), {{s2, Layout::Sliced, lo, hi}}, fn},
      {"size-1 dims [1, 3, 1]", {{{1, 3, 1}, Layout::Contiguous, lo, hi}}, fn},
      {"empty [2, 0, 3]", {{{2, 0, 3}, Layout::Contiguous, lo, hi}}, fn},
      {"large [3, 20000] (split over threads)", {{{3, 20000}, Layout::Contiguous, lo, hi}}, fn, false},
  };
  if (min_rank == 0) c.push_back({"0-dim", {{{}, Layout::Contiguous, lo, hi}}, fn});
  return c;
}

// Two-operand elementwise cases: broadcasting, layouts, empty, large.
std::vector<Case> two_inputs(std::mt19937_64& rng, const std::string& op, const Fn& fn, bool integer) {
  const auto [alo, ahi] = range(op, 0);
  const auto [blo, bhi] = range(op, 1);
  const double lo0 = integer ? -2 : alo, hi0 = integer ? 3 : ahi, lo1 = integer ? -2 : blo, hi1 = integer ? 3 : bhi;
  const int64_t a = dim(rng, 2, 4), b = dim(rng, 2, 4), c = dim(rng, 2, 5);
  auto arg = [&](Shape s, Layout l, size_t i) { return Arg{s, l, i ? lo1 : lo0, i ? hi1 : hi0, integer}; };
  return {
      {"same shape " + str({a, c}), {arg({a, c}, Layout::Contiguous, 0), arg({a, c}, Layout::Contiguous, 1)}, fn},
      {"broadcast " + str({a, 1, c}) + " with " + str({b, 1}),
       {arg({a, 1, c}, Layout::Contiguous, 0), arg({b, 1}, Layout::Contiguous, 1)}, fn},
      {"transposed with sliced " + str({a, c}),
       {arg({a, c}, Layout::Transposed, 0), arg({a, c}, Layout::Sliced, 1)}, fn},
      {"expanded with 0-dim", {arg({a, c}, Layout::Expanded, 0), arg({}, Layout::Contiguous, 1)}, fn},
      {"empty [0, 3] with [1, 3]", {arg({0, 3}, Layout::Contiguous, 0), arg({1, 3}, Layout::Contiguous, 1)}, fn},
      {"large [2, 20000] with [20000]",
       {arg({2, 20000}, Layout::Contiguous, 0), arg({20000}, Layout::Contiguous, 1)}, fn, false},
  };
}

void add_elementwise(std::vector<OpEntry>& out) {
  const Tensor i64 = from_vector(std::vector<int64_t>{1, 2}, {2});
#define HKT_ENTRY(name, S, D)                                                                              \
  out.push_back({#name, {#name, #name "_backward"},                                                        \
                 [](std::mt19937_64& rng) {                                                                \
                   return one_input(rng, #name, [](const std::vector<Tensor>& in) { return name(in[0]); }); \
                 }});                                                                                      \
  out.back().bad_input = [i64] { name(i64); };                                                             \
  out.back().bad_needle = #name ": expected a floating tensor";
  HKT_UNARY_OPS(HKT_ENTRY)
#undef HKT_ENTRY
#define HKT_ENTRY(name, S, integer)                                                                          \
  out.push_back({#name, {#name}, [](std::mt19937_64& rng) {                                                  \
                   return two_inputs(                                                                        \
                       rng, #name, [](const std::vector<Tensor>& in) { return name(in[0], in[1]); }, integer); \
                 }});                                                                                        \
  out.back().differentiable = !(integer);                                                                    \
  out.back().bad_input = [] { name(f32({2}), zeros({2}, {DType::Float64})); };                              \
  out.back().bad_needle = #name ": dtype mismatch";
#define HKT_BINARY(name, S, D) HKT_ENTRY(name, S, false)
#define HKT_COMPARE(name, S, D) HKT_ENTRY(name, S, true)
  HKT_BINARY_OPS(HKT_BINARY)
  HKT_COMPARE_OPS(HKT_COMPARE)
#undef HKT_BINARY
#undef HKT_COMPARE
#undef HKT_ENTRY
}

// Row ops along the last dim (or another one): softmax, log_softmax.
std::vector<Case> rows(std::mt19937_64& rng, const std::function<Tensor(const Tensor&, int64_t)>& f) {
  const Shape s = shape(rng, 3, 2, 5);
  auto last = [f](const std::vector<Tensor>& in) { return f(in[0], -1); };
  auto first = [f](const std::vector<Tensor>& in) { return f(in[0], 0); };
  auto middle = [f](const std::vector<Tensor>& in) { return f(in[0], 1); };
  return {
      {"last dim of " + str(s), {{s}}, last},
      {"dim 0 of " + str(s), {{s}}, first},
      {"dim 1 of " + str(s), {{s}}, middle},
      {"dim 0, transposed", {{{s[0], s[2]}, Layout::Transposed}}, first},
      {"transposed", {{{s[0], s[2]}, Layout::Transposed}}, last},
      {"sliced", {{{s[0], s[2]}, Layout::Sliced}}, last},
      {"size-1 rows [4, 1]", {{{4, 1}}}, last},
      {"empty [0, 5]", {{{0, 5}}}, last},
      {"large [300, 257]", {{{300, 257}}}, last, false},
  };
}

void add_nn(std::vector<OpEntry>& out) {
  out.push_back({"sum", {"sum"}, [](std::mt19937_64& rng) {
                   const Shape s = shape(rng, 3, 2, 4);
                   std::vector<Case> c = one_input(rng, "sum", [](const std::vector<Tensor>& in) { return sum(in[0]); });
                   c.push_back({"dims {0, 2} of " + str(s), {{s}},
                                [](const std::vector<Tensor>& in) { return sum(in[0], {0, 2}); }});
                   c.push_back({"keepdim, transposed", {{s, Layout::Transposed}},
                                [](const std::vector<Tensor>& in) { return sum(in[0], {1}, true); }});
                   c.push_back({"large [40000, 2] over dim 0", {{{40000, 2}}},
                                [](const std::vector<Tensor>& in) { return sum(in[0], {0}); }, false});
                   return c;
                 }});
  out.back().bad_input = [] { sum(f32({2, 3}), {0, 0}); };
  out.back().bad_needle = "sum: dim 0 given twice";

  out.push_back({"max", {"max"}, [](std::mt19937_64& rng) {
                   const Shape s = shape(rng, 3, 2, 4);
                   auto all = [](const std::vector<Tensor>& in) { return max(in[0]); };
                   return std::vector<Case>{
                       {"all of " + str(s), {{s}}, all},
                       {"dim 1, transposed", {{s, Layout::Transposed}},
                        [](const std::vector<Tensor>& in) { return max(in[0], {1}); }},
                       {"dim -1, sliced", {{s, Layout::Sliced}},
                        [](const std::vector<Tensor>& in) { return max(in[0], {-1}, true); }},
                       {"size-1 [1, 1]", {{{1, 1}}}, all},
                       {"large [40000, 2] over dim 0", {{{40000, 2}}},
                        [](const std::vector<Tensor>& in) { return max(in[0], {0}); }, false},
                   };
                 }});
  out.back().bad_input = [] { max(f32({0, 3}), {0}); };
  out.back().bad_needle = "max: reducing [0, 3] over an empty dim";

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

// Copies, fills, random tensors and device transfers (hkt/ops/factory.hpp).
void add_factory(std::vector<OpEntry>& out) {
  out.push_back({"clone / to_dtype", {"copy"}, [](std::mt19937_64& rng) {
                   std::vector<Case> c = one_input(rng, "clone", [](const std::vector<Tensor>& in) { return clone(in[0]); });
                   const Shape s = shape(rng, 2, 2, 5);
                   c.push_back({"expanded " + str(s), {{s, Layout::Expanded}},
                                [](const std::vector<Tensor>& in) { return clone(in[0]); }});
                   c.push_back({"to float32 and back, transposed", {{s, Layout::Transposed}},
                                [](const std::vector<Tensor>& in) {
                                  return to_dtype(to_dtype(in[0], DType::Float32), in[0].dtype());
                                },
                                false});  // rounded to float32: not differentiable to float64 precision
                   c.push_back({"through int64 (integer values)", {{s, Layout::Sliced, -3, 3, true}},
                                [](const std::vector<Tensor>& in) {
                                  return to_dtype(to_dtype(in[0], DType::Int64), in[0].dtype());
                                },
                                false});  // through int64: no gradient
                   return c;
                 }});
  out.back().bad_input = [] { clone(Tensor()); };
  out.back().bad_needle = "clone: the tensor is undefined";

  out.push_back({"full / fill_", {"fill"}, [](std::mt19937_64& rng) {
                   auto f = [](const std::vector<Tensor>& in) {
                     Tensor h = full(in[0].shape(), 0.5, {in[0].dtype(), in[0].device()});
                     Tensor t = slice(zeros({2, 7}, {in[0].dtype(), in[0].device()}), 1, 1, 6, 2);
                     fill_(t, -2.0);  // a strided destination
                     return in[0] * h + sum(t);
                   };
                   return one_input(rng, "fill", f);
                 }});
  out.back().bad_input = [] {
    Tensor t = f32({2}).set_requires_grad(true);
    fill_(t, 1.0);
  };
  out.back().bad_needle = "fill_: in-place write to a tensor that requires grad";

  for (const bool is_normal : {false, true}) {
    out.push_back({is_normal ? "normal" : "uniform", {is_normal ? "normal" : "uniform"},
                   [is_normal](std::mt19937_64& rng) {
                     // A generator of its own per call: every evaluation draws the same values.
                     auto f = [is_normal](const std::vector<Tensor>& in) {
                       Generator g(3);
                       const TensorOptions o{in[0].dtype(), in[0].device()};
                       return in[0] + (is_normal ? normal(in[0].shape(), 0.5, 2.0, o, &g)
                                                 : uniform(in[0].shape(), -1.0, 1.0, o, &g));
                     };
                     return one_input(rng, is_normal ? "normal" : "uniform", f);
                   }});
    // The registry's error for a (device, dtype) that has no kernel: op, dtype and device.
    out.back().bad_input = [is_normal] { is_normal ? randn({2}, {DType::Int64}) : rand({2}, {DType::Int64}); };
    out.back().bad_needle = is_normal ? "normal: no kernel for int64 on cpu" : "uniform: no kernel for int64 on cpu";
  }

  out.push_back({"to_device", {"to_device", "device"}, [](std::mt19937_64& rng) {
                   // A round trip through the other device (CUDA from the CPU, the CPU from CUDA);
                   // without a device (a build without the backend) the tensor stays where it is.
                   auto f = [](const std::vector<Tensor>& in) {
                     if (!cuda_is_available()) return in[0] * 1.0;
                     const Device other = in[0].device().is_cpu() ? Device::cuda() : Device::cpu();
                     return to_device(to_device(in[0], other) * 2.0, in[0].device());
                   };
                   return one_input(rng, "to_device", f);
                 }});
  out.back().bad_input = [] { to_device(f32({2}), Device::cuda(99)); };
  out.back().bad_needle = "to_device";
}

// Joining, indexing and selection (hkt/ops/index.hpp).
void add_index(std::vector<OpEntry>& out) {
  const auto idx = [](Shape s, int64_t n) { return Arg{s, Layout::Contiguous, 0.0, static_cast<double>(n), false, true}; };
  const Tensor i64 = from_vector(std::vector<int64_t>{0, 5}, {2});
  for (const bool is_stack : {false, true}) {
    out.push_back({is_stack ? "stack" : "cat", {"cat"}, [is_stack](std::mt19937_64& rng) {
                     const int64_t a = dim(rng, 2, 4), b = dim(rng, 1, 4), c = dim(rng, 1, 4);
                     auto f = [is_stack](int64_t d) {
                       return [is_stack, d](const std::vector<Tensor>& in) { return is_stack ? stack(in, d) : cat(in, d); };
                     };
                     const int64_t c2 = is_stack ? b : c;  // stack: one shape
                     return std::vector<Case>{
                         {"dim 1 of " + str({a, b}) + ", " + str({a, c2}), {{{a, b}}, {{a, c2}}}, f(1)},
                         {"dim 0, transposed and sliced", {{{a, b}, Layout::Transposed}, {{a, b}, Layout::Sliced}}, f(0)},
                         {"with an empty part", {{{a, 0}}, {{a, is_stack ? 0 : b}}}, f(1)},
                         {"expanded", {{{a, b}, Layout::Expanded}, {{a, b}}}, f(-1)},
                         {"large", {{{300, 200}}, {{300, 200}}}, f(0), false},
                     };
                   }});
    out.back().bad_input = [is_stack] { is_stack ? stack({f32({2, 3}), f32({3, 3})}) : cat({f32({2, 3}), f32({3, 2})}, 1); };
    out.back().bad_needle = is_stack ? "stack:" : "cat:";
  }
  out.push_back({"index_select / embedding", {"gather", "index_check", "index_add"}, [idx](std::mt19937_64& rng) {
                   const int64_t n = dim(rng, 2, 6), c = dim(rng, 1, 4), k = dim(rng, 1, 8);
                   auto sel = [](int64_t d) {
                     return [d](const std::vector<Tensor>& in) { return index_select(in[0], d, in[1]); };
                   };
                   auto emb = [](const std::vector<Tensor>& in) { return embedding(in[0], in[1]); };
                   return std::vector<Case>{
                       {"rows of " + str({n, c}) + " (repeats)", {{{n, c}}, idx({k}, n)}, sel(0)},
                       {"columns, transposed", {{{c, n}, Layout::Transposed}, idx({k}, n)}, sel(1)},
                       {"embedding [B, T] ids", {{{n, c}}, idx({2, k}, n)}, emb},
                       {"no indices", {{{n, c}}, idx({0}, n)}, sel(0)},
                       {"large", {{{50, 64}}, idx({3000}, 50)}, sel(0), false},
                   };
                 }});
  out.back().bad_input = [i64] { index_select(f32({3, 2}), 0, i64); };
  out.back().bad_needle = "index_select: index 5";
  out.push_back({"gather", {"gather", "index_check", "scatter_add"}, [idx](std::mt19937_64& rng) {
                   const int64_t a = dim(rng, 2, 4), b = dim(rng, 2, 5), k = dim(rng, 1, 6);
                   auto f = [](int64_t d) { return [d](const std::vector<Tensor>& in) { return gather(in[0], d, in[1]); }; };
                   return std::vector<Case>{
                       {"dim 1 of " + str({a, b}), {{{a, b}}, idx({a, k}, b)}, f(1)},
                       {"dim 0, sliced", {{{b, a}, Layout::Sliced}, idx({k, a}, b)}, f(0)},
                       {"transposed x", {{{a, b}, Layout::Transposed}, idx({a, k}, b)}, f(-1)},
                       {"empty index", {{{a, b}}, idx({a, 0}, b)}, f(1)},
                       {"large", {{{200, 64}}, idx({200, 300}, 64)}, f(1), false},
                   };
                 }});
  out.back().bad_input = [] { gather(f32({2, 3}), 1, from_vector(std::vector<int64_t>{0, 3}, {2, 1})); };
  out.back().bad_needle = "gather: index 3";
  out.push_back({"where / masked_fill", {"where"}, [](std::mt19937_64& rng) {
                   const int64_t a = dim(rng, 2, 4), b = dim(rng, 2, 5);
                   const auto cond = [](Shape s) { return Arg{s, Layout::Contiguous, -1.5, 1.5, false, false, false}; };
                   auto w = [](const std::vector<Tensor>& in) { return where(gt(in[0], 0.0), in[1], in[2]); };
                   auto m = [](const std::vector<Tensor>& in) { return masked_fill(in[1], gt(in[0], 0.0), -3.0); };
                   return std::vector<Case>{
                       {"where " + str({a, b}), {cond({a, b}), {{a, b}}, {{a, b}}}, w},
                       {"where, broadcast", {cond({a, 1}), {{b}}, {{a, b}, Layout::Transposed}}, w},
                       {"masked_fill, sliced", {cond({a, b}), {{a, b}, Layout::Sliced}}, m},
                       {"empty", {cond({0, b}), {{0, b}}, {{0, b}}}, w},
                       {"large", {cond({300, 200}), {{300, 200}}, {{300, 200}}}, w, false},
                   };
                 }});
  out.back().bad_input = [] { where(gt(f32({2}), 0.0), f32({3}), f32({3})); };
  out.back().bad_needle = "where:";
}

// Matrix products (hkt/ops/linalg.hpp): BLAS layouts, copies and broadcast batches.
void add_linalg(std::vector<OpEntry>& out) {
  out.push_back({"matmul / bmm", {"matmul"}, [](std::mt19937_64& rng) {
                   const int64_t b = dim(rng, 1, 3), m = dim(rng, 1, 5), k = dim(rng, 1, 5), n = dim(rng, 1, 5);
                   auto mm = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
                   auto bm = [](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); };
                   return std::vector<Case>{
                       {str({m, k}) + " @ " + str({k, n}), {{{m, k}}, {{k, n}}}, mm},
                       {"transposed @ sliced", {{{m, k}, Layout::Transposed}, {{k, n}, Layout::Sliced}}, mm},
                       {"bmm " + str({b, m, k}), {{{b, m, k}}, {{b, k, n}}}, bm},
                       {"broadcast batch " + str({b, m, k}) + " @ " + str({k, n}), {{{b, m, k}}, {{k, n}}}, mm},
                       {"expanded batch", {{{b, m, k}, Layout::Expanded}, {{b, k, n}}}, mm},
                       {"vector @ matrix", {{{k}}, {{k, n}}}, mm},
                       {"k = 0", {{{m, 0}}, {{0, n}}}, mm},
                       {"large [200, 300] @ [300, 150]", {{{200, 300}}, {{300, 150}}}, mm, false},
                   };
                 }});
  out.back().tol32 = 1e-3;  // float32 products of up to 300 terms
  out.back().tol_device = 1e-3;
  out.back().bad_input = [] { matmul(f32({2, 3}), f32({4, 2})); };
  out.back().bad_needle = "matmul:";
}

// In-place optimizer updates and gradient-norm helpers (hkt/ops/optim.hpp): not
// differentiable; each case updates copies of its inputs and returns them.
void add_optim(std::vector<OpEntry>& out) {
  // Shapes: random, transposed (copied by clone), empty, and one long enough for several
  // sum-of-squares chunks and thread tasks.
  auto cases = [](std::mt19937_64& rng, size_t n_args, const Fn& f) {
    const Shape s = shape(rng, 2, 2, 6);
    const auto args = [n_args](Shape sh, Layout l) {
      std::vector<Arg> a;
      for (size_t i = 0; i < n_args; ++i) a.push_back({sh, l, i == 3 ? 0.0 : -1.5, 1.5});  // exp_avg_sq >= 0
      return a;
    };
    return std::vector<Case>{{str(s), args(s, Layout::Contiguous), f},
                             {"transposed", args(s, Layout::Transposed), f},
                             {"empty [0, 4]", args({0, 4}, Layout::Contiguous), f},
                             {"large [40000]", args({40000}, Layout::Contiguous), f, false}};
  };
  const auto entry = [&](const char* op, const char* kernel, size_t n_args, Fn f, std::function<void()> bad,
                         const char* needle) {
    out.push_back({op, {kernel}, [cases, n_args, f](std::mt19937_64& rng) { return cases(rng, n_args, f); }});
    out.back().differentiable = false;
    out.back().bad_input = std::move(bad);
    out.back().bad_needle = needle;
  };
  entry("sgd_update_", "sgd_update_", 3,
        [](const std::vector<Tensor>& in) {
          Tensor p = clone(in[0]), buf = clone(in[2]);
          sgd_update_(p, contiguous(in[1]), buf, 0.1, 0.9, 0.1, 0.01, true, false);
          return cat({p, buf});
        },
        [] {
          Tensor p = f32({2}), b = f32({2});
          sgd_update_(p, f32({2}), b, 0.1, 0.0, 0.0, 0.0, true, true);
        },
        "sgd_update_: nesterov needs a non-zero momentum");
  entry("adamw_update_", "adamw_update_", 4,
        [](const std::vector<Tensor>& in) {
          Tensor p = clone(in[0]), m = clone(in[2]), v = clone(in[3]);
          adamw_update_(p, contiguous(in[1]), m, v, 1e-2, 0.9, 0.999, 1e-8, 0.01, 3);
          return cat({p, m, v});
        },
        [] {
          Tensor p = f32({2}), m = f32({2}), v = f32({2});
          adamw_update_(p, f32({3}), m, v, 1e-2, 0.9, 0.999, 1e-8, 0.0, 1);
        },
        "adamw_update_: grad is");
  entry("adamw_update_multi_", "adamw_update_multi_", 4,
        [](const std::vector<Tensor>& in) {
          // Two parameters: the case's and its negation, with their own scalars.
          std::vector<AdamWItem> items = {{clone(in[0]), contiguous(in[1]), clone(in[2]), clone(in[3]), 1e-2, 0.01, 2},
                                          {-in[0], in[1] * 0.5, clone(in[2]), clone(in[3]), 1e-3, 0.0, 5}};
          adamw_update_multi_(items, 0.9, 0.999, 1e-8);
          return cat({items[0].param, items[0].exp_avg, items[1].param, items[1].exp_avg_sq});
        },
        [] {
          adamw_update_multi_({{f32({2}), f32({3}), f32({2}), f32({2}), 1e-2, 0.0, 1}}, 0.9, 0.999, 1e-8);
        },
        "adamw_update_multi_: grad is");
  entry("sum_of_squares", "sum_of_squares", 1,
        [](const std::vector<Tensor>& in) {
          return scalar_tensor(sum_of_squares(in[0]), in[0].dtype(), in[0].device());
        },
        [] { sum_of_squares(zeros({2}, {DType::Int64})); }, "sum_of_squares: expected a float32 or float64 tensor");
  entry("sum_of_squares_multi", "sum_of_squares_multi", 2,
        [](const std::vector<Tensor>& in) {
          const std::vector<double> s = sum_of_squares_multi({in[0], in[1], in[0] * 2.0});
          return to_device(to_dtype(from_vector(s, {3}), in[0].dtype()), in[0].device());
        },
        [] { sum_of_squares_multi({f32({2}), zeros({2}, {DType::Int64})}); },
        "sum_of_squares_multi: tensor 1 must be float32 or float64");
  entry("scale_", "scale_", 1,
        [](const std::vector<Tensor>& in) {
          Tensor t = clone(in[0]);
          scale_(t, 0.37);
          return t;
        },
        [] {
          Tensor t = transpose(f32({2, 3}), 0, 1);
          scale_(t, 2.0);
        },
        "scale_: tensor (float32[3, 2] on cpu) must be contiguous");
  entry("scale_multi_", "scale_multi_", 2,
        [](const std::vector<Tensor>& in) {
          Tensor a = clone(in[0]), b = clone(in[1]);
          scale_multi_({a, b}, 0.37);
          return cat({a, b});
        },
        [] {
          Tensor t = f32({4});
          scale_multi_({t, t}, 2.0);
        },
        "scale_multi_: tensors 0 and 1 overlap in memory");
}

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

}  // namespace

// Arguments: --complete runs only the completeness check of the op list;
// --require-device exits 77 (CTest: Skipped) when there is no CUDA device.
// Attention shapes [B, H, T, dh]: T from t_lo to t_hi (not a power of two
// unless drawn so), and a Bool [B, T] padding mask with a padded start and end
// (a causal row whose keys are all padded gives 0).
Shape attention_shape(std::mt19937_64& rng, int64_t t_lo, int64_t t_hi) {
  return {dim(rng, 1, 2), dim(rng, 1, 2), dim(rng, t_lo, t_hi), dim(rng, 1, 4)};
}
Tensor padding_mask(int64_t B, int64_t T) {
  std::vector<int64_t> v(static_cast<size_t>(B * T), 1);
  for (int64_t b = 0; b < B; ++b) {
    v[static_cast<size_t>(b * T)] = 0;                         // a padded first key
    for (int64_t t = T - 1 - b; t < T && t > 0; ++t) v[static_cast<size_t>(b * T + t)] = 0;  // a padded tail
  }
  return gt(from_vector(v, {B, T}), 0.0);
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

int main(int argc, char** argv) {
  bool complete_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--complete") {
      complete_only = true;
    } else if (a == "--require-device") {
      if (!cuda_is_available()) {
        std::cout << "op_harness: skipped: " << cuda_unavailable_reason() << "\n";
        return 77;
      }
    } else {
      std::cerr << "op_harness: unknown argument '" << a << "' (--complete, --require-device)\n";
      return 2;
    }
  }
  std::vector<OpEntry> entries;
  add_elementwise(entries);
  add_nn(entries);
  add_factory(entries);
  add_index(entries);
  add_linalg(entries);
  add_optim(entries);
  add_attention(entries);
  add_htransformer(entries);
  add_local_attention(entries);
  Options opt;
  opt.require_every_registered_op = true;
  const int failures = complete_only ? 0 : run(entries, opt);
  // The completeness check of the op list: every kernel each built backend must have.
  const std::vector<std::string> missing = missing_kernels();
  for (const std::string& m : missing) std::cerr << "FAIL missing kernel: " << m << "\n";
  std::cout << "op list: " << registered_ops().size() << " kernel ops, " << missing.size() << " missing kernels\n";
  return failures + static_cast<int>(missing.size()) > 0 ? 1 : 0;
}
