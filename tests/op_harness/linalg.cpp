// op_harness entries of the matrix products.
#include "op_harness/cases.hpp"

namespace hkt::harness {

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

}  // namespace hkt::harness
