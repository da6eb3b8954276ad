// Neural-network ops with fused kernels.
#pragma once
#include <cstdint>

#include "hkt/core/random.hpp"
#include "hkt/core/tensor.hpp"

namespace hkt {

// Numerically stable softmax / log_softmax along dim.
//   y = exp(x - max) / sum exp(x - max);     backward: dx = y * (g - sum(g * y))
//   y = x - max - log sum exp(x - max);       backward: dx = g - exp(y) * sum(g)
Tensor softmax(const Tensor& x, int64_t dim = -1);
Tensor log_softmax(const Tensor& x, int64_t dim = -1);

// Layer normalisation over the last dim, one fused op:
//   y = (x - mean) * rstd * weight + bias,   rstd = 1 / sqrt(var + eps) (population variance)
// weight and bias are [D] and may be undefined (no affine part).
// Saves mean and rstd (not a copy of the activations) for the backward.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// Inverted dropout: in training, zero each element with probability p and
// scale the rest by 1 / (1 - p); identity when !training or p == 0. The mask
// depends only on the generator's seed and offset, not on thread count.
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

enum class Reduction { Mean, Sum, None };
// Cross-entropy of logits [N, C] against Int64 targets [N]. Targets equal to
// ignore_index contribute nothing; Mean divides by the number of non-ignored
// targets (an error if there are none). Targets outside [0, C) throw.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::Mean);

}  // namespace hkt
