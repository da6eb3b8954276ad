// H-Transformer-1D attention (Zhu and Soricut 2021, arXiv 2107.11906), the
// layout of the authors' code (google/flaxformer, architectures/h_transformer):
// a hierarchical matrix that is block-tridiagonal at every level, without any
// T x T matrix. docs/htransformer.md has the picture of the partition.
//
// Geometry (htransformer_geometry). Nr = block, even, >= 2. The sequence is
// padded INSIDE the op with masked tokens to Tp = Nr' 2^L, L >= 1 (the pad is
// sliced off the output): for T <= 2 Nr, Tp = T rounded up to even (at least
// 2), Nr' = Tp / 2, L = 1 (exact softmax attention); otherwise Nr' = Nr and
// Tp = Nr 2^ceil(log2(ceil(T / Nr))). There are L = log2(Tp / Nr') levels
// l = 0 .. L-1; level l is the sequence coarsened l times (Tp >> l tokens,
// coarse token p = fine tokens [p 2^l, (p + 1) 2^l)) cut into blocks of Nr'.
//
// Coarsening, pair by pair, recursively: k~ (and q~, bidirectional) the mean
// of the two children that hold a valid token (a mean of means; the plain pair
// mean without padding); causal q~ the first token of the group; vsum the sum;
// c the number of valid fine keys in the group. q, k, v are zeroed at padding.
//
// Blocks, per level, for the coarse query block b: LEFT (keys of block b - 1)
// and RIGHT (block b + 1) at every level, the ANCHOR (block b itself) at level
// 0 only. At levels >= 1 the correction mask drops, with h = Nr' / 2, the
// quarter rows [0, h) x columns [h, Nr') of LEFT and rows [h, Nr') x columns
// [0, h) of RIGHT (covered by the level below). Causal: ANCHOR lower-triangular
// (key <= query), no RIGHT blocks. Pair (i, j) of fine tokens is then covered
// exactly once, at the smallest l with |i / (Nr' 2^l) - j / (Nr' 2^l)| <= 1.
//
// Scores s = scale q~_p . k~_r + bias[h, (r - p) + 2 Nr - 1] (r - p the signed
// distance in coarse tokens of that level, |r - p| < 2 Nr'; the same table at
// every level); keys with c = 0 are dropped. One shared normaliser:
//
//   Y_i = sum_l sum_r exp(s_l(i >> l, r)) vsum_l[r],  Z_i = same with c_l[r],
//   out_i = valid_i Y_i / Z_i   (0 where Z_i = 0)
//
// so the implied dense matrix is a softmax over the partition in which each
// fine key of a coarse group counts once (piecewise-constant interpolation).
//
// Cost per head: Tp/Nr' ANCHOR blocks and, per level, Tp/(Nr' 2^l) - 1 LEFT
// (and as many RIGHT) blocks of Nr'^2 scores, correction quarters included:
// htransformer_score_count, 37,376 at T = 512, Nr = 16 (causal 22,784), under
// 5 Tp Nr' (causal 3 Tp Nr'): O(T Nr dh) time; O(T (dh + dv)) memory per
// (batch, head) for the levels. The fused op (CPU kernels in
// kernels/cpu/htransformer.cpp) saves its inputs, Y and one log-sum-exp per
// query and recomputes the scores in the backward; the composite
// (htransformer_attention_reference, plain differentiable ops) keeps
// O(T Nr) per head for its graph. Gradients flow to q, k, v and bias.
//
// q, k: [B, H, T, dh]; v: [B, H, T, dv]; valid: Bool [B, T] or undefined; bias:
// [H, 4 block - 1] in q's dtype, or undefined (no bias); float32 or float64 (the
// fused kernels are CPU only; elsewhere htransformer_attention runs the composite).
#pragma once
#include <cstdint>

#include "hkt/core/tensor.hpp"

namespace hkt {

struct HtrGeometry {
  int64_t Tp;  // the padded length, nr 2^L
  int64_t nr;  // the block used, Nr' = min(block, Tp / 2)
  int64_t L;   // the levels, log2(Tp / nr) >= 1
};
HtrGeometry htransformer_geometry(int64_t T, int64_t block);

// The number of levels, htransformer_geometry(T, block).L.
int64_t htransformer_levels(int64_t T, int64_t block);

// Scores computed per head (correction-masked quarters included, boundary blocks not).
int64_t htransformer_score_count(int64_t T, int64_t block, bool causal);

Tensor htransformer_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, bool causal,
                              double scale, int64_t block, const Tensor& bias = Tensor());

// The same as a composite of differentiable ops (the reference the fused op is tested against).
Tensor htransformer_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid,
                                        bool causal, double scale, int64_t block, const Tensor& bias = Tensor());

}  // namespace hkt
