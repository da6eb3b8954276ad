// Neural-network ops with fused kernels.
#pragma once
#include <cstdint>

#include "hkt/core/random.hpp"
#include "hkt/core/tensor.hpp"

namespace hkt {

// Numerically stable softmax / log_softmax along dim (any dim, any strides;
// a 0-dim tensor is one row of one element). Only the output is saved.
//   y = exp(x - max) / sum exp(x - max);     backward: dx = y * (g - sum(g * y))
//   y = x - max - log sum exp(x - max);       backward: dx = g - exp(y) * sum(g)
// A row whose elements are all -inf (fully masked) gives 0 from softmax and
// -inf from log_softmax, and a zero gradient for both (never NaN); a NaN in a
// row makes that row NaN. Sums are accumulated in double.
Tensor softmax(const Tensor& x, int64_t dim = -1);
Tensor log_softmax(const Tensor& x, int64_t dim = -1);

// Layer normalisation over the last dim, one fused op:
//   y = (x - mean) * rstd * weight + bias,   rstd = 1 / sqrt(var + eps) (population variance)
// weight and bias are [D] and may be undefined (no affine part).
// Saves mean and rstd [rows] (statistics computed in double) with the input
// and weight for the backward, which has its own kernel; dweight and dbias are
// reduced over rows in fixed chunks, so they are bitwise reproducible for any
// thread count. The last dim must be non-empty; eps >= 0.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// Inverted dropout: in training, zero each element with probability p and
// scale the rest by 1 / (1 - p); identity when !training or p == 0. The mask
// depends only on the generator's seed and offset, not on thread count or on
// x's strides: element i (row-major) uses Philox counter offset + i, and
// numel counters are reserved from `gen` (default_generator() if null).
// p outside [0, 1) is an error. When !training or p == 0, x itself is returned.
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

// Per-channel gated mix, one fused op (the hybrid head's gate):
//   y[..., c] = w[c] * a[..., c] + (1 - w[c]) * b[..., c]
// a and b have the same shape (any strides); w is [C], C = the last dim.
// Backward: da = w g, db = (1 - w) g, dw[c] = sum over the other dims of
// g (a - b), reduced in fixed row chunks in double (bitwise reproducible for
// any thread count). Saves a, b and w.
Tensor gated_mix(const Tensor& a, const Tensor& b, const Tensor& w);

// Fused bias + GELU, the epilogue of a linear layer: y = gelu(x + b) with x
// [..., C] and b [C] (the tanh form when approximate, else the erf form).
// Backward: dx = g * gelu'(x + b), db = dx summed over every dim but the last.
// Saves x and b.
Tensor bias_gelu(const Tensor& x, const Tensor& b, bool approximate = false);

enum class Reduction { Mean, Sum, None };
// Cross-entropy of logits [N, C] against Int64 targets [N]. Targets equal to
// ignore_index contribute nothing; Mean divides by the number of non-ignored
// targets (an error if there are none); Sum adds the rows; None gives the
// per-row losses [N] (0 on ignored rows). A target outside [0, C) that is not
// ignore_index throws, naming the row and value. Fused log-softmax + NLL: it
// saves the per-row log-sum-exp, and backward recomputes the softmax:
// dlogits = (softmax - onehot) * g / count.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::Mean);

}  // namespace hkt
