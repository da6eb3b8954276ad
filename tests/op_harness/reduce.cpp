// op_harness entries of the reductions (hkt/ops/reduce.hpp).
#include "op_harness/cases.hpp"

namespace hkt::harness {

void add_reduce(std::vector<OpEntry>& out) {
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
}

}  // namespace hkt::harness
