// op_harness entries of the optimizer updates and gradient-norm helpers.
#include "op_harness/cases.hpp"

namespace hkt::harness {

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

}  // namespace hkt::harness
