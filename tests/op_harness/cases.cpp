// The case generators the op_harness families share (cases.hpp).
#include "op_harness/cases.hpp"

namespace hkt::harness {

std::string str(const Shape& s) { return shape_str(s); }
Tensor f32(const Shape& s) { return zeros(s, {DType::Float32}); }

// Domain of an op's operands: ops undefined (or not differentiable) somewhere get a safe range.
std::pair<double, double> range(const std::string& op, size_t arg) {
  if (op == "log" || op == "sqrt" || op == "rsqrt") return {0.3, 2.0};
  if (op == "log1p") return {-0.7, 2.0};
  if ((op == "div" && arg == 1) || (op == "pow" && arg == 0)) return {0.5, 2.0};
  return {-1.5, 1.5};
}

// One-operand cases: every layout, size-1, empty and 0-dim shapes, and a large one.
std::vector<Case> one_input(std::mt19937_64& rng, const std::string& op, const Fn& fn, size_t min_rank) {
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

}  // namespace hkt::harness
