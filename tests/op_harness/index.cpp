// op_harness entries of joining, indexing and selection.
#include "op_harness/cases.hpp"

namespace hkt::harness {

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

}  // namespace hkt::harness
