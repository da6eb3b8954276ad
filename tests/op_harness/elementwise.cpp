// op_harness entries of the elementwise family, generated from its lists
// (hkt/kernels/elementwise_defs.hpp): a new list entry is checked with no line here
// (give an op with a restricted domain its range in cases.cpp).
#include "op_harness/cases.hpp"

namespace hkt::harness {

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

}  // namespace hkt::harness
