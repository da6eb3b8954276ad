// Convolutions.
#pragma once
#include <cstdint>

#include "hkt/core/tensor.hpp"

namespace hkt {

// Causal depthwise 1-D convolution over time, one k-tap filter per channel:
//
//   y[b, t, c] = bias[c] + sum_{j=0}^{k-1} w[c, j] * x[b, s*t + s - 1 - j, c]
//   (x[b, i, c] = 0 for i < 0 or i >= T)
//
// x [B, T, C] (any strides), weight [C, k], bias [C] or undefined (no bias);
// output [B, ceil(T / s), C]. Any T >= 1, k >= 1, s >= 1.
//
// - Output t reads the inputs s*t + s - 1 down to s*t + s - k: tap j = 0 is
//   the most recent input of the block, taps reaching before the start read
//   zeros (left zero padding of k - s when k > s).
// - T_out = ceil(T / s). When T is not divisible by s the last output reads a
//   partial block: its inputs at index >= T count as zero (the last block is
//   padded on the right).
// - Causality: output t depends only on inputs i <= s*(t+1) - 1, the end of
//   its own block of s inputs.
// - With k = 3, s = 2 output t reads inputs 2t+1, 2t, 2t-1 (the downsampling
//   convolution of HKT); with s = 1 output t reads t, t-1, ..., t-k+1.
//
// float32 and float64. The backward (own kernels, not differentiable again)
// computes only the gradients that are needed; dweight and dbias are reduced
// in fixed chunks combined in order, so they are bit-identical for any number
// of threads.
Tensor causal_depthwise_conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride = 1);

}  // namespace hkt
