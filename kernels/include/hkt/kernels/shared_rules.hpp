// Rules the CPU and CUDA kernels must share for their results to agree to the
// bit: how a reduction is cut into chunks whose partials are merged in order,
// which Philox counter and conversion give element i of a random tensor, and
// the shapes both derive alike (attention's level lengths).
// Both backends include this header; change a rule here and both follow.
#pragma once
#include <cstdint>

#include "hkt/core/random.hpp"  // philox4x32, uint_to_unit

#if defined(__CUDACC__)
#define HKT_SHARED_HD __host__ __device__ inline
#else
#define HKT_SHARED_HD inline
#endif

namespace hkt::rules {

// Sum of squares (gradient-norm clipping): chunks of this many elements, each
// summed in double, the chunk partials added in chunk order.
inline constexpr int64_t kSumSquaresChunk = int64_t{1} << 14;

// gated_mix's dw reduction: this many row chunks (at most 64, about 1M partial
// values), double partials added in chunk order.
HKT_SHARED_HD int64_t gated_mix_chunks(int64_t rows, int64_t C) {
  int64_t nc = (int64_t{1} << 20) / (C > 0 ? C : 1);
  if (nc > 64) nc = 64;
  if (nc > rows) nc = rows;
  return nc < 1 ? 1 : nc;
}

// The row chunks of a column reduction over rows of `width` values whose
// double partials are added in chunk order: at most 64 chunks, at most about
// 2M partial values, at least one.
HKT_SHARED_HD int64_t row_chunks(int64_t rows, int64_t width) {
  int64_t nc = (int64_t{1} << 21) / (width > 0 ? width : 1);
  if (nc > 64) nc = 64;
  if (nc > rows) nc = rows;
  return nc < 1 ? 1 : nc;
}
// layer_norm's dweight / dbias reduction over [rows, D].
HKT_SHARED_HD int64_t layer_norm_chunks(int64_t rows, int64_t D) { return row_chunks(rows, D); }
// causal_depthwise_conv1d's dw / db reduction: rows B * T_out, (k + 1) * C columns.
HKT_SHARED_HD int64_t conv_grad_chunks(int64_t rows, int64_t C, int64_t k) { return row_chunks(rows, (k + 1) * C); }

// hkt_attention: level l of a sequence of T positions has ceil(T / 2^l) rows.
// The one definition of T_l = ceil(T / 2^l); ops/attention.hpp's hkt_level_len is this.
HKT_SHARED_HD constexpr int64_t attn_level_len(int64_t T, int64_t l) { return (T + (int64_t{1} << l) - 1) >> l; }

// Random tensors: element i of a draw that reserved counters from `first` uses
// Philox counter first + i (key: the generator's seed).
HKT_SHARED_HD uint64_t philox_counter(uint64_t first, int64_t i) { return first + static_cast<uint64_t>(i); }

// A uniform double in [0, 1) from one 32-bit Philox output.
HKT_SHARED_HD double unit_interval(uint32_t x) { return uint_to_unit(x) - 1.0 / 4294967296.0; }

}  // namespace hkt::rules
