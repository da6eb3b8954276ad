// What the op_harness families share: the case generators and the list of
// families (one add_<family> per file of tests/op_harness/, called in order by
// main.cpp). An entry (helpers/op_harness.hpp) holds an op's cases, its bad
// input and its worked examples: a new op's checks are one entry in its
// family's file.
#pragma once
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "helpers/op_harness.hpp"

namespace hkt::harness {

std::string str(const Shape& s);
Tensor f32(const Shape& s);  // zeros
// Domain of an op's operands: ops undefined (or not differentiable) somewhere get a safe range.
std::pair<double, double> range(const std::string& op, size_t arg);
// One-operand cases: every layout, size-1, empty and 0-dim shapes, and a large one.
std::vector<Case> one_input(std::mt19937_64& rng, const std::string& op, const Fn& fn, size_t min_rank = 0);
// Two-operand elementwise cases: broadcasting, layouts, empty, large.
std::vector<Case> two_inputs(std::mt19937_64& rng, const std::string& op, const Fn& fn, bool integer);
// Row ops along the last dim (or another one): softmax, log_softmax.
std::vector<Case> rows(std::mt19937_64& rng, const std::function<Tensor(const Tensor&, int64_t)>& f);
// Attention shapes [B, H, T, dh] with T in [t_lo, t_hi], and a Bool [B, T] padding mask.
Shape attention_shape(std::mt19937_64& rng, int64_t t_lo, int64_t t_hi);
Tensor padding_mask(int64_t B, int64_t T);

// The families, in main.cpp's order (the cases draw their shapes from one generator).
void add_elementwise(std::vector<OpEntry>& out);         // elementwise.cpp
void add_reduce(std::vector<OpEntry>& out);              // reduce.cpp
void add_nn(std::vector<OpEntry>& out);                  // nn.cpp
void add_factory(std::vector<OpEntry>& out);             // factory.cpp
void add_index(std::vector<OpEntry>& out);               // index.cpp
void add_linalg(std::vector<OpEntry>& out);              // linalg.cpp
void add_optim(std::vector<OpEntry>& out);               // optim.cpp
void add_attention(std::vector<OpEntry>& out);           // attention.cpp
void add_htransformer(std::vector<OpEntry>& out);        // subquadratic_attention.cpp
void add_local_attention(std::vector<OpEntry>& out);     // subquadratic_attention.cpp

}  // namespace hkt::harness
