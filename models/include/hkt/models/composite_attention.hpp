// The composite HKT attention reference, built from plain differentiable ops
// (the same formulas as HKTAttention with fused = false: combined_scores +
// masked_attention, models/src/attention.cpp); it forms the T x T scores. The
// fused kernels (hkt_attention, CPU and CUDA) are checked against it by the
// attention suites, and hkt-bench-attention (tools/bench_attention.cpp) times it.
// Runs on the device of v.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "hkt/ops/attention.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/view.hpp"

namespace hkt::nn {

// softmax(sum_l lambda_l Up_l(Q_l K_l^T * scale) + mask) V.
// q[l], k[l]: [B, H, T_l, dh]; v: [B, H, T, dh]; lam: [H, L]; valid: [B, T]
// (key padding, nonzero = real) or undefined. Causal: Up_l uses
// c_l(i) = floor((i + 1) / 2^l) - 1 and drops the missing terms, and j > i is
// masked. A row with every key masked gives 0.
inline Tensor composite_attention(const std::vector<Tensor>& q, const std::vector<Tensor>& k, const Tensor& v,
                                  const Tensor& lam, const Tensor& valid, bool causal, double scale) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const int64_t H = v.size(1), T = v.size(2);
  const Device dev = v.device();
  Tensor s_hier;
  for (size_t l = 0; l < q.size(); ++l) {
    Tensor s = matmul(q[l], transpose(k[l], -2, -1)) * scale;
    if (l > 0) {
      // Up_l as an index map over [T] and, causal, the [T, T] mask of missing terms.
      std::vector<int64_t> id(static_cast<size_t>(T)), miss(static_cast<size_t>(T));
      for (int64_t i = 0; i < T; ++i) {
        const int64_t c = causal ? ((i + 1) >> l) - 1 : (i >> l);
        id[static_cast<size_t>(i)] = std::max<int64_t>(c, 0);
        miss[static_cast<size_t>(i)] = c < 0;
      }
      const Tensor idx = from_vector(id, {T}, {DType::Int64, dev});
      s = index_select(index_select(s, 2, idx), 3, idx);
      if (causal) {
        const Tensor mf = to_dtype(gt(from_vector(miss, {T}, {DType::Int64, dev}), 0.0), DType::Float32);
        s = masked_fill(s, gt(reshape(mf, {T, 1}) + reshape(mf, {1, T}), 0.5), 0.0);
      }
    }
    const Tensor term = reshape(select(lam, 1, static_cast<int64_t>(l)), {1, H, 1, 1}) * s;
    s_hier = l == 0 ? term : s_hier + term;
  }
  if (valid.defined()) s_hier = masked_fill(s_hier, unsqueeze(unsqueeze(eq(valid, 0.0), 1), 1), -kInf);
  if (causal) {
    const Tensor i = arange(T, {DType::Int64, dev});
    s_hier = masked_fill(s_hier, gt(reshape(i, {1, T}), reshape(i, {T, 1})), -kInf);
  }
  return matmul(softmax(s_hier, -1), v);
}

}  // namespace hkt::nn
