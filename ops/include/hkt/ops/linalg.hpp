// Matrix products through BLAS (sgemm/dgemm on the CPU).
#pragma once
#include "hkt/core/tensor.hpp"

namespace hkt {

// matmul(a, b):
//   a [M, K] @ b [K, N] -> [M, N]
//   a [..., M, K] @ b [..., K, N] -> [..., M, N], batch dims broadcast (NumPy rules)
//   a 1-D [K] is treated as [1, K] and b 1-D [K] as [K, 1]; the added dim is removed.
// A transposed operand (strides (1, ld)) is passed to BLAS as a transpose flag,
// never copied. backward: dA = dY @ B^T, dB = A^T @ dY (summed over broadcast batch dims).
Tensor matmul(const Tensor& a, const Tensor& b);
// Batched product of 3-D tensors: a [B, M, K] @ b [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& a, const Tensor& b);

}  // namespace hkt
