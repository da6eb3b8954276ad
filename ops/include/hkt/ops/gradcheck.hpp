// Gradient checking by central differences (float64).
//
// gradcheck(f, inputs) compares, for every input that requires a gradient,
// the gradient that backward() computes for L = sum_k <w_k, f(inputs)_k>
// (fixed random weights w_k, one per output) with the central difference
// (L(x + eps) - L(x - eps)) / (2 eps) for each element of that input. Inputs
// may be non-contiguous (transposed, sliced) or broadcast operands. A
// mismatch beyond atol + rtol * |numeric| throws hkt::Error naming the input,
// the element, and both values. Use it for every op, built-in or your own.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-7;
  double rtol = 1e-5;
  uint64_t seed = 1234;
};

using MultiFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using SingleFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Returns normally if every gradient matches; throws hkt::Error otherwise.
void gradcheck(const MultiFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt = {});
void gradcheck(const SingleFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt = {});

}  // namespace hkt
