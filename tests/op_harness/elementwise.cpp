// op_harness entries of the elementwise family, generated from its lists
// (hkt/kernels/elementwise_defs.hpp): a new list entry is checked with no line here
// (give an op with a restricted domain its range in cases.cpp); and clamp.
#include <cmath>

#include "op_harness/cases.hpp"

namespace hkt::harness {
namespace {

// clamp, a fused op with two bounds (hkt/ops/elementwise.hpp).
void add_clamp(std::vector<OpEntry>& out) {
  out.push_back({"clamp", {"clamp", "clamp_backward"}, [](std::mt19937_64& rng) {
                   return one_input(rng, "clamp", [](const std::vector<Tensor>& in) { return clamp(in[0], -0.7, 0.9); });
                 }});
  out.back().bad_input = [] { clamp(f32({2}), 1.0, -1.0); };
  out.back().bad_needle = "clamp: lower bound 1 exceeds upper bound -1";
  out.back().examples = [] {
    const Tensor x = from_vector(std::vector<double>{-2, -0.7, 0, 0.9, 2, std::nan("")}, {6});
    const Tensor xl = x.detach().set_requires_grad(true);
    sum(clamp(xl, -0.7, 0.9)).backward();
    // float32: the bounds are rounded to float32 first, as min(max(x, lo), hi) of float32 tensors.
    const Tensor r = to_dtype(from_vector(std::vector<double>{0.1, 0.1000000001, 0.29999999, 0.5}, {4}), DType::Float32);
    const Tensor composite = minimum(maximum(r, 0.1), 0.3);
    for (const std::string& m : {
             expect(clamp(x, -0.7, 0.9), {6}, {-0.7, -0.7, 0, 0.9, 0.9, -0.7}),  // NaN gives lo
             expect(xl.grad(), {6}, {0, 1, 1, 1, 0, 0}),                         // 1 at the bounds
             expect(clamp(from_vector(std::vector<int64_t>{-5, 1, 7}, {3}), -2.0, 3.0), {3}, {-2, 1, 3}),
             expect(clamp(r, 0.1, 0.3), {4}, to_dtype(composite, DType::Float64).to_vector<double>()),
         })
      if (!m.empty()) return m;
    return std::string();
  };
}

}  // namespace

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
  add_clamp(out);
}

}  // namespace hkt::harness
