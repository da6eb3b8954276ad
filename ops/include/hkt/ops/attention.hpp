// Fused attention: multi-scale (HKT) attention and, as its L = 1 case,
// standard multi-head attention, without any T x T matrix.
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/core/tensor.hpp"
#include "hkt/kernels/shared_rules.hpp"

namespace hkt {

// T_l = ceil(T / 2^l), the length of level l of a length-T sequence (the
// shape of q[l] and k[l] below; the downsampling convolution's output length).
constexpr int64_t hkt_level_len(int64_t T, int64_t l) { return rules::attn_level_len(T, l); }

// Fused multi-scale attention, per batch b and head h:
//   O = softmax( sum_l lambda[h, l] * Up_l(Q_l K_l^T * scale) + mask ) V
// q[l], k[l]: [B, H, T_l, dh] with T_l = ceil(T / 2^l) (level 0 = full
// resolution); v: [B, H, T, dh]; lambda: [H, L]; valid: Bool [B, T] or
// undefined (every key valid). Padded keys are masked; causal: j > i is
// masked and the causal block map c_l(i) = floor((i+1) / 2^l) - 1 is used
// (the term is 0 where c_l(i) < 0 or c_l(j) < 0), else Up_l reads
// (i >> l, j >> l). A row whose keys are all masked gives 0. Output
// [B, H, T, dh], same dtype (float32 or float64) as the inputs.
//
// Memory: O(T) per head. Saves O and the per-row log-sum-exp; the backward
// recomputes the score tiles (kernels/cpu/hkt_attention.cpp). Gradients flow to
// q[l], k[l], v and lambda; valid is not differentiable. Results are bitwise
// identical for any number of threads.
//
// MHA is the L = 1 case with lambda = ones [H, 1]: mha_attention below.
Tensor hkt_attention(const std::vector<Tensor>& q, const std::vector<Tensor>& k, const Tensor& v,
                     const Tensor& lambda, const Tensor& valid, bool causal, double scale);

// softmax(Q K^T * scale + mask) V for q, k, v [B, H, T, dh] (fused, L = 1).
Tensor mha_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, bool causal,
                     double scale);

}  // namespace hkt
