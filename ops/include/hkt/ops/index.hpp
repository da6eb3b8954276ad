// Joining, indexing and selection ops. Index and mask inputs are not
// differentiable.
#pragma once
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt {

// Concatenate along an existing dim / stack along a new dim.
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);
// out = x.index_select(dim, index): index is 1-D Int64; out-of-range indices throw.
// backward: gradients of repeated indices add up.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// Embedding lookup: weight [V, D], ids Int64 of any shape -> [ids..., D].
Tensor embedding(const Tensor& weight, const Tensor& ids);
// out[i][j][k] = x[i][index[i][j][k]][k] (for dim = 1): index has x's rank.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// cond ? a : b, all three broadcast; cond is Bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x with `value` where mask (Bool, broadcast to x) is true; no gradient there.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

}  // namespace hkt
