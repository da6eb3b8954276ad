// Reductions over any set of dims (empty set = all dims), with keepdim.
#pragma once
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt {

using Dims = std::vector<int64_t>;

// sum: float accumulation in double; deterministic for any thread count.
Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Maximum; the gradient is shared equally among tied maxima.
Tensor max(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Index of the maximum along dim, as Int64 (no gradient): the first one on
// ties, as NumPy and PyTorch; a NaN counts as the maximum (the first NaN wins).
// keepdim keeps dim with size 1. Without a dim: the index into x flattened in
// row-major order, a 0-dim tensor. x: float32, float64 or int64, with at least
// one element along dim.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);
// Variance with `correction` (1 = unbiased, 0 = population).
Tensor var(const Tensor& x, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false);
// Sums a broadcast gradient back to `shape` (the inverse of broadcasting).
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace hkt
