// op_harness entries of the reductions (hkt/ops/reduce.hpp).
#include <cmath>

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

  // argmax: random values, integer values (ties), every layout, flattened and 0-dim.
  out.push_back({"argmax", {"argmax"}, [](std::mt19937_64& rng) {
                   const Shape s = shape(rng, 3, 2, 5);
                   const auto along = [](int64_t d, bool keep) {
                     return [d, keep](const std::vector<Tensor>& in) { return argmax(in[0], d, keep); };
                   };
                   const Fn all = [](const std::vector<Tensor>& in) { return argmax(in[0]); };
                   const Arg ties{s, Layout::Contiguous, -2, 3, true};
                   return std::vector<Case>{
                       {"dim 1 of " + str(s), {{s}}, along(1, false)},
                       {"dim -1, keepdim, transposed", {{s, Layout::Transposed}}, along(-1, true)},
                       {"dim 0, sliced", {{s, Layout::Sliced}}, along(0, false)},
                       {"all, transposed", {{s, Layout::Transposed}}, all},
                       {"ties (integer values), dim 2", {ties}, along(2, false)},
                       {"ties, all, expanded", {{s, Layout::Expanded, -2, 3, true}}, all},
                       {"size-1 dim [3, 1]", {{{3, 1}}}, along(1, true)},
                       {"no rows [0, 4]", {{{0, 4}}}, along(1, false)},
                       {"0-dim", {{{}}}, along(0, false)},
                       {"large [3000, 40] (split over threads)", {{{3000, 40}}}, along(1, false), false},
                   };
                 }});
  out.back().differentiable = false;
  out.back().bad_input = [] { argmax(f32({2, 3}), 2); };
  out.back().bad_needle = "argmax: dim 2 is out of range for a tensor with 2 dims";
  out.back().examples = [] {
    const double nan = std::nan("");
    const Tensor x = from_vector(std::vector<double>{1, 3, 3, 2, 5, 5, 0, 5}, {2, 4});
    const Tensor n = from_vector(std::vector<double>{1, nan, 7, nan}, {4});
    const Tensor i = from_vector(std::vector<int64_t>{-3, 7, 7}, {3});
    const Device dev = cuda_is_available() ? Device::cuda() : Device::cpu();
    auto error = [](const std::function<void()>& f, const std::string& needle) -> std::string {
      try {
        f();
      } catch (const Error& e) {
        return std::string(e.what()).find(needle) != std::string::npos ? "" : std::string("error: ") + e.what();
      }
      return "no error (expected '" + needle + "')";
    };
    for (const std::string& m : {
             expect(argmax(x, 1), {2}, {1, 0}),  // ties: the first
             expect(argmax(x, 0), {4}, {1, 1, 0, 1}),
             expect(argmax(x, -1, true), {2, 1}, {1, 0}),
             expect(argmax(x), {}, {4}),  // flattened, row-major
             expect(argmax(transpose(x, 0, 1), 1), {4}, {1, 1, 0, 1}),
             expect(argmax(n), {}, {1}),  // the first NaN
             expect(argmax(to_device(n, dev)), {}, {1}),  // on the device too, where there is one
             expect(argmax(to_device(x, dev), 0), {4}, {1, 1, 0, 1}),
             expect(argmax(i), {}, {1}),
             expect(argmax(scalar_tensor(2.0), 0, true), {}, {0}),
             error([] { argmax(f32({2, 0}), 1); }, "argmax: dim 1 of x [2, 0] is empty"),
             error([] { argmax(f32({0})); }, "argmax: dim 0 of x [0] is empty"),
             error([] { argmax(gt(f32({2}), 0.0)); }, "argmax: x is bool"),
         })
      if (!m.empty()) return m;
    return std::string();
  };
}

}  // namespace hkt::harness
