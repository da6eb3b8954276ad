// Linear (kernelized) attention, the core of Performer attention: composites
// of existing ops that never form a T x T tensor.
#pragma once
#include <cstdint>

#include "hkt/core/tensor.hpp"

namespace hkt {

// FAVOR+ positive random features of x [B, H, T, dh] for the projection
// w [m, dh] (rows: random directions), phi(x) [B, H, T, m]:
//   phi(x) = (exp(x' w^T - |x'|^2 / 2 - c) + eps) / sqrt(m),   x' = x dh^(-1/4),
// so that E[phi(q) . phi(k)] = exp(q . k / sqrt(dh)) e^(-c_q - c_k) up to eps.
// The stabiliser c cancels in linear_attention's ratio up to eps (gradients flow
// through it, so they are exact with eps too):
//   queries (is_query): each row's max, so every query row has a feature
//     exp(0) = 1 whatever the scale of its arguments;
//   keys: the max c over (T, m) of each (b, h), over the valid keys only (valid:
//     Bool [B, T] or undefined; padded key rows give exp(-inf) = 0 before eps),
//     so the largest valid key has a feature 1 (a zeroed padded key, arguments
//     0, would otherwise set c and underflow every real key);
//   keys, causal: eps is added before the shift, phi = e^(-c') (e^arg + eps) /
//     sqrt(m) with c' = max(c, log eps), so the shift is a factor common to all
//     keys and no key's features depend on a later key's (the JAX reference adds
//     eps after a max over all positions, which leaks by O(eps) in causal mode).
// eps (the additive stabiliser of the reference implementations: 1e-6 in
// google-research/performer's fast_attention, which LRA ran; 1e-4 in
// performer-pytorch) keeps every feature positive, so no row of phi is all
// zero and no denominator is 0 where the exponentials underflow (a key whose
// arguments all lie more than about 87 below c, in float32).
Tensor favor_features(const Tensor& x, const Tensor& w, bool is_query, const Tensor& valid = Tensor(),
                      double eps = 1e-6, bool causal = false);

// The elu + 1 feature map (Katharopoulos et al., 2020): phi(x) = elu(x) + 1 > 0.
Tensor elu1_features(const Tensor& x);

// Orthogonal random features [m, dh] for FAVOR+ (Choromanski et al., 2021):
// blocks of dh orthonormal rows (Gram-Schmidt of Gaussian blocks), each row
// scaled by the norm of an independent Gaussian dh-vector. Deterministic from
// the seed (hkt's Philox normals).
Tensor orthogonal_features(int64_t m, int64_t dh, uint64_t seed, DType dtype = DType::Float32);

// out_i = sum_j phi_q_i . phi_k_j v_j / sum_j phi_q_i . phi_k_j over the keys
// j that are valid (Bool [B, T] or undefined) and, causal, j <= i; phi_q,
// phi_k [B, H, T, m] (non-negative), v [B, H, T, dh]. A row without keys gives
// 0. Bidirectional: phi_q (phi_k^T v) / phi_q (phi_k^T 1); causal: by prefix
// sums over chunks of `chunk` positions (a [chunk, chunk] masked product
// inside a chunk, the running sums phi_k^T v [m, dh] across chunks).
// Memory O(T (m + dh) + (T / chunk) m dh) per head: linear in T.
Tensor linear_attention(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& valid, bool causal,
                        int64_t chunk = 64);

// The same through the T x T matrix phi_q phi_k^T (the reference).
Tensor linear_attention_reference(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& valid,
                                  bool causal);

}  // namespace hkt
