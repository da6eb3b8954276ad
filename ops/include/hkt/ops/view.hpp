// Views: results share storage with their input (no copy) where the layout
// allows it. Backward maps the gradient back to the input's shape.
#pragma once
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt {

// One dim may be -1 (inferred). Copies only when no view of x's strides has
// the new shape (a contiguous x always has one).
Tensor reshape(const Tensor& x, const Shape& shape);
// Like reshape but never copies: throws when the new shape cannot be expressed
// with x's strides.
Tensor view(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x, int64_t dim);  // dim must have size 1
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
// Broadcast to `shape` (stride 0 on new or size-1 dims); -1 keeps a dim.
Tensor expand(const Tensor& x, const Shape& shape);
// Elements start, start+step, ... < end along dim (negative start/end count
// from the end; out-of-range bounds are an error, not clipped).
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
// The single index i along dim (dim removed).
Tensor select(const Tensor& x, int64_t dim, int64_t index);

}  // namespace hkt
