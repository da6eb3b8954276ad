// Sliding-window (local) attention: each query sees the keys within w
// positions of it (causal: the w previous keys and itself).
#pragma once
#include <cstdint>

#include "hkt/core/tensor.hpp"

namespace hkt {

// Fused local attention, per batch b and head h:
//   O_i = sum_{j in N(i)} softmax_j(q_i . k_j * scale) v_j
// with N(i) = { j : |i - j| <= w } (causal: i - w <= j <= i), minus the keys
// where valid (Bool [B, T], or undefined: all valid) is false. q, k, v:
// [B, H, T, dh], float32 or float64; a row with no visible key gives 0.
// w >= T - 1 is full attention (mha_attention). O(T w dh) time and O(T)
// memory per head (saves O and one log-sum-exp per row; the backward
// recomputes the scores). Gradients flow to q, k and v. CPU only: on
// another device it throws an hkt::Error saying so. Errors: w < 0, shapes,
// dtypes, devices, a non-finite scale.
Tensor local_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, int64_t window,
                       bool causal, double scale);

// The same from plain ops with a [T, T] band mask (the reference the fused op
// is tested against; O(T^2) memory).
Tensor local_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid,
                                 int64_t window, bool causal, double scale);

}  // namespace hkt
