// H-Transformer-1D attention (Zhu and Soricut, 2021): hierarchical attention
// in the style of H-matrices, without any T x T matrix.
//
// Per batch b and head h, with N = block (the paper's Nr), the output is
//
//   Y = (A V) / (A 1)     (one shared normalisation; 0 where A 1 = 0)
//
// for a hierarchical matrix A of non-negative entries built from levels:
//
//   level 0      the diagonal blocks: query i and key j in the same block of N
//                tokens, A_ij = exp(s_ij), s_ij = scale * q_i . k_j (exact).
//   level l >= 1 the off-diagonal blocks of size S = N * 2^(l-1) inside each
//                diagonal block of size 2S (a block and its sibling in the
//                binary tree of blocks: the super-diagonal block for the
//                left one, the sub-diagonal block for the right one), taken
//                at resolution g = 2^(l-1): Q and K are restricted to the
//                coarse grid by averaging pairs l-1 times (each coarse token
//                is the mean of g consecutive tokens), the N x N coarse
//                block of scores s~_IJ = scale * q~_I . k~_J is computed, and
//                it is prolonged back by repetition: A_ij = exp(s~_IJ) for
//                every fine i in group I and j in group J. So A V takes the
//                sum of V over each group J (the restriction of V) and A 1
//                counts its tokens.
//
// The levels partition the (padded) matrix exactly, so each (i, j) pair is
// attended once, at the finest resolution its distance allows; level l costs
// (T / g) * N scores. With levels = 1 (or T <= N) this is exact softmax
// attention within each block of N tokens (T <= N: mha_attention).
//
// Length: the sequence is padded internally with masked tokens to
// T' = ceil(T / (N 2^(L-1))) * N 2^(L-1), L = the number of levels used
// (every level that has an off-diagonal block: L = 1 + ceil(log2(ceil(T/N))),
// or `levels` when given and smaller); the pad is sliced off the output.
//
// Masks: valid (Bool [B, T] or undefined) masks padded keys; the averages
// of the restriction are taken over valid tokens only (a group without any
// is masked), so padded tokens' values never reach a valid output, and the
// outputs at padded positions are 0. A query whose keys are all masked gets 0.
//
// Causal: level 0 masks j > i inside the block; level l >= 1 keeps only the
// sub-diagonal (lower-triangular) blocks, where every key precedes every
// query. The coarse query of a group would mix in later tokens of the group,
// so in causal mode the off-diagonal levels use the fine queries q_i against
// the coarse keys (s_iJ = scale * q_i . k~_J): no output depends on a later
// token.
//
// Cost per head: O(T * N * dh) for the scores and products (level l has T/g
// coarse rows of N keys; causal: T rows of N keys per level, O(T N dh log(T/N)))
// plus O(T dh log(T/N)) for the restriction and prolongation. Memory: the
// fused op (htransformer_attention, CPU kernels in kernels/cpu/htransformer.hpp)
// saves its inputs, Y and one log-sum-exp per query and uses O(T dh) workspace
// per (batch, head) task; the backward recomputes the scores. The composite
// (htransformer_attention_reference, plain differentiable ops: matmul, exp,
// sums, reshapes) keeps O(T (N + dh)) per level for its graph; neither forms a
// T x T tensor. Gradients flow to q, k and v; valid is not differentiable.
// q, k, v: [B, H, T, dh], float32 or float64 (the fused kernels are CPU only;
// on a device without them htransformer_attention runs the composite);
// block >= 1; levels >= 1, or 0 for as many as the length needs.
#pragma once
#include <cstdint>

#include "hkt/core/tensor.hpp"

namespace hkt {

// The number of levels H-Transformer-1D uses for length T and block N:
// 1 + ceil(log2(ceil(T / N))) (1 when T <= N).
int64_t htransformer_levels(int64_t T, int64_t block);

Tensor htransformer_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid, bool causal,
                              double scale, int64_t block, int64_t levels = 0);

// The same as a composite of differentiable ops (the reference the fused op is tested against).
Tensor htransformer_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& valid,
                                        bool causal, double scale, int64_t block, int64_t levels = 0);

}  // namespace hkt
